"""Programme size against the number of cells: whether SparseVAE's programmes stay sparse as the data grow.

The spike-and-slab prior on ``W`` is one term of the objective, the likelihood of every cell the rest; the more
cells, the smaller the gain in likelihood a gene needs to enter a programme. Whether programmes then grow because
the data reveal real small effects (right) or because the mask loses its sparsity (wrong for a programme tool) is
what this benchmark measures, on planted simulations with known supports
(:func:`scsparse.data.simulate_multistudy`, one study's worth of programmes: ``n_specific=0``), fitted as a user
fits (:func:`._fits.fit_sparsevae`: defaults, the settled stop), at growing numbers of cells:

- ``planted`` — each programme drives its own genes and nothing else: a programme that grows past its planted
  genes has lost sparsity;
- ``background`` — the same programmes plus a dense background of small effects of every programme on every gene
  (``background_sd``, :data:`PROGRAMME_SIZE_SETTINGS`): real signal a large enough data set can see, though not a
  programme anyone would read;
- ``rare`` — the same programmes plus one active in a common population (98% of the cells) and one in a rare
  population (``rare_share``, 2%): whether a programme of few cells survives the prior, which is weighed against
  at most ``max_prior_cells`` cells (``rare_*`` columns: the rare programme's pair).

and on real data (``chemistries``, :mod:`._real`): nested subsamples of the 10x PBMCs in three
chemistries, 500 cells to all 2,860, scored by what needs no truth (programme sizes by both readings, redundancy,
active factors, and the 10 strongest genes of each programme against the largest subsample's).

Each simulated fit is scored against the planted supports (:func:`support_scores`): the programmes' sizes, their
precision and recall (each planted programme paired one to one with an active factor on the Jaccard index), the
share of slab entries on genes no programme drives, and the precision of each factor's 10 strongest genes by
``|w|`` (a reading whose size does not grow with the number of cells). The same fit is also read by effect size
(:meth:`scsparse.results.FactorResponse.programmes`): the ``p* > 0.5`` genes whose expression changes at least
``min_effect``-fold in log2 (2-fold at 1) from the low to the high end of the factor, scored the same way
(``effect_*`` columns).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scsparse.model import DEFAULT_MAX_PRIOR_CELLS
from scsparse.results import match_pairs
from scsparse.utils import check_integer

from .._fits import fit_sparsevae, measured
from .._process import cpu_threads, quiet_training_logs
from .._report import (
    finish_run,
    make_output_dir,
    new_figure,
    provenance,
    run_options,
    save_figure,
    write_results,
    write_summary,
    wrote_line,
)
from .._settings import chosen_names
from ._real import REAL_SCENARIO, fit_subsample, load_subsampled_data, score_cores, subsample_sizes
from ._settings import EFFECT_COLUMNS, RARE_COLUMNS, REAL_COLUMNS, SCENARIOS, SCORE_COLUMNS, rare_cells
from ._summary import summary_lines

__all__ = [
    "PROGRAMME_SIZE_SETTINGS",
    "QUICK_PROGRAMME_SIZE_SETTINGS",
    "RESULT_COLUMNS",
    "SCENARIOS",
    "paired_programmes",
    "run_programme_size",
    "support_scores",
]


#: Settings of a full run: 200 genes, 5 programmes of 20 genes (2 shared by neighbours), K = 10.
PROGRAMME_SIZE_SETTINGS: dict[str, Any] = {
    "cells": (2_000, 10_000, 50_000, 100_000),
    "n_genes": 200,
    "n_programmes": 5,
    "genes_per_programme": 20,
    "overlap": 2,
    "background_sd": 0.1,
    "rare_share": 0.02,  # the rare population's share of the cells
    "n_latent": 10,
    "max_epochs": 400,
    "n_top": 10,
    "min_effect": 1.0,
    "response_cells": 1_000,
    "real_cells": (500, 1_000, 2_000, 0),  # 0: every cell of the real data set
    "n_latent_real": 20,
    "max_prior_cells": DEFAULT_MAX_PRIOR_CELLS,  # the model's default; None: the prior against every cell
}

#: Settings of ``quick=True``: a smoke run of the whole pipeline; its numbers are not read.
QUICK_PROGRAMME_SIZE_SETTINGS: dict[str, Any] = {
    **PROGRAMME_SIZE_SETTINGS,
    "cells": (300, 600),
    "n_genes": 60,
    "n_programmes": 3,
    "genes_per_programme": 8,
    "overlap": 1,
    "n_latent": 5,
    "max_epochs": 20,
    "real_cells": (150, 0),
    "n_latent_real": 5,
}

RESULT_COLUMNS: list[str] = [
    "scenario", "n_cells", "seed", "n_genes", *SCORE_COLUMNS, *EFFECT_COLUMNS, *RARE_COLUMNS, *REAL_COLUMNS, "epochs",
    "settled",
    "seconds", "peak_mb",
]  # fmt: skip


def paired_programmes(pip: np.ndarray, truth: np.ndarray) -> pd.DataFrame:
    """Pair each planted programme with an active factor (``p* > 0.5`` genes) one to one on the Jaccard index.

    The Hungarian assignment maximises the summed Jaccard index between the planted supports and the active
    factors' gene sets; a planted programme left without a factor (more programmes than active factors) gets
    none and scores 0.

    Parameters
    ----------
    pip
        Inclusion probabilities, genes x factors.
    truth
        Planted supports, genes x programmes (boolean).

    Returns
    -------
    pandas.DataFrame
        One row per planted programme (index: its column in ``truth``): ``factor`` (the paired factor's column in
        ``pip``, NaN when none), ``jaccard``, ``recall`` (share of the planted genes the factor holds) and
        ``precision`` (share of the factor's genes in the programme; NaN when unpaired).

    Examples
    --------
    >>> import numpy as np
    >>> truth = np.zeros((6, 2), bool); truth[:3, 0] = truth[3:, 1] = True
    >>> pip = np.zeros((6, 2)); pip[:4, 1] = 0.9
    >>> paired_programmes(pip, truth).round(2).to_dict("list")
    {'factor': [1.0, nan], 'jaccard': [0.75, 0.0], 'recall': [1.0, 0.0], 'precision': [0.75, nan]}
    """
    slab = np.asarray(pip) > 0.5
    truth = np.asarray(truth, dtype=bool)
    pairs = pd.DataFrame(
        {"factor": np.nan, "jaccard": 0.0, "recall": 0.0, "precision": np.nan}, index=range(truth.shape[1])
    )
    active = np.flatnonzero(slab.any(0))
    if not active.size:
        return pairs
    sizes = slab[:, active].sum(0)
    inter = truth.T.astype(float) @ slab[:, active].astype(float)  # planted x active
    jaccard = inter / np.maximum(truth.sum(0)[:, None] + sizes[None, :] - inter, 1)
    rows, cols = match_pairs(jaccard)
    pairs.loc[rows, "factor"] = active[cols].astype(float)
    pairs.loc[rows, "jaccard"] = jaccard[rows, cols]
    pairs.loc[rows, "recall"] = inter[rows, cols] / truth[:, rows].sum(0)
    pairs.loc[rows, "precision"] = inter[rows, cols] / sizes[cols]
    return pairs


def support_scores(pip: np.ndarray, loadings: np.ndarray, truth: np.ndarray, n_top: int = 10) -> dict[str, float]:
    """Score a fit's programmes (``p* > 0.5`` of each active factor) against planted supports.

    Each planted programme (a column of ``truth``) is paired one to one with an active factor on the Jaccard
    index of their gene sets (Hungarian assignment); a planted programme left without a factor scores 0.

    Parameters
    ----------
    pip
        Inclusion probabilities, genes x factors.
    loadings
        ``W``, genes x factors (ranks each factor's genes by ``|w|``).
    truth
        Planted supports, genes x programmes (boolean).
    n_top
        Strongest genes per factor for ``top_precision``.

    Returns
    -------
    dict
        ``n_active``; ``median_size`` and ``max_size`` (genes per active factor); ``precision`` (mean over the
        paired factors of the share of their genes in the planted programme), ``recall`` and ``jaccard`` (means
        over the planted programmes); ``slab_outside`` (share of the active factors' slab entries on genes that no
        programme drives); ``top_precision`` (mean over the paired factors of the share of their ``n_top``
        strongest genes by ``|w|`` in the planted programme).

    Examples
    --------
    >>> import numpy as np
    >>> truth = np.zeros((6, 2), bool); truth[:3, 0] = truth[3:, 1] = True
    >>> pip = np.zeros((6, 3)); pip[:4, 2] = 0.9; pip[3:, 0] = 0.9
    >>> s = support_scores(pip, pip, truth, n_top=2)
    >>> s["n_active"], s["precision"], s["recall"]
    (2.0, 0.875, 1.0)
    """
    slab = np.asarray(pip) > 0.5
    truth = np.asarray(truth, dtype=bool)
    active = np.flatnonzero(slab.any(0))
    sizes = slab[:, active].sum(0)
    scores = {
        "n_active": float(active.size),
        "median_size": float(np.median(sizes)) if sizes.size else 0.0,
        "max_size": float(sizes.max()) if sizes.size else 0.0,
        "precision": np.nan,
        "recall": 0.0,
        "jaccard": 0.0,
        "slab_outside": float(slab[~truth.any(1)][:, active].sum() / sizes.sum()) if sizes.sum() else np.nan,
        "top_precision": np.nan,
    }
    if not active.size:
        return scores
    pairs = paired_programmes(pip, truth)
    paired = pairs.dropna(subset=["factor"])
    top = [
        truth[np.argsort(-np.abs(np.asarray(loadings)[:, int(k)]), kind="stable")[:n_top], p].mean()
        for p, k in zip(paired.index, paired["factor"], strict=True)
    ]
    scores["precision"] = float(paired["precision"].mean())
    scores["recall"] = float(pairs["recall"].mean())
    scores["jaccard"] = float(pairs["jaccard"].mean())
    scores["top_precision"] = float(np.mean(top))
    return scores


def _simulate(settings: Mapping[str, Any], scenario: str, n_cells: int, seed: int):
    """The scenario's counts. The simulator's studies are two parts of one population: two halves without a
    programme of their own, or (``rare``) a common and a rare population, each with one programme of its own.
    """
    from scsparse.data import simulate_multistudy

    second = rare_cells(n_cells, settings["rare_share"]) if scenario == "rare" else n_cells - n_cells // 2
    return simulate_multistudy(
        n_studies=2,
        n_cells_per_study={"study0": n_cells - second, "study1": second},
        n_genes=settings["n_genes"],
        n_shared=settings["n_programmes"],
        n_specific=int(scenario == "rare"),
        genes_per_programme=settings["genes_per_programme"],
        overlap=settings["overlap"],
        background_sd=settings["background_sd"] if scenario == "background" else 0.0,
        seed=seed,
    )


def _max_prior_cells(value: int | str) -> int | None:
    """The model's ``max_prior_cells`` from the benchmark's option: a number of cells, or ``"all"`` for ``None``."""
    if value == "all":
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"max_prior_cells must be a positive whole number of cells or 'all' (the prior weighed against every "
            f"training cell), got {value!r}."
        )
    return value


def _fit_one(settings: Mapping[str, Any], scenario: str, n_cells: int, seed: int) -> dict[str, Any]:
    data = _simulate(settings, scenario, n_cells, seed)
    adata = data.to_anndata()
    with measured() as m:
        model = fit_sparsevae(
            adata, settings["n_latent"], settings["max_epochs"], seed, None, max_prior_cells=settings["max_prior_cells"]
        )
    pip = np.asarray(model.get_inclusion_probabilities(), dtype=np.float64)
    loadings = np.asarray(model.get_loadings(), dtype=np.float64)
    effect_pip = _effect_pip(model, pip, settings)
    truth = data.W_shared_support
    rare = dict.fromkeys(RARE_COLUMNS, np.nan)
    if scenario == "rare":  # the common population's programme, then the rare one's: the last planted programme
        truth = np.hstack([truth, data.W_specific_support["study0"], data.W_specific_support["study1"]])
        rare = _rare_scores(pip, effect_pip, truth)
    stopping = model.history.get("stopping")
    return {
        "scenario": scenario,
        "n_cells": n_cells,
        "seed": seed,
        "n_genes": adata.n_vars,
        **support_scores(pip, loadings, truth, settings["n_top"]),
        **_effect_scores(effect_pip, loadings, truth, settings),
        **rare,
        "epochs": float(len(model.history["elbo_train"])),
        "settled": float(stopping is not None and stopping["stopping"].iloc[-1] == "settled"),
        "seconds": m["seconds"],
        "peak_mb": m["peak_mb"],
    }


def _effect_pip(model, pip: np.ndarray, settings: Mapping[str, Any]) -> np.ndarray:
    """``pip`` of the effect-size reading: the ``p* > 0.5`` entries whose factor moves the gene enough, 0 elsewhere."""
    programmes = {}
    if (pip > 0.5).any():  # a fit without an active factor has nothing to traverse
        programmes = model.get_factor_response(n_cells=settings["response_cells"]).programmes(settings["min_effect"])
    genes = {g: j for j, g in enumerate(model.adata.var_names)}
    kept = np.zeros_like(pip, dtype=bool)
    for factor, names in programmes.items():
        kept[[genes[g] for g in names], model.factor_names.index(factor)] = True
    return np.where(kept, pip, 0.0)


def _effect_scores(effect_pip: np.ndarray, loadings: np.ndarray, truth: np.ndarray, settings: Mapping[str, Any]):
    """Scores of the effect-size reading (:func:`_effect_pip`)."""
    scores = support_scores(effect_pip, loadings, truth, settings["n_top"])
    return {f"effect_{name}": scores[name] for name in ("median_size", "precision", "recall")}


def _rare_scores(pip: np.ndarray, effect_pip: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """The last planted programme's (the rare population's) pair in both readings (:data:`RARE_COLUMNS`)."""
    last = paired_programmes(pip, truth).iloc[-1]
    scores = {f"rare_{name}": float(last[name]) for name in ("jaccard", "recall", "precision")}
    return {**scores, "rare_effect_recall": float(paired_programmes(effect_pip, truth).iloc[-1]["recall"])}


def _figure(df: pd.DataFrame, out_dir: Path) -> Path:
    from matplotlib.ticker import NullLocator

    fig = new_figure((9.0, 3.4))
    axes = fig.subplots(1, 3)
    for i, (scenario, part) in enumerate(df.groupby("scenario", sort=False)):
        colour = f"C{i}"  # a scenario's two readings share its colour
        means = part.groupby("n_cells")[["median_size", "precision", "top_precision"]].mean()
        for ax, column in zip(axes, means.columns, strict=True):
            if means[column].notna().any():  # the real scenario has no precision
                ax.plot(means.index, means[column], marker="o", color=colour, label=f"{scenario}, p* > 0.5")
        effect = part.groupby("n_cells")[["effect_median_size", "effect_precision"]].mean()
        for ax, column in zip(axes[:2], effect.columns, strict=True):
            if effect[column].notna().any():
                ax.plot(effect.index, effect[column], marker="s", ls="--", color=colour, label=f"{scenario}, by effect")
    sizes = sorted(df["n_cells"].unique())
    for ax, title in zip(axes, ("median programme (genes)", "precision", "top-10 precision"), strict=True):
        ax.set_xscale("log")
        ax.set_xticks(sizes, [f"{n:,}" for n in sizes], minor=False)
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("cells")
        ax.set_title(title)
    axes[1].set_ylim(0, 1.05)
    axes[2].set_ylim(0, 1.05)
    axes[0].legend(frameon=False)
    for ax in axes[1:]:
        ax.set_visible(bool(ax.lines))  # a run of the real scenario alone has no precision to draw
    return save_figure(fig, out_dir / "programme_size.png")


def run_programme_size(
    out: str | Path,
    *,
    seeds: int | None = None,
    quick: bool = False,
    max_epochs: int | None = None,
    methods: str | Sequence[str] | None = None,
    cells: Sequence[int] | None = None,
    max_prior_cells: int | str | None = None,
    n_threads: int | None = 1,
    verbose: bool = True,
) -> pd.DataFrame:
    """Fit SparseVAE to planted simulations and real subsamples of growing size, and score its programmes.

    Parameters
    ----------
    out
        Output folder: ``results.csv`` (one row per scenario, number of cells and seed, written after every fit),
        ``summary.md`` and ``programme_size.png``.
    seeds
        Seeds ``0 .. seeds - 1`` (data and fit) per scenario and size (default 2; quick: 1).
    quick
        A smoke run (:data:`QUICK_PROGRAMME_SIZE_SETTINGS`: 300 and 600 simulated cells, 60 genes, 20 epochs;
        150 and 300 cells of the chemistries' 300-cell, 300-gene quick subsample).
    max_epochs
        Epoch budget (default 400; a fit stops earlier once settled).
    methods
        Scenarios of :data:`SCENARIOS` (comma-separated or a list; default all of them).
    cells
        Numbers of cells of every chosen scenario (default: the simulations 2,000, 10,000, 50,000 and 100,000;
        the chemistries 500, 1,000, 2,000 and all 2,860, where 0 stands for every cell). On one CPU thread a fit
        of the planted scenario took about 70 s at 2,000 cells and 7 min at 10,000; the background scenario's fits
        settle later.
    max_prior_cells
        The models' ``max_prior_cells``: the most training cells the prior on ``W`` is weighed against; ``"all"``
        weighs it against every training cell (``max_prior_cells=None``). Default: the model's default.
    n_threads
        CPU threads for torch and the BLAS pools (``None``: the libraries' defaults).
    verbose
        Print one line per fit.

    Returns
    -------
    pandas.DataFrame
        One row per scenario, number of cells and seed (:data:`RESULT_COLUMNS`).

    Examples
    --------
    >>> from scsparse.generic.benchmarks import run
    >>> df = run("programme_size", out="bench_size", cells=[2000, 10000])  # doctest: +SKIP
    """
    seeds = (1 if quick else 2) if seeds is None else seeds
    check_integer("seeds", seeds)
    if max_epochs is not None:
        check_integer("max_epochs", max_epochs)
    settings = dict(QUICK_PROGRAMME_SIZE_SETTINGS if quick else PROGRAMME_SIZE_SETTINGS)
    if max_epochs is not None:
        settings["max_epochs"] = int(max_epochs)
    if max_prior_cells is not None:
        settings["max_prior_cells"] = _max_prior_cells(max_prior_cells)
    scenarios = chosen_names(methods, list(SCENARIOS), "scenario(s)")
    if cells is not None:
        sizes = [int(n) for n in cells]
        for n in sizes:
            check_integer("cells", n)
        settings["cells"] = settings["real_cells"] = tuple(sizes)
    real_data = None
    if REAL_SCENARIO in scenarios:  # the data, and sizes it can give, before any fit
        real_data = load_subsampled_data(quick)
        settings["real_cells"] = tuple(subsample_sizes(settings["real_cells"], real_data.n_obs))
    out_dir = make_output_dir(out)
    options = run_options(out_dir, seeds, quick, settings["max_epochs"], methods=scenarios, n_threads=n_threads,
                          config=settings)  # fmt: skip
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    real_sets: dict[tuple[int, int], Any] = {}  # (cells, seed) -> the real fit's programmes
    with cpu_threads(n_threads), quiet_training_logs():
        prov = provenance("programme_size", options)
        for scenario in scenarios:
            real = scenario == REAL_SCENARIO
            for n_cells in settings["real_cells" if real else "cells"]:
                for seed in range(seeds):
                    if real:
                        row, real_sets[n_cells, seed] = fit_subsample(settings, real_data, n_cells, seed)
                    else:
                        row = _fit_one(settings, scenario, n_cells, seed)
                    rows.append(row)
                    if real and n_cells == settings["real_cells"][-1]:
                        score_cores(rows, real_sets, seed, real_data.n_vars, settings["n_top"])
                    write_results(pd.DataFrame(rows, columns=RESULT_COLUMNS), out_dir, RESULT_COLUMNS)
                    if verbose:
                        precision = "" if real else f", precision {row['precision']:.2f}, recall {row['recall']:.2f}"
                        print(
                            f"[programme_size] {scenario} {n_cells} cells seed {seed}: {row['n_active']:.0f} active, "
                            f"median programme {row['median_size']:.0f} genes{precision}, {row['epochs']:.0f} epochs, "
                            f"{row['seconds']:.0f} s",
                            flush=True,
                        )
    df = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    seconds = time.perf_counter() - start
    write_summary(out_dir, summary_lines(df, prov, settings, quick, seconds))
    figure = _figure(df, out_dir)
    done = wrote_line("programme_size", ["results.csv", "summary.md", figure.name], out_dir=out_dir, seconds=seconds)
    return finish_run(df, out_dir, done, verbose=verbose)
