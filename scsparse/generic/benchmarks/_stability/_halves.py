"""Programmes found again on other cells: ``bench stability``'s reading on two disjoint halves of the cells.

Agreement over seeds on the same cells says whether the optimiser lands on the same programmes; it cannot say
whether another lab, with other cells of the same tissue, would find them, and a deterministic pipeline passes it
by construction. Here the cells of a data set are split at random into two disjoint halves (several draws), each
half is fitted with its own seeds, and fits of one half are compared with fits of the other by the same measures
(:func:`scsparse.generic.metrics.programme_agreement`): single fits (every seed of one half against every seed of
the other), the pooled consensus of ``R`` seeds of each half (:func:`scsparse.model.consensus_programmes` on the
fits' ``p*`` and ``W``, the programmes the refit holds fixed), and NMF and cNMF fitted to the same halves (their
programmes as ``bench peers`` reads them). Within-half pairs (two seeds on the same cells) are reported beside
them, so every seed agreement has its resampled counterpart.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from scsparse.generic.metrics import AGREEMENT_MEASURES, ProgrammeSet, programme_agreement
from scsparse.utils import markdown_rows

from .._tables import format_mean_sd
from ._consensus import FitMask, consensus_set

__all__ = ["HALVES_COLUMNS", "HALVES_PEERS", "halves_agreement", "halves_lines", "split_halves"]

#: One row per compared pair (``halves.csv``).
HALVES_COLUMNS: list[str] = [
    "dataset", "method", "restarts", "draw", "reading", "seeds_a", "seeds_b", *AGREEMENT_MEASURES,
]  # fmt: skip
#: The peers fitted to the same halves (``bench peers``' readings).
HALVES_PEERS: tuple[str, ...] = ("NMF (KL)", "cNMF")
#: Most pairs of disjoint seed sets (or pairs of seed sets across halves) drawn per number of restarts.
MAX_CONSENSUS_DRAWS = 10


def split_halves(adata: Any, draw: int) -> tuple[Any, Any]:
    """Two disjoint random halves of the cells (draw ``draw``), restricted to the genes with counts in both.

    Examples
    --------
    >>> import anndata as ad, numpy as np
    >>> data = ad.AnnData(np.ones((10, 3)), layers={"counts": np.ones((10, 3))})
    >>> a, b = split_halves(data, 0)
    >>> a.n_obs, b.n_obs, len(set(a.obs_names) & set(b.obs_names))
    (5, 5, 0)
    """
    order = np.random.default_rng(1_000 + int(draw)).permutation(adata.n_obs)
    first, second = np.sort(order[: adata.n_obs // 2]), np.sort(order[adata.n_obs // 2 :])
    counts = adata.layers["counts"]
    expressed = [np.asarray((counts[cells] != 0).sum(axis=0)).ravel() > 0 for cells in (first, second)]
    genes = expressed[0] & expressed[1]
    return adata[first][:, genes].copy(), adata[second][:, genes].copy()


def _rows(
    dataset: str, method: str, restarts: int, draw: int, reading: str, pairs: list[tuple], n_genes: int
) -> list[dict[str, Any]]:
    """One row per pair ``(seeds_a, seeds_b, programmes_a, programmes_b)``, scored over ``n_genes`` genes."""
    out = []
    for seeds_a, seeds_b, a, b in pairs:
        scores = programme_agreement(a, b, n_genes)
        out.append(
            {"dataset": dataset, "method": method, "restarts": restarts, "draw": draw, "reading": reading,
             "seeds_a": "-".join(map(str, seeds_a)), "seeds_b": "-".join(map(str, seeds_b)),
             **{m: scores[m] for m in AGREEMENT_MEASURES}}
        )  # fmt: skip
    return out


def _single_rows(dataset: str, method: str, draw: int, fits: list[dict[int, Any]], n_genes: int) -> list[dict]:
    """Rows of one method's single fits of the two halves: every pair of seeds within a half, every pair across."""
    within = [((s,), (t,), one[s], one[t]) for one in fits for s, t in itertools.combinations(sorted(one), 2)]
    across = [((s,), (t,), fits[0][s], fits[1][t]) for s in sorted(fits[0]) for t in sorted(fits[1])]
    return [
        *_rows(dataset, method, 1, draw, "seeds", within, n_genes),
        *_rows(dataset, method, 1, draw, "halves", across, n_genes),
    ]


def _seed_sets(seeds: Sequence[int], restarts: int, rng: np.random.Generator) -> list[tuple[int, ...]]:
    """Up to :data:`MAX_CONSENSUS_DRAWS` distinct sets of ``restarts`` seeds."""
    every = list(itertools.combinations(sorted(seeds), restarts))
    if len(every) > MAX_CONSENSUS_DRAWS:
        every = [every[i] for i in sorted(rng.choice(len(every), MAX_CONSENSUS_DRAWS, replace=False))]
    return every


def halves_agreement(
    dataset: str,
    adata: Any,
    *,
    seeds: int,
    draws: int,
    fit_half: Callable[[Any, str], dict[int, FitMask]],
    fit_peer_half: Callable[[str, Any, int], ProgrammeSet | None],
    peers: Sequence[str] = HALVES_PEERS,
    min_share: float = 0.5,
) -> pd.DataFrame:
    """Every reading of ``draws`` random halvings of ``adata``'s cells (:data:`HALVES_COLUMNS`).

    Parameters
    ----------
    dataset
        The data set's name (rows' ``dataset``).
    adata
        The data set (counts in ``layers["counts"]``).
    seeds
        Seeds ``0 .. seeds - 1`` fitted on each half.
    draws
        Random halvings.
    fit_half
        Fits SparseVAE with every seed to one half, ``fit_half(half, part)`` (``part`` names the half for storing
        its fits), and returns each seed's ``p*`` and ``W``.
    fit_peer_half
        Fits a peer to one half with one seed, ``fit_peer_half(method, half, seed)``, and returns its programmes
        (``None`` where the method cannot run).
    peers
        The peers to fit.
    min_share
        As in :meth:`scsparse.model.SparseVAE.consensus`.

    Returns
    -------
    pandas.DataFrame
        One row per pair: ``reading`` is ``"seeds"`` (two fits of one half with disjoint seeds) or ``"halves"`` (a
        fit of each half), ``restarts`` the consensus size (1: single fits). Consensus pairs of one half use
        disjoint seed sets; across halves, seed set ``i`` of one half is set against seed set ``n - 1 - i`` of the
        other.
    """
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    every_seed = list(range(seeds))
    for draw in range(draws):
        halves = split_halves(adata, draw)
        n_genes = halves[0].n_vars
        masks = [fit_half(half, f"halves/draw{draw}{side}") for half, side in zip(halves, "ab", strict=True)]
        singles = [{s: consensus_set([m[s]], min_share)[0] for s in every_seed} for m in masks]
        rows += _single_rows(dataset, "SparseVAE", draw, singles, n_genes)
        for restarts in range(2, seeds + 1):
            sets = _seed_sets(every_seed, restarts, rng)
            pooled = {
                (side, chosen): consensus_set([masks[side][s] for s in chosen], min_share)[0]
                for side in (0, 1)
                for chosen in sets
            }
            within = [
                (x, y, pooled[(side, x)], pooled[(side, y)])
                for side in (0, 1)
                for x, y in itertools.combinations(sets, 2)
                if not set(x) & set(y)
            ]
            across = [(x, y, pooled[(0, x)], pooled[(1, y)]) for x, y in zip(sets, sets[::-1], strict=True)]
            rows += _rows(dataset, "SparseVAE (consensus)", restarts, draw, "seeds", within, n_genes)
            rows += _rows(dataset, "SparseVAE (consensus)", restarts, draw, "halves", across, n_genes)
        for method in peers:
            fitted = [{s: fit_peer_half(method, half, s) for s in every_seed} for half in halves]
            if all(p is not None for one in fitted for p in one.values()):
                rows += _single_rows(dataset, method, draw, fitted, n_genes)
    return pd.DataFrame(rows, columns=HALVES_COLUMNS)


def halves_lines(halves: pd.DataFrame, dataset: str) -> list[str]:
    """The summary's table for one data set: agreement on the same cells beside agreement across halves."""
    rows = halves[halves["dataset"] == dataset]
    if not len(rows):
        return []
    header = ["method", "pairs (same / other)", "same cells: Jaccard", "other half: Jaccard",
              "same cells: top-10", "other half: top-10"]  # fmt: skip
    table = []
    for (method, restarts), group in rows.groupby(["method", "restarts"], sort=False):
        same, other = group[group["reading"] == "seeds"], group[group["reading"] == "halves"]
        table.append(
            [method if restarts == 1 else f"{method}, {restarts} restarts", f"{len(same)} / {len(other)}",
             format_mean_sd(same["jaccard"], 2), format_mean_sd(other["jaccard"], 2),
             format_mean_sd(same["top_overlap"], 2), format_mean_sd(other["top_overlap"], 2)]
        )  # fmt: skip
    return [
        "",
        f"**Resampled cells** ({rows['draw'].nunique()} random halving(s) of the cells; mean ± sd over the pairs): "
        "two fits on the same half with other seeds, against a fit on each half.",
        "",
        *markdown_rows(header, table),
        "",
    ]
