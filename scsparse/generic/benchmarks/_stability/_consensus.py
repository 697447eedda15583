"""Consensus fits read off single fits: a consensus of R seeds against the consensus of R other seeds.

A consensus of ``R`` restarts (:meth:`scsparse.model.SparseVAE.consensus`) fits ``R`` models, each exactly as a
single fit with its seed, and pools their programmes (:func:`scsparse.model.consensus_programmes`). So the single
fits ``bench stability`` has already made for a variant give its consensus programmes for free: the seeds are split
into two disjoint sets of ``R``, each set's programmes are pooled and grouped from the fits' ``p*`` and loadings, and
the two consensus fits are compared as two single fits are (:func:`scsparse.generic.metrics.programme_agreement`;
their kept programmes, genes with consensus ``p* > 0.5`` ranked by the members' mean ``|w|``; a multi-study fit
block by block). The refit that :meth:`~scsparse.model.SparseVAE.consensus` adds holds these supports fixed, so
its programmes are these.

Each kept programme is also set against the other consensus: its reproducibility (how many of its ``R`` restarts
contribute to it) beside its best Jaccard index with a programme the other consensus keeps. That answers what a
user of the consensus needs to know: is a programme every restart finds one another set of seeds would give again?
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from scsparse.generic.metrics import AGREEMENT_MEASURES, ProgrammeSet, block_jaccard, programme_agreement
from scsparse.utils import markdown_rows

from .._tables import markdown_table

__all__ = [
    "CONSENSUS_COLUMNS",
    "REPRODUCIBILITY_COLUMNS",
    "FitMask",
    "consensus_agreement",
    "consensus_lines",
    "consensus_set",
    "disjoint_splits",
]

#: One row per pair of disjoint consensus fits (``consensus.csv``).
CONSENSUS_COLUMNS: list[str] = [
    "dataset", "variant", "restarts", "draw", "seeds_a", "seeds_b", *AGREEMENT_MEASURES, "kept_a", "kept_b",
]  # fmt: skip
#: One row per kept programme (``consensus_programmes.csv``): its reproducibility and its best match in the other.
REPRODUCIBILITY_COLUMNS: list[str] = ["dataset", "variant", "restarts", "draw", "recovered_by", "best_jaccard"]


@dataclass
class FitMask:
    """What a consensus needs of one single fit.

    Attributes
    ----------
    pip
        Inclusion probabilities ``p*``, genes x factors (every factor, active or not).
    weights
        Loadings ``W``, genes x factors.
    factor_blocks
        The block of each factor (``"shared"`` or a study's name) for a multi-study fit; ``None`` for one block.
    """

    pip: np.ndarray
    weights: np.ndarray
    factor_blocks: list[str] | None = None

    def blocks(self) -> list[np.ndarray] | None:
        """The factor columns of each block, in the order the blocks first appear (``None``: one block)."""
        if self.factor_blocks is None:
            return None
        names = list(dict.fromkeys(self.factor_blocks))
        return [np.flatnonzero(np.asarray(self.factor_blocks) == name) for name in names]


def disjoint_splits(
    seeds: Sequence[int], restarts: int, max_draws: int, rng: np.random.Generator
) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Pairs of disjoint sets of ``restarts`` seeds: every pair, or ``max_draws`` of them drawn at random.

    Examples
    --------
    >>> disjoint_splits([0, 1, 2, 3], 2, 10, np.random.default_rng(0))
    [((0, 1), (2, 3)), ((0, 2), (1, 3)), ((0, 3), (1, 2))]
    """
    ordered = sorted(seeds)
    pairs = set()
    for first in itertools.combinations(ordered, restarts):
        rest = [s for s in ordered if s not in first]
        for second in itertools.combinations(rest, restarts):
            pairs.add(min((first, second), (second, first)))
    pairs = sorted(pairs)
    if len(pairs) > max_draws:
        pairs = [pairs[i] for i in sorted(rng.choice(len(pairs), max_draws, replace=False))]
    return pairs


def consensus_set(fits: Sequence[FitMask], min_share: float) -> tuple[ProgrammeSet, np.ndarray]:
    """The kept programmes of the fits' pooled consensus and how many restarts feed each (one fit: its own)."""
    from scsparse.model import consensus_programmes
    from scsparse.results import rank_genes

    if len(fits) == 1:  # a single fit read the same way: its active factors, each found by itself
        fit = fits[0]
        kept = np.flatnonzero((fit.pip > 0.5).any(axis=0))
        programmes = [rank_genes(fit.weights[:, k], fit.pip[:, k], 0.5) for k in kept]
        scopes = None if fit.factor_blocks is None else [fit.factor_blocks[k] for k in kept]
        weights = fit.weights[:, kept]
        return ProgrammeSet(programmes, weights, scopes=scopes, factor_scopes=scopes), np.ones(kept.size, dtype=int)
    blocks = fits[0].blocks()
    names = None if blocks is None else list(dict.fromkeys(fits[0].factor_blocks))
    result = consensus_programmes(
        [f.pip for f in fits], [f.weights for f in fits], blocks=blocks, block_names=names, min_share=min_share
    )
    kept_rows = result.table[result.table["kept"]]
    found = np.rint(kept_rows["reproducibility"].to_numpy(dtype=np.float64) * len(fits)).astype(int)
    programmes = [rank_genes(result.loadings[:, k], result.pip[:, k], 0.5) for k in range(result.n_programmes)]
    scopes = None if blocks is None else list(result.blocks)
    return ProgrammeSet(programmes, result.loadings, scopes=scopes, factor_scopes=scopes), found


def _best_jaccard(a: ProgrammeSet, b: ProgrammeSet, n_genes: int) -> np.ndarray:
    """For each programme of ``a``, its largest Jaccard index with a programme of ``b`` in the same block."""
    jac = block_jaccard(a, b, n_genes)
    return jac.max(axis=1) if jac.shape[1] else np.zeros(jac.shape[0])


def consensus_agreement(
    dataset: str,
    variant: str,
    fits: dict[int, FitMask],
    n_genes: int,
    *,
    max_draws: int = 60,
    min_share: float = 0.5,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Agreement of consensus fits of disjoint seeds, for every number of restarts the fits allow.

    ``restarts = 1`` compares the single fits themselves, read the same way (programmes by factor), so the rows
    show what a consensus adds.

    Parameters
    ----------
    dataset, variant
        Written into the rows.
    fits
        The variant's single fits, by seed (at least 4 for a consensus of 2 against 2).
    n_genes
        Number of genes.
    max_draws
        Pairs of disjoint seed sets per number of restarts (all pairs where there are fewer).
    min_share
        As in :meth:`scsparse.model.SparseVAE.consensus`.
    seed
        Seed of the draws.

    Returns
    -------
    tuple of pandas.DataFrame
        :data:`CONSENSUS_COLUMNS` (one row per pair of consensus fits) and :data:`REPRODUCIBILITY_COLUMNS` (one
        row per kept programme, both consensus fits of every pair).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> pip = np.zeros((30, 3))
    >>> pip[:10, 0] = pip[10:20, 1] = 1.0  # two programmes every fit finds
    >>> fits = {s: FitMask(pip, rng.normal(size=(30, 3))) for s in range(4)}
    >>> pairs, programmes = consensus_agreement("toy", "default", fits, 30)
    >>> pairs.groupby("restarts")["jaccard"].agg(["size", "mean"]).to_dict("index")
    {1: {'size': 6, 'mean': 1.0}, 2: {'size': 3, 'mean': 1.0}}
    >>> programmes.groupby("restarts")["recovered_by"].unique().to_dict()
    {1: array([1]), 2: array([2])}
    """
    rng = np.random.default_rng(seed)
    pair_rows, programme_rows = [], []
    for restarts in range(1, len(fits) // 2 + 1):
        for draw, seeds in enumerate(disjoint_splits(list(fits), restarts, max_draws, rng)):
            sets = [consensus_set([fits[s] for s in group], min_share) for group in seeds]
            measures = programme_agreement(sets[0][0], sets[1][0], n_genes)
            pair_rows.append(
                {
                    "dataset": dataset, "variant": variant, "restarts": restarts, "draw": draw,
                    "seeds_a": " ".join(map(str, seeds[0])), "seeds_b": " ".join(map(str, seeds[1])),
                    **{m: measures[m] for m in AGREEMENT_MEASURES},
                    "kept_a": len(sets[0][0].programmes), "kept_b": len(sets[1][0].programmes),
                }
            )  # fmt: skip
            for (mine, recovered), (other, _) in ((sets[0], sets[1]), (sets[1], sets[0])):
                for count, best in zip(recovered, _best_jaccard(mine, other, n_genes), strict=True):
                    programme_rows.append(
                        {
                            "dataset": dataset, "variant": variant, "restarts": restarts, "draw": draw,
                            "recovered_by": int(count), "best_jaccard": float(best),
                        }
                    )  # fmt: skip
    return (
        pd.DataFrame(pair_rows, columns=CONSENSUS_COLUMNS),
        pd.DataFrame(programme_rows, columns=REPRODUCIBILITY_COLUMNS),
    )


#: Columns of the table of what a kept programme is worth (:func:`consensus_lines`).
_WORTH_HEADER = (
    "variant", "restarts", "recovered by", "programmes", "best Jaccard (mean)", "share with a match >= 0.5",
)  # fmt: skip


def consensus_lines(pairs: pd.DataFrame, programmes: pd.DataFrame, labels: dict[str, str]) -> list[str]:
    """The summary's lines for one data set: consensus against consensus, and what a kept programme is worth.

    Parameters
    ----------
    pairs, programmes
        The data set's rows of :func:`consensus_agreement`.
    labels
        Column headers of the agreement measures.
    """
    if not len(pairs):
        return []
    table = markdown_table(pairs, ["variant", "restarts"], list(AGREEMENT_MEASURES), digits=2, labels=labels)
    kept = pairs.groupby(["variant", "restarts"], sort=False)[["kept_a", "kept_b"]]
    low, high = kept.min().min(axis=1), kept.max().max(axis=1)
    lines = [
        "Consensus fits read off the single fits above (`SparseVAE.consensus` fits each restart as a single fit with "
        "its seed): two disjoint sets of `restarts` seeds, each set's consensus (programmes at least half its "
        "restarts recover), compared as two fits are (kept programmes by factor; `restarts` 1: the single fits read "
        "the same way; mean ± sd over the pairs of sets):",
        "",
        table.replace("n seeds", "n pairs"),
        "",
        "Programmes kept per consensus: "
        + "; ".join(f"{v}, {r} restart{'s' if r > 1 else ''}: {low[v, r]}-{high[v, r]}" for v, r in low.index)
        + ".",
        "",
    ]
    if len(programmes):
        worth = (
            programmes.groupby(["variant", "restarts", "recovered_by"], sort=False)["best_jaccard"]
            .agg(programmes="size", best_jaccard="mean", matched=lambda x: float((x >= 0.5).mean()))
            .reset_index()
        )
        order = worth.sort_values(["variant", "restarts", "recovered_by"], ascending=[True, True, False])
        rows = (
            [r.variant, r.restarts, f"{r.recovered_by} of {r.restarts}", r.programmes, f"{r.best_jaccard:.2f}",
             f"{r.matched:.2f}"]
            for r in order.itertuples()
        )  # fmt: skip
        lines += [
            "Each kept programme, by how many of its consensus's restarts recover it, against its best match "
            "(Jaccard index) among the programmes the other consensus keeps:",
            "",
            *markdown_rows(_WORTH_HEADER, rows),
            "",
        ]
    return lines
