"""Datasets for scsparse: registry of public files, AnnData loaders and the embedded demo dataset.

- :func:`kang_pbmc` — embedded counts subset of Kang et al. (2018), no download needed;
- :func:`load` / :func:`kang2018`, :func:`zeisel_subset`, :func:`zeisel_full`, :func:`pbmc3k`,
  :func:`cellbench`, :func:`pbmc_3batch` — AnnData with raw integer counts in ``.layers["counts"]``;
- :func:`simulate_eq9` (:data:`EQ9_FEATURE_NAMES`), :func:`simulate_multistudy` — simulated data with known factors;
- :func:`fetch`, :func:`registry`, :func:`list_datasets`, :func:`data_dir` — the file registry and local cache
  (``SCSPARSE_DATA_DIR``; ``SCSPARSE_OFFLINE=1`` disables downloads).
"""

from ._embedded import kang_pbmc
from ._loaders import cellbench, kang2018, load, pbmc3k, pbmc_3batch, zeisel_full, zeisel_subset
from ._registry import (
    DataChecksumError,
    DataNotAvailableError,
    UnknownDatasetError,
    data_dir,
    fetch,
    list_datasets,
    registry,
)
from ._simulate import EQ9_FEATURE_NAMES, SyntheticData, simulate_eq9
from ._simulate_multistudy import MultiStudyData, simulate_multistudy

__all__ = [
    "EQ9_FEATURE_NAMES",
    "DataChecksumError",
    "DataNotAvailableError",
    "MultiStudyData",
    "SyntheticData",
    "UnknownDatasetError",
    "cellbench",
    "data_dir",
    "fetch",
    "kang2018",
    "kang_pbmc",
    "list_datasets",
    "load",
    "pbmc3k",
    "pbmc_3batch",
    "registry",
    "simulate_eq9",
    "simulate_multistudy",
    "zeisel_full",
    "zeisel_subset",
]
