"""The time-to-fit section of ``scsparse bench speed``: a default fit on real data, against SCVI's, with its quality.

On each data set the same cells are fitted four times, one after the other in one process:

- **SparseVAE, defaults** — ``SparseVAE(adata, seed=seed).train()``: it stops once the fit has settled
  (:class:`scsparse.train.SettledStopping`);
- **SparseVAE, exact zeros** — the same with exact zeros in ``W`` and the decoder on its active set
  (``train(exact_zeros=True)``);
- **SparseVAE, fixed epochs** — the same model trained for a fixed 400 epochs (``stop_when_settled=False``), the
  fit a settled stop must match;
- **SCVI, defaults** — ``scvi.model.SCVI(adata).train()``.

Each row gives the wall time of ``train()`` and the epochs trained, and beside them the fit's quality: the number of
active factors, the held-out negative log-likelihood per cell (importance-sampled, on the cells SparseVAE held
out, for all three fits), on Kang the smallest adjusted p of the Hallmark interferon sets over the active
factors (:func:`._cell_scores.interferon_enrichment`), and for the other two SparseVAE fits how well their programmes
agree with the default fit's, which has the same seed (Jaccard by factor, :func:`scsparse.generic.metrics.
programme_agreement`; ``bench stability`` measures the spread of seeds this is read against).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from scsparse.generic.metrics import ProgrammeSet, programme_agreement

from .._cell_scores import interferon_enrichment
from .._fits import scvi_tools_fit
from .._programme_fit import read_sparsevae
from .._real_data import INTERFERON_TERMS, quick_subsample, variable_genes

__all__ = [
    "TIME_TO_FIT_DATASETS",
    "dataset_tables",
    "fit_dataset",
    "time_to_fit_rows",
    "time_to_fit_summary",
    "time_to_fit_targets",
]

#: Data sets of the time-to-fit section: the embedded Kang PBMCs and PBMC 3k (its 2,000 most variable genes).
TIME_TO_FIT_DATASETS: tuple[str, ...] = ("kang", "pbmc3k")
#: Epochs of the fixed-length fit the settled stop is compared with.
FIXED_EPOCHS = 400
#: Units of the section's metrics (the others have none).
UNITS = {"seconds": "s", "heldout_nll": "nats/cell"}
#: Genes per factor and direction in the interferon enrichment.
N_TOP_GENES = 50


def fit_dataset(name: str, quick: bool, seed: int):
    """The AnnData of a time-to-fit data set (quick: 300 cells and the 200 most variable genes)."""
    from scsparse.data import kang_pbmc, pbmc3k

    if name == "kang":
        adata = kang_pbmc()
    elif name == "pbmc3k":
        adata = variable_genes(pbmc3k(), 2000)
    else:
        raise ValueError(f"Unknown time-to-fit data set {name!r}; choose from {TIME_TO_FIT_DATASETS}.")
    return quick_subsample(adata, 200, seed) if quick else adata


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _interferon_p(adata, model) -> float:
    """Smallest adjusted p of the Hallmark interferon sets over the model's active factors (nan: none tested)."""
    if not model.active_factors():
        return math.nan
    table = interferon_enrichment(adata, model, n_top=N_TOP_GENES, key="time_to_fit")
    ifn = table[table["term"].isin(INTERFERON_TERMS)] if len(table) else table
    return float(ifn["p_adj"].min()) if len(ifn) else math.nan


def _programmes(model, adata) -> ProgrammeSet:
    """A fit's programmes as the agreement measures read them."""
    return ProgrammeSet(list(read_sparsevae(model, adata, "SparseVAE").programmes.values()))


def _sparsevae_fit(
    adata, seed: int, max_epochs: int | None, settle: bool, held_out: np.ndarray | None, exact_zeros: bool = False
):
    from scsparse.model import SparseVAE

    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, seed=seed)
    seconds = _timed(
        lambda: model.train(
            max_epochs=max_epochs, stop_when_settled=settle, exact_zeros=exact_zeros, enable_progress_bar=False
        )
    )
    held_out = model.validation_indices if held_out is None else held_out
    stopping = model.history.get("stopping")
    values = {
        "seconds": seconds,
        "epochs": float(len(model.history["elbo_train"])),
        "settled": float(stopping["stopping"].iloc[-1] == "settled") if stopping is not None else math.nan,
        "active_factors": float(len(model.active_factors())),
        "heldout_nll": model.get_heldout_nll(indices=held_out),
    }
    return model, values, held_out


def _scvi_fit(adata, seed: int, held_out: np.ndarray, max_epochs: int | None) -> dict[str, float]:
    import scvi

    train = {"max_epochs": max_epochs, "enable_progress_bar": False}
    with scvi_tools_fit(scvi.model.SCVI, adata, seed, setup={"layer": "counts"}, train=train) as fit:
        # scvi-tools returns the mean log-likelihood; its negative is the held-out NLL
        nll = -float(fit.model.get_marginal_ll(indices=held_out, n_mc_samples=100))
    return {"seconds": fit.seconds, "epochs": float(len(fit.model.history["elbo_train"])), "heldout_nll": nll}


def time_to_fit_rows(
    *, datasets: Sequence[str] = TIME_TO_FIT_DATASETS, seed: int = 0, quick: bool = False, verbose: bool = True
) -> list[dict[str, Any]]:
    """Rows of the time-to-fit section (``section="time_to_fit"``) for each data set, one seed.

    Parameters
    ----------
    datasets
        Names from :data:`TIME_TO_FIT_DATASETS`.
    seed
        Seed of every fit (and of the split: the three fits hold out the same cells).
    quick
        300 cells and 200 genes, 20 epochs at most for every fit (a smoke test: the fit does not settle).
    verbose
        Print one line per fit.

    Returns
    -------
    list of dict
        One measurement per row, with the columns of ``results.csv``.
    """
    cap = 20 if quick else None
    fixed = 20 if quick else FIXED_EPOCHS
    rows: list[dict[str, Any]] = []
    for name in datasets:
        adata = fit_dataset(name, quick, seed)
        base = {"section": "time_to_fit", "n_genes": adata.n_vars, "n_cells": adata.n_obs, "batch_size": 128}
        settled, values, held_out = _sparsevae_fit(adata.copy(), seed, cap, True, None)
        fits = {"SparseVAE (defaults, stops when settled)": (settled, values)}
        zeros = _sparsevae_fit(adata.copy(), seed, cap, True, held_out, exact_zeros=True)
        fits["SparseVAE (exact zeros and active set, stops when settled)"] = zeros[:2]
        fixed_model, fixed_values, _ = _sparsevae_fit(adata.copy(), seed, fixed, False, held_out)
        fits["SparseVAE (fixed epochs, no stopping)"] = (fixed_model, fixed_values)
        reference = _programmes(settled, adata.copy())
        for model, vals in fits.values():
            if name == "kang":
                vals["interferon_p_adj"] = _interferon_p(adata.copy(), model)
            if model is not settled:
                agreement = programme_agreement(_programmes(model, adata.copy()), reference, adata.n_vars)
                vals["jaccard_vs_default"] = agreement["jaccard"]
        fits["scvi-tools SCVI (defaults)"] = (None, _scvi_fit(adata.copy(), seed, held_out, cap))
        for method, (_, vals) in fits.items():
            rows += [
                {**base, "dataset": name, "method": method, "metric": m, "value": v, "unit": UNITS.get(m, "")}
                for m, v in vals.items()
            ]
            if verbose:
                shown = ", ".join(f"{m} {v:.4g}" for m, v in vals.items())
                print(f"  time to fit, {name}: {method}: {shown}", flush=True)
    return rows


def time_to_fit_summary(df) -> list[str]:
    """Markdown lines of the time-to-fit section: one table per data set and the Kang targets."""
    sel = df[df["section"] == "time_to_fit"]
    if not len(sel):
        return []
    lines = [
        "",
        "## Time to a fit on real data (CPU)",
        "",
        "Each data set fitted four times in this process, one after the other: SparseVAE with its defaults "
        "(`train()` stops once the fit has settled), the same with exact zeros and the decoder on its active set "
        "(`train(exact_zeros=True)`), the same model for a fixed "
        f"{FIXED_EPOCHS} epochs, and SCVI with its defaults. Seconds are the wall time of `train()`; the held-out "
        "NLL (nats per cell, importance-sampled) is on the same held-out cells for all four; the interferon "
        "column is the smallest adjusted p of the Hallmark interferon alpha/gamma sets over the active factors "
        f"(top {N_TOP_GENES} genes per factor and direction); `jaccard_vs_default` is how well a fit's programmes "
        "agree with the default fit's, of the same seed (Jaccard by factor; read it against two seeds' agreement, "
        "which `bench stability` measures).",
    ]
    metrics = [
        "seconds", "epochs", "settled", "active_factors", "heldout_nll", "interferon_p_adj", "jaccard_vs_default"
    ]  # fmt: skip
    return lines + dataset_tables(sel, metrics, _cell)


def dataset_tables(sel, metrics: Sequence[str], cell: Callable[[str, float], str]) -> list[str]:
    """Markdown lines of one table per data set of a section's rows: a row per method, a column per metric of
    ``metrics`` the rows have (the mean over seeds, written by ``cell(metric, value)``).
    """
    from scsparse.utils import markdown_rows

    lines: list[str] = []
    for name, frame in sel.groupby("dataset", sort=False):
        table = frame.pivot_table(index="method", columns="metric", values="value", aggfunc="mean", sort=False)
        shown = [m for m in metrics if m in table.columns]
        header = f"{name} ({int(frame['n_cells'].iloc[0])} cells x {int(frame['n_genes'].iloc[0])} genes)"
        body = [[method, *(cell(m, table.loc[method, m]) for m in shown)] for method in table.index]
        lines += ["", f"### {header}", "", *markdown_rows(["method", *shown], body)]
    return lines


def time_to_fit_targets(df) -> list[tuple[bool, str]]:
    """The Kang targets: a settled default fit in under 5 minutes that matches the fixed-length fit."""
    sel = df[(df["section"] == "time_to_fit") & (df["dataset"] == "kang")]
    if not len(sel):
        return []

    def value(method: str, metric: str) -> float:
        v = sel[(sel["method"].str.startswith(method)) & (sel["metric"] == metric)]["value"]
        return float(v.mean()) if len(v) else math.nan

    auto, fixed = "SparseVAE (defaults", "SparseVAE (fixed epochs"
    secs, settled = value(auto, "seconds"), value(auto, "settled")
    k_auto, k_fixed = value(auto, "active_factors"), value(fixed, "active_factors")
    nll_auto, nll_fixed = value(auto, "heldout_nll"), value(fixed, "heldout_nll")
    ifn = value(auto, "interferon_p_adj")
    rel = abs(nll_auto - nll_fixed) / abs(nll_fixed)
    zeros, scvi_secs = value("SparseVAE (exact zeros", "seconds"), value("scvi-tools SCVI", "seconds")
    settled_text = "settled" if settled == 1.0 else "not settled"
    return [
        (settled == 1.0 and secs < 300, f"Kang with defaults settles in under 5 minutes: {secs:.0f} s, {settled_text}"),
        (abs(k_auto - k_fixed) <= 1, f"active factors within 1 of the fixed-length fit: {k_auto:.0f} vs {k_fixed:.0f}"),
        (rel <= 0.01, f"held-out NLL within 1% of the fixed-length fit: {nll_auto:.2f} vs {nll_fixed:.2f} ({rel:.2%})"),
        (ifn < 1e-10, f"interferon programme enriched at adj. p < 1e-10: {ifn:.2g}"),
        (
            zeros < scvi_secs,
            f"Kang with exact zeros and the active set faster than SCVI's default fit: {zeros:.0f} s against "
            f"{scvi_secs:.0f} s ({zeros / scvi_secs:.2f}x; with every entry {secs:.0f} s, {secs / scvi_secs:.2f}x)",
        ),
    ]


def _cell(metric: str, value: float) -> str:
    if value != value:
        return "-"
    if metric == "settled":
        return "yes" if value == 1.0 else "no"
    if metric in ("epochs", "active_factors"):
        return f"{value:.0f}"
    if metric == "interferon_p_adj":
        return f"{value:.2g}"
    if metric == "jaccard_vs_default":
        return f"{value:.2f}"
    return f"{value:.1f}"
