"""``summary.md`` and figures of ``scsparse bench peers``: tables per data set, winners, losses, targets."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scsparse.utils import markdown_rows

from .._programme_fit import EQUAL_SIZES, FitBudget
from .._programme_methods import DETERMINISTIC, READING
from .._programme_scores import (
    DISENTANGLEMENT,
    EQUAL_SIZE_METRICS,
    HIGHER_IS_BETTER,
    LOWER_IS_BETTER,
    METRICS,
    SIGNIFICANCE,
    STABILITY,
)
from .._real_data import REAL_DATASETS
from .._report import NOT_ASSESSED_QUICK, new_figure, save_figure, summary_head, target_verdict
from .._tables import markdown_table
from ._compare import (
    COSTS,
    DIGITS,
    OURS,
    P_VALUES,
    SPARSEVAE,
    ahead_of_all,
    better,
    fmt_cost,
    geometric_mean,
    in_short_rows,
    loss_lines,
    method_means,
    method_spreads,
    pair_spread,
    ran,
    versus,
    winner_lines,
)  # fmt: skip
from ._multistudy import MULTISTUDY_READING

__all__ = ["peers_figure", "peers_targets", "summary_lines"]

#: Data sets with targets, and the accuracy margin SparseVAE must keep to the best method.
TARGET_DATASETS = ("kang", "pbmc3k")
ACCURACY_MARGIN = 0.02
#: Metrics drawn in ``peers_<data set>.png``.
FIGURE_METRICS = (
    "enriched_share", "markers_recovered", "best_fold", "median_genes", "redundancy", "accuracy",
    "transfer_accuracy", "stability", "batch_leakage", "seconds",
)  # fmt: skip


def _centre_and_range(values: pd.Series, centre, write: Callable[[float], str], sep: str) -> str:
    """A cell: ``centre`` of the finite values and, for several, their range, each written by ``write``."""
    finite = values[np.isfinite(values)]
    if finite.empty:
        return "n/a"
    text = write(centre(finite))
    return text + (f" ({write(finite.min())}{sep}{write(finite.max())})" if len(finite) > 1 else "")


def _format_p(values: pd.Series) -> str:
    """A p-value column's cell: the geometric mean over seeds and, for several seeds, their range."""
    return _centre_and_range(values, geometric_mean, "{:.1e}".format, " to ")


def _format_cost(values: pd.Series) -> str:
    """A cost column's cell: the median over seeds and, for several seeds, their range (:func:`fmt_cost`)."""
    return _centre_and_range(values, pd.Series.median, fmt_cost, "-")


def _shown_metrics(df: pd.DataFrame, among: tuple[str, ...] = METRICS) -> list[str]:
    ok = ran(df)
    return [m for m in among if m in ok and pd.to_numeric(ok[m], errors="coerce").notna().any()]


#: The tables of a data set: the methods' own readings, DRVI's disentanglement scores, the equal-size reading.
_TABLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "",
        tuple(
            m for m in METRICS if m not in DISENTANGLEMENT and m not in EQUAL_SIZE_METRICS and m not in STABILITY[1:]
        ),
    ),
    (
        "Stability between seeds, by what moves (each seed's programmes against every other seed's, as "
        "`scsparse.generic.metrics.programme_agreement` measures them): the gene sets (`stability`, matched Jaccard "
        "index), the 10 strongest genes of programmes paired on their rankings (`stability_top10`) and the "
        "rank-biased overlap of those rankings (`stability_rbo`, p = 0.9). A deterministic method's 1 is no result:",
        STABILITY,
    ),
    (
        "Disentanglement against the processes: each cell type, and the condition's group as one process where the "
        "data set has one (DRVI's scores: one-to-one matching LMS, best factor MSAS, gap to the second best MSGS; "
        "of scaled mutual information SMI and same-process neighbours SPN):",
        DISENTANGLEMENT,
    ),
    (
        "Equal-size reading: every programme cut to the same number of genes (`_at<n>`) by its method's own ranking "
        "(SparseVAE: the genes with p* > 0.5 by |w|, then the other genes of the direction by p*), so that the "
        "metrics that depend on list size compare like with like:",
        EQUAL_SIZE_METRICS,
    ),
)


def _in_short(means: pd.DataFrame, sds: pd.DataFrame) -> list[str]:
    """The data set's "in short" tables: each scsparse model against the best peer of its budget, question by
    question, in the methods' own readings and with every programme cut to the same number of genes.
    """
    lines = []
    header = ["question", "own reading", *(f"{n} genes each" for n in EQUAL_SIZES)]
    for title, rows in in_short_rows(means, sds):
        lines += ["", f"In short, {title}: ahead, tie (inside the seeds' spread) or behind the best of them", ""]
        lines += markdown_rows(header, rows)
    return lines


def peers_targets(df: pd.DataFrame, *, assessed: bool = True) -> list[tuple[str, str, str]]:
    """``(data set, target, verdict)`` of the targets on Kang and PBMC 3k, for each SparseVAE variant.

    SparseVAE must be ahead of every peer on programme size (``median_genes``), ``redundancy`` and the known
    programmes (Kang: the interferon response, by adjusted p among methods that recover it, and the cell types'
    markers; PBMC 3k: the markers), and within :data:`ACCURACY_MARGIN` of the best held-out accuracy.
    """
    out: list[tuple[str, str, str]] = []
    for name in TARGET_DATASETS:
        frame = df[df["dataset"] == name]
        if ran(frame).empty:
            continue
        means, sds = method_means(frame), method_spreads(frame)
        peers = [m for m in means.index if m not in SPARSEVAE]
        for ours in (s for s in SPARSEVAE if s in means.index):
            checks = [
                (f"smallest programmes (median genes): {versus(means, ours, peers, 'median_genes')}",
                 ahead_of_all(means, ours, peers, "median_genes", higher=False, sds=sds)),
                (f"least redundant programmes: {versus(means, ours, peers, 'redundancy')}",
                 ahead_of_all(means, ours, peers, "redundancy", higher=False, sds=sds)),
            ]  # fmt: skip
            if name == "kang":
                ifn_ok = means.loc[ours, "interferon_recovered"] == 1.0 and ahead_of_all(
                    means, ours, peers, "interferon_p", higher=False, sds=sds
                )
                checks.append(
                    (f"interferon programme, strongest adj. p: {versus(means, ours, peers, 'interferon_p')}", ifn_ok)
                )
            markers = means.loc[ours, "markers_recovered"]
            if markers == markers:
                checks.append(
                    (f"cell-type marker programmes recovered (ties count): "
                     f"{versus(means, ours, peers, 'markers_recovered')}",
                     all(not better(means.loc[p, "markers_recovered"], markers, higher=True,
                                     spread=pair_spread(sds, "markers_recovered", p, ours))
                         for p in peers if means.loc[p, "markers_recovered"] == means.loc[p, "markers_recovered"]))
                )  # fmt: skip
            best_acc = means["accuracy"].max()
            acc = means.loc[ours, "accuracy"]
            checks.append(
                (f"accuracy within {ACCURACY_MARGIN} of the best ({best_acc:.3f}): {acc:.3f}",
                 bool(acc >= best_acc - ACCURACY_MARGIN))
            )  # fmt: skip
            for what, ok in checks:
                verdict = target_verdict(bool(ok), assessed=assessed, unassessed=NOT_ASSESSED_QUICK)
                out.append((name, f"{ours}: {what}", verdict))
    return out


def _several_fits_budget(df: pd.DataFrame, budget: FitBudget) -> str:
    """The fits behind each several-fit method that ran: ", 5 restarts for SparseVAE (consensus), ..."."""
    fits = {
        "SparseVAE (restarts)": f"{budget.restarts} restarts for SparseVAE (restarts)",
        "SparseVAE (consensus)": f"{budget.consensus_restarts} restarts for SparseVAE (consensus)",
        "cNMF": f"{budget.cnmf_iterations} NMF replicates for cNMF",
    }
    ran_methods = set(df["method"])
    return "".join(f", {text}" for method, text in fits.items() if method in ran_methods)


#: Reference times this far apart tell rows of different speeds; the workload varies by about 1.25x (0.029-0.036 s)
#: over 39 rows of two processes side by side on one machine (PBMC 3k and Kang), which is one speed.
_SPEEDS_APART = 1.5


def _cpu_speed_line(df: pd.DataFrame) -> str:
    """How fast the CPU was as each fit started (``ref_seconds``), and what to compare when the rows differ.

    Examples
    --------
    >>> _cpu_speed_line(pd.DataFrame({"ref_seconds": [0.05, 0.06]})).endswith("0.050-0.060 s, within 1.5x")
    True
    >>> "2.0x apart" in _cpu_speed_line(pd.DataFrame({"ref_seconds": [0.05, 0.1]}))
    True
    """
    ref = pd.to_numeric(df["ref_seconds"], errors="coerce").dropna()
    line = "- CPU speed as the fits started (`ref_seconds`: 20 products of 512 x 512 float32 matrices in torch): "
    if ref.empty:
        return line + "not measured (rows of an earlier version)"
    line += f"{ref.min():.3f}-{ref.max():.3f} s"
    if ref.max() < _SPEEDS_APART * ref.min():
        return line + f", within {_SPEEDS_APART}x"
    return line + (
        f", {ref.max() / ref.min():.1f}x apart: the rows were timed on other machines or beside other work, so "
        "compare seconds / ref_seconds across them"
    )


def summary_lines(
    df: pd.DataFrame,
    prov: Mapping[str, Any],
    budget: FitBudget,
    *,
    quick: bool,
    total_seconds: float,
    n_kept: int = 0,
) -> list[str]:
    """The lines of ``summary.md``; ``n_kept``: rows a resumed run kept from an earlier run into its folder."""
    reading = {**READING, **MULTISTUDY_READING}
    mode = "quick smoke run" if quick else "full run"
    if n_kept:
        mode += f"; resumed: {n_kept} of the {len(df)} rows were fitted by an earlier run into this folder"
    lines = summary_head(
        "# SparseVAE against its peers on real single-cell data", prov, total_seconds=total_seconds, mode=mode
    )
    fitted = ran(df)
    fitting = pd.to_numeric(fitted["seconds"], errors="coerce").sum()
    lines.insert(-1, f"- fitting time, all fits (the sum of their seconds): {fitting / 60:.1f} min")
    lines.insert(-1, _cpu_speed_line(fitted))
    lines += [
        "## What ran",
        "",
        f"Every method on the same cells and genes, with at most K = {budget.n_factors} factors (DRVI (defaults) "
        "excepted: DRVI's own default number of latent dimensions), seeds "
        f"0..{int(df['seed'].max()) if len(df) else 0}, {budget.max_epochs} epochs for the neural methods "
        f"(SparseVAE stops earlier once its fit has settled), top {budget.n_top} genes per programme where a "
        f"method's programmes are the top of a weight vector{_several_fits_budget(df, budget)}. Batches (where a "
        "data set has them) go to the "
        "methods that model them (SparseVAE, LDVAE, DRVI). On the data sets of the multi-study arm, "
        "MultiStudySparseVAE, MOFA+ with the studies as groups (at most "
        f"{budget.mofa_iterations} iterations) and one SparseVAE per study give every cell at most K factors. "
        "A programme is enriched for a gene set at "
        f"BH-adjusted p < {SIGNIFICANCE} within the programme. Metric definitions, what each rewards and its "
        "blind spot: docs, Benchmarks > Against the peers.",
        "",
        "How each method's programmes are read:",
        "",
        *[f"- {m}: {reading[m]}" for m in dict.fromkeys(df["method"]) if m in reading],
    ]
    skipped = df[df["status"] != "ok"].drop_duplicates(["dataset", "method", "status"])
    if len(skipped):
        lines += ["", "Not run or failed:", ""]
        lines += [f"- {r.dataset} / {r.method}: {r.status}" for r in skipped.itertuples()]
    for name, frame in df.groupby("dataset", sort=False):
        ok = ran(frame)
        if ok.empty:
            continue
        spec = REAL_DATASETS[name]
        metrics = _shown_metrics(frame)
        means, sds = method_means(frame), method_spreads(frame)
        lines += [
            "",
            f"## {spec.title}",
            "",
            f"{int(frame['n_cells'].iloc[0])} cells x {int(frame['n_genes'].iloc[0])} genes; gene sets: "
            f"{', '.join(spec.libraries) or 'none (Ensembl ids, no symbol table offline)'}; labels: "
            f"{spec.label_key or 'none'}; batches: {spec.batch_key or 'none'}. Mean ± sd over seeds; p-values: "
            "geometric mean over seeds and their range; seconds and peak_mb: median over seeds and their range.",
        ]
        lines += _in_short(means, sds)
        for caption, among in _TABLES:
            shown = _shown_metrics(frame, among)
            if not shown:
                continue
            lines += [""] + ([caption, ""] if caption else [])
            lines.append(
                markdown_table(
                    ok,
                    ["method"],
                    shown,
                    digits={m: DIGITS.get(m, 3) for m in shown},
                    labels={m: f"{m} (geometric mean; range)" for m in P_VALUES}
                    | {m: f"{m} (median; range)" for m in COSTS},
                    formats=dict.fromkeys(P_VALUES, _format_p) | dict.fromkeys(COSTS, _format_cost),
                )
            )
        lines += [
            "",
            "Best per metric (scsparse's values after the winner; methods within the seeds' spread (the larger sd "
            "of the two) of the best one tie with it; the stability of a deterministic method "
            f"({', '.join(sorted(DETERMINISTIC))}: 1 by construction) is not compared):",
            "",
            *winner_lines(means, metrics, sds),
        ]
        losses = loss_lines(means, metrics, sds)
        lines += [
            "",
            "Where a peer is ahead of scsparse by more than the seeds' spread, like with like: single fits against "
            "single fits, SparseVAE's restarts and consensus against cNMF's consensus:",
            "",
        ]
        if losses:
            lines += losses
        elif any(m in OURS for m in ok["method"].unique()):
            lines.append("- nowhere")
        else:  # a record fitted in parts: this data set's peers have run, its scsparse fits not yet
            lines.append("- no scsparse model has run on this data set, so there is nothing to compare")
    targets = peers_targets(df, assessed=not quick)
    if targets:
        lines += ["", "## Targets (Kang and PBMC 3k)", ""]
        lines += markdown_rows(["data set", "target", "verdict"], [list(t) for t in targets])
    return lines


def peers_figure(df: pd.DataFrame, name: str, out_dir: Path) -> Path | None:
    """Bars (mean, sd over seeds) of the main metrics of one data set, one panel per metric."""
    ok = ran(df)
    metrics = [m for m in FIGURE_METRICS if pd.to_numeric(ok[m], errors="coerce").notna().any()]
    if ok.empty or not metrics:
        return None
    methods = list(dict.fromkeys(ok["method"]))
    n_cols = 3
    n_rows = math.ceil(len(metrics) / n_cols)
    fig = new_figure((4.2 * n_cols, 2.8 * n_rows))
    axes = fig.subplots(n_rows, n_cols, squeeze=False).ravel()
    colours = ["#1b6ca8" if m in OURS else "#9a9a9a" for m in methods]
    for ax, metric in zip(axes, metrics, strict=False):
        grouped = ok.groupby("method", sort=False)[metric]
        mean = grouped.mean().reindex(methods)
        sd = grouped.std(ddof=1).reindex(methods).fillna(0.0)
        ax.bar(range(len(methods)), mean.to_numpy(), yerr=sd.to_numpy(), color=colours, capsize=2)
        ax.set_xticks(range(len(methods)), methods, rotation=40, ha="right", fontsize=7)
        arrow = (
            " (higher better)" if metric in HIGHER_IS_BETTER else " (lower better)" if metric in LOWER_IS_BETTER else ""
        )
        ax.set_title(metric + arrow, fontsize=9)
    for ax in axes[len(metrics) :]:
        ax.set_visible(False)
    fig.suptitle(REAL_DATASETS[name].title, fontsize=10)
    return save_figure(fig, out_dir / f"peers_{name}.png")
