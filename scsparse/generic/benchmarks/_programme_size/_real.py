"""Programme size against the number of cells on real data: nested subsamples of the PBMC chemistries.

Real data have no planted truth, so what is scored is what a reader sees: how many factors stay active, how large
the programmes are (``p* > 0.5`` and read by effect size, as for the simulations), how much they overlap each other
(redundancy), and whether their cores hold as cells are added: each subsample's programmes against those of the
largest subsample of the same seed, paired on the rank-biased overlap of their rankings, with the overlap of their
10 strongest genes (:func:`scsparse.generic.metrics.programme_agreement`). The subsamples of one seed are nested
(the first ``n`` cells of one random order), so a larger subsample holds every cell of a smaller one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from anndata import AnnData

from .._fits import fit_sparsevae, measured
from .._real_data import REAL_DATASETS, load_real_dataset

__all__ = ["REAL_SCENARIO", "fit_subsample", "load_subsampled_data", "score_cores", "subsample_sizes"]

#: The real scenario's name (a ``--methods`` choice of ``bench programme_size``) and its data set.
REAL_SCENARIO = "chemistries"
REAL_DATASET = "pbmc_3batch"


def load_subsampled_data(quick: bool) -> AnnData:
    """The chemistries' cells and genes (quick: 300 cells, 300 genes), as ``bench peers`` reads them."""
    return load_real_dataset(REAL_DATASET, quick=quick)


def subsample_sizes(requested: Sequence[int], n_available: int) -> list[int]:
    """The numbers of cells to fit: ``requested`` with 0 meaning every cell, sorted and without repeats.

    Raises
    ------
    ValueError
        When a requested number exceeds the cells the data set has.
    """
    sizes = sorted({n_available if n == 0 else int(n) for n in requested})
    too_many = [n for n in sizes if n > n_available]
    if too_many:
        raise ValueError(
            f"The {REAL_SCENARIO} scenario has {n_available:,} cells; cannot subsample {too_many[0]:,}. "
            f"Pass --cells with numbers up to {n_available:,} (0: every cell)."
        )
    return sizes


def _subsample(adata: AnnData, n_cells: int, seed: int) -> AnnData:
    """The first ``n_cells`` cells of the seed's random order (nested across sizes)."""
    order = np.random.default_rng(seed).permutation(adata.n_obs)
    return adata[np.sort(order[:n_cells])].copy()


def _factor_programmes(pip: np.ndarray, loadings: np.ndarray) -> list[np.ndarray]:
    """Each active factor's genes with ``p* > 0.5``, strongest ``|w|`` first."""
    programmes = []
    for k in range(pip.shape[1]):
        genes = np.flatnonzero(pip[:, k] > 0.5)
        if genes.size:
            programmes.append(genes[np.argsort(-np.abs(loadings[genes, k]), kind="stable")])
    return programmes


def fit_subsample(settings: Mapping[str, Any], adata: AnnData, n_cells: int, seed: int) -> tuple[dict[str, Any], Any]:
    """Fit SparseVAE to a subsample and score its programmes; returns the row and the programmes' ``ProgrammeSet``.

    The row holds the scores that need no truth (the others are ``nan``); ``core_overlap`` and ``core_rbo`` are
    filled by :func:`score_cores` once every size of the seed is fitted.
    """
    from scsparse.generic.metrics import ProgrammeSet, programme_redundancy

    sub = _subsample(adata, n_cells, seed)
    batch_key = REAL_DATASETS[REAL_DATASET].batch_key
    with measured() as m:
        model = fit_sparsevae(
            sub, settings["n_latent_real"], settings["max_epochs"], seed, batch_key,
            max_prior_cells=settings["max_prior_cells"],
        )  # fmt: skip
    pip = np.asarray(model.get_inclusion_probabilities(), dtype=np.float64)
    loadings = np.asarray(model.get_loadings(), dtype=np.float64)
    programmes = _factor_programmes(pip, loadings)
    sizes = [p.size for p in programmes]
    active = [k for k in range(pip.shape[1]) if (pip[:, k] > 0.5).any()]
    effect_sizes: list[int] = []
    if programmes:
        response = model.get_factor_response(n_cells=min(settings["response_cells"], sub.n_obs))
        effect_sizes = [len(genes) for genes in response.programmes(settings["min_effect"]).values()]
    stopping = model.history.get("stopping")
    row = {
        "scenario": REAL_SCENARIO,
        "n_cells": n_cells,
        "seed": seed,
        "n_genes": sub.n_vars,
        "n_active": float(len(active)),
        "median_size": float(np.median(sizes)) if sizes else 0.0,
        "max_size": float(max(sizes, default=0)),
        "redundancy": float(programme_redundancy(programmes, sub.n_vars).mean()) if sizes else np.nan,
        "effect_median_size": float(np.median(effect_sizes)) if effect_sizes else 0.0,
        "epochs": float(len(model.history["elbo_train"])),
        "settled": float(stopping is not None and stopping["stopping"].iloc[-1] == "settled"),
        "seconds": m["seconds"],
        "peak_mb": m["peak_mb"],
    }
    return row, ProgrammeSet(programmes, loadings[:, active])


def score_cores(
    rows: list[dict[str, Any]], sets: Mapping[tuple[int, int], Any], seed: int, n_genes: int, n_top: int
) -> None:
    """Fill ``core_overlap`` / ``core_rbo`` of the seed's real rows: each fit against the seed's largest fit.

    ``sets`` maps ``(n_cells, seed)`` to a fit's ``ProgrammeSet``; call once the seed's largest subsample is fitted.
    The largest fit would score 1 against itself and is left ``nan``.
    """
    from scsparse.generic.metrics import programme_agreement

    largest = max(n for n, s in sets if s == seed)
    for row in rows:
        if row["scenario"] != REAL_SCENARIO or row["seed"] != seed:
            continue
        if row["n_cells"] == largest:
            row["core_overlap"] = row["core_rbo"] = np.nan
            continue
        agreement = programme_agreement(sets[row["n_cells"], seed], sets[largest, seed], n_genes, n_top=n_top)
        row["core_overlap"], row["core_rbo"] = agreement["top_overlap"], agreement["rbo"]
