"""Loaders of the non-single-cell data sets of the papers' benchmarks (ratings, text, images, motion capture).

Every loader reads the registry's files through :func:`scsparse.data.fetch` (offline cache first, verified
by sha256) and returns plain numpy / pandas objects; the benchmarks in :mod:`scsparse.generic.benchmarks`
build on them, and split their rows with :func:`split_rows`.
"""

from __future__ import annotations

from ._images import fashion_mnist, olshausen_images, sample_patches, smiley
from ._mocap import CMU07_TRIALS, AsfSkeleton, MocapData, load_cmu_mocap, parse_amc, parse_asf
from ._movielens import (
    DEFAULT_N_MOVIES,
    MOVIELENS_DATASETS,
    MovieLensData,
    binarise_ratings,
    describe_movielens,
    load_movielens,
    read_movielens,
    subsample_users,
)
from ._splits import TEST_FRACTION, eval_subset, split_rows
from ._text import TextCorpus, read_abstracts, read_abstracts_jsonl, read_peerread_dir, text_corpus, vectorize_abstracts

__all__: list[str] = []
__all__ += ["CMU07_TRIALS", "AsfSkeleton", "MocapData", "load_cmu_mocap", "parse_amc", "parse_asf"]
__all__ += ["fashion_mnist", "olshausen_images", "sample_patches", "smiley"]
__all__ += [
    "DEFAULT_N_MOVIES",
    "MOVIELENS_DATASETS",
    "MovieLensData",
    "binarise_ratings",
    "describe_movielens",
    "load_movielens",
    "read_movielens",
    "subsample_users",
]
__all__ += ["TEST_FRACTION", "eval_subset", "split_rows"]
__all__ += [
    "TextCorpus",
    "read_abstracts",
    "read_abstracts_jsonl",
    "read_peerread_dir",
    "text_corpus",
    "vectorize_abstracts",
]
