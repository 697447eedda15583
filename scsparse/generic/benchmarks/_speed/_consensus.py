"""The consensus section of ``scsparse bench speed``: what a consensus fit costs, per restart and against one fit.

On each chosen data set (the time-to-fit data sets, Kang by default) the same cells are fitted, one after the
other in one process:

- **R = 1** — a default single fit, ``SparseVAE(adata, seed=seed).train()``;
- **R = 5, 20** — ``SparseVAE.consensus(adata, n_restarts=R, seed=seed)``: R default restarts with seeds
  ``seed ... seed + R - 1``, the pooling of their programmes and the refit on the kept ones.

Each row gives the wall time, the time per restart (the refit's share included), the ratio to the single fit,
the restarts' median epochs, the refit's epochs and the programmes kept. The restarts run one after another, so a
consensus costs about R single fits and a refit; the target of the sparse-compute issue is R = 20 within 5 single
fits. The section is not part of a default run (it takes about 25 single fits): name it in ``--sections``.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._time_to_fit import dataset_tables, fit_dataset

__all__ = [
    "CONSENSUS_RESTARTS",
    "CONSENSUS_TARGET",
    "consensus_rows",
    "consensus_summary",
    "consensus_targets",
]

#: Numbers of restarts of the section (1: a single default fit, no consensus).
CONSENSUS_RESTARTS: tuple[int, ...] = (1, 5, 20)
#: Quick mode's numbers of restarts.
QUICK_RESTARTS: tuple[int, ...] = (1, 2)
#: Quick mode's epochs per fit: enough for the restarts of 200 Kang cells to have programmes to pool.
QUICK_EPOCHS = 60
#: Target: a consensus of the most restarts costs at most this many single fits.
CONSENSUS_TARGET = 5.0
_SINGLE = "SparseVAE (defaults), R = 1"


def _method(n_restarts: int) -> str:
    return _SINGLE if n_restarts == 1 else f"SparseVAE.consensus, R = {n_restarts}"


def _fit(adata, n_restarts: int, seed: int, max_epochs: int | None) -> dict[str, float]:
    """Fit R = ``n_restarts`` (1: one default fit) and return its costs."""
    from scsparse.model import SparseVAE
    from scsparse.train import FitNotSettledWarning

    SparseVAE.setup_anndata(adata, layer="counts")
    train = {"max_epochs": max_epochs, "enable_progress_bar": False}
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitNotSettledWarning)
        if n_restarts == 1:
            model = SparseVAE(adata, seed=seed)
            model.train(**train)
            restart_epochs = [len(model.history["elbo_train"])]
        else:
            model = SparseVAE.consensus(adata, n_restarts, seed=seed, train_kwargs=train)
            restart_epochs = model.restarts_["epochs"].tolist()
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "seconds_per_restart": seconds / n_restarts,
        "restart_epochs": float(np.median(restart_epochs)),
        "refit_epochs": math.nan if n_restarts == 1 else float(len(model.history["elbo_train"])),
        "programmes": float(len(model.active_factors())),
    }


def consensus_rows(
    *,
    datasets: Sequence[str],
    seed: int = 0,
    quick: bool = False,
    restarts: Sequence[int] | None = None,
    verbose: bool = True,
) -> list[dict[str, Any]]:
    """Rows of the consensus section (``section="consensus"``) for each data set, one seed.

    Parameters
    ----------
    datasets
        Names from :data:`._time_to_fit.TIME_TO_FIT_DATASETS`.
    seed
        Seed of the single fit and first seed of each consensus.
    quick
        300 cells and 200 genes, :data:`QUICK_EPOCHS` epochs at most for every fit, R = 1 and 2 (a smoke test).
    restarts
        Numbers of restarts (default :data:`CONSENSUS_RESTARTS`; quick :data:`QUICK_RESTARTS`); 1 is the single fit
        the others are divided by, and always runs.
    verbose
        Print one line per fit.

    Returns
    -------
    list of dict
        One measurement per row, with the columns of ``results.csv`` (``ratio_to_single``: seconds over the single
        fit's).
    """
    chosen = sorted({1, *(restarts or (QUICK_RESTARTS if quick else CONSENSUS_RESTARTS))})
    cap = QUICK_EPOCHS if quick else None
    rows: list[dict[str, Any]] = []
    for name in datasets:
        adata = fit_dataset(name, quick, seed)
        base = {"section": "consensus", "dataset": name, "n_genes": adata.n_vars, "n_cells": adata.n_obs}
        single = math.nan
        for r in chosen:
            values = _fit(adata.copy(), r, seed, cap)
            single = values["seconds"] if r == 1 else single
            values["ratio_to_single"] = values["seconds"] / single
            rows += [
                {**base, "batch_size": 128, "method": _method(r), "metric": m, "value": v, "unit": _unit(m)}
                for m, v in values.items()
            ]
            if verbose:
                shown = ", ".join(f"{m} {v:.4g}" for m, v in values.items())
                print(f"  consensus, {name}: {_method(r)}: {shown}", flush=True)
    return rows


def _unit(metric: str) -> str:
    return "s" if metric.startswith("seconds") else ""


def consensus_summary(df) -> list[str]:
    """Markdown lines of the consensus section: one table per data set."""
    sel = df[df["section"] == "consensus"]
    if not len(sel):
        return []
    lines = [
        "",
        "## What a consensus costs",
        "",
        "Each data set fitted once with the defaults (R = 1) and as `SparseVAE.consensus` of R default restarts "
        "(seeds from the run's seed on, pooled and refitted), one after another in this process. Seconds are "
        "wall time, the refit included; per restart is seconds over R; the ratio is to the single fit.",
    ]
    metrics = ["seconds", "seconds_per_restart", "ratio_to_single", "restart_epochs", "refit_epochs", "programmes"]
    return lines + dataset_tables(sel, metrics, _cell)


def consensus_targets(df) -> list[tuple[bool, str]]:
    """The target: a consensus of the most restarts run costs at most :data:`CONSENSUS_TARGET` single fits."""
    sel = df[(df["section"] == "consensus") & (df["metric"] == "ratio_to_single")]
    out = []
    for name, frame in sel.groupby("dataset", sort=False):
        counts = frame["method"].str.extract(r"R = (\d+)")[0].astype(int)
        top = int(counts.max())
        if top == 1:
            continue
        ratio = float(frame.loc[counts == top, "value"].mean())
        out.append(
            (
                ratio <= CONSENSUS_TARGET,
                f"{name}: a consensus of {top} restarts costs <= {CONSENSUS_TARGET:g} single default fits: "
                f"{ratio:.1f}x",
            )
        )
    return out


def _cell(metric: str, value: float) -> str:
    if value != value:
        return "-"
    if metric in ("restart_epochs", "refit_epochs", "programmes"):
        return f"{value:.0f}"
    if metric == "ratio_to_single":
        return f"{value:.2f}x"
    return f"{value:.1f}"
