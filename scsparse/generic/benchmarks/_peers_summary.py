"""``summary.md`` and figures of ``scsparse bench peers``: tables per data set, winners, losses, targets."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._common import markdown_table
from ._peers_methods import DETERMINISTIC, READING
from ._peers_multistudy import MULTISTUDY_READING
from ._programme_fit import EQUAL_SIZES, FitBudget
from ._programme_scores import (
    DISENTANGLEMENT,
    EQUAL_SIZE_METRICS,
    HIGHER_IS_BETTER,
    LOWER_IS_BETTER,
    METRICS,
    SIGNIFICANCE,
    STABILITY,
)
from ._real_data import REAL_DATASETS
from ._report import NOT_ASSESSED_QUICK, new_figure, save_figure, summary_head, target_verdict

__all__ = ["peers_figure", "peers_summary", "peers_targets"]

SPARSEVAE = ("SparseVAE", "SparseVAE (restarts)", "SparseVAE (consensus)")
#: scsparse's models, against which the others are compared (the per-study SparseVAE fits are the multi-study
#: arm's baseline, a peer of MultiStudySparseVAE).
OURS = (*SPARSEVAE, "MultiStudySparseVAE")
#: Methods that combine several fits: compared with each other (scsparse's restarts and consensus with cNMF's
#: consensus of NMF replicates), not with single fits.
SEVERAL_FITS = ("SparseVAE (restarts)", "SparseVAE (consensus)", "cNMF")
#: Data sets with targets, and the accuracy margin SparseVAE must keep to the best method.
TARGET_DATASETS = ("kang", "pbmc3k")
ACCURACY_MARGIN = 0.02
#: Metrics drawn in ``peers_<data set>.png``.
FIGURE_METRICS = (
    "enriched_share", "markers_recovered", "best_fold", "median_genes", "redundancy", "accuracy",
    "transfer_accuracy", "stability", "batch_leakage", "seconds",
)  # fmt: skip
#: Metrics that are p-values: summarised over seeds by their geometric mean, shown in scientific notation.
P_VALUES = ("interferon_p", *(f"interferon_p_at{n}" for n in EQUAL_SIZES))
_SMALLEST_P = 1e-300
#: Cost metrics: summarised over seeds by their median (a fit slowed by another job beside it moves a mean, not a
#: median), shown with their range.
COSTS = ("seconds", "peak_mb")
_DIGITS = {"distinct_terms": 1, "factors_kept": 1, "programmes": 1, "median_genes": 1, "seconds": 0, "peak_mb": 0}
_DIGITS.update({f"distinct_terms_at{n}": 1 for n in EQUAL_SIZES})


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["status"] == "ok"]


def _geometric_mean(values: pd.Series) -> float:
    """Geometric mean of the finite values (p-values: the arithmetic mean is the largest one's)."""
    finite = values[np.isfinite(values)].clip(lower=_SMALLEST_P)
    return float(np.exp(np.log(finite).mean())) if len(finite) else math.nan


def _centre_and_range(values: pd.Series, centre, spec: str, sep: str) -> str:
    """A cell: ``centre`` of the finite values and, for several, their range, each formatted with ``spec``."""
    finite = values[np.isfinite(values)]
    if finite.empty:
        return "n/a"
    text = format(centre(finite), spec)
    return text + (f" ({finite.min():{spec}}{sep}{finite.max():{spec}})" if len(finite) > 1 else "")


def _format_p(values: pd.Series) -> str:
    """A p-value column's cell: the geometric mean over seeds and, for several seeds, their range."""
    return _centre_and_range(values, _geometric_mean, ".1e", " to ")


def _format_cost(values: pd.Series) -> str:
    """A cost column's cell: the median over seeds and, for several seeds, their range (whole numbers)."""
    return _centre_and_range(values, pd.Series.median, ".0f", "-")


def _means(df: pd.DataFrame) -> pd.DataFrame:
    """Method x metric means over seeds (runs that ran); geometric means of the p-values, medians of the costs."""
    grouped = _ok(df).groupby("method", sort=False)
    means = grouped[list(METRICS)].mean(numeric_only=True)
    for m in P_VALUES:
        means[m] = grouped[m].agg(lambda v: _geometric_mean(pd.to_numeric(v, errors="coerce")))
    for m in COSTS:
        means[m] = grouped[m].agg(lambda v: pd.to_numeric(v, errors="coerce").median())
    return means


def _spreads(df: pd.DataFrame) -> pd.DataFrame:
    """Method x metric standard deviations over seeds (0 for one seed and for the p-values, compared as they are)."""
    sds = _ok(df).groupby("method", sort=False)[list(METRICS)].std(ddof=1, numeric_only=True).fillna(0.0)
    for m in P_VALUES:
        sds[m] = 0.0
    return sds


def _tied(a: float, b: float, spread: float = 0.0) -> bool:
    """A tie: a difference inside the seeds' spread (the larger sd of the two methods), or equal up to the
    rounding of a mean over seeds (6/7 from two different sums of fractions).
    """
    return bool(np.isclose(a, b, rtol=1e-9, atol=0.0) or abs(a - b) <= spread)


def _better(a: float, b: float, *, higher: bool, spread: float = 0.0) -> bool:
    """``a`` better than ``b`` by more than the seeds' spread."""
    return (a > b if higher else a < b) and not _tied(a, b, spread)


def _pair_spread(sds: pd.DataFrame | None, metric: str, *methods: str) -> float:
    if sds is None or metric not in sds:
        return 0.0
    return float(max((sds.loc[m, metric] for m in methods if m in sds.index), default=0.0))


def _compared(methods, metric: str) -> list[str]:
    """The methods a metric compares: a deterministic method's stability (1 by construction) is not a result."""
    return [m for m in methods if not (metric in STABILITY and m in DETERMINISTIC)]


def _shown_metrics(df: pd.DataFrame, among: tuple[str, ...] = METRICS) -> list[str]:
    ok = _ok(df)
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


def _fmt(metric: str, value: float) -> str:
    if value != value:
        return "n/a"
    if metric in P_VALUES:
        return f"{value:.2g}"
    return f"{value:.{_DIGITS.get(metric, 3)}f}"


def _winners(means: pd.DataFrame, metrics: list[str], sds: pd.DataFrame | None = None) -> list[str]:
    """The best method(s) of each metric: every method within the seeds' spread of the best one."""
    lines = []
    for m in metrics:
        if m not in HIGHER_IS_BETTER | LOWER_IS_BETTER:
            continue
        col = means.loc[_compared(means.index, m), m].dropna()
        if col.empty:
            continue
        best = col.max() if m in HIGHER_IS_BETTER else col.min()
        top = col.idxmax() if m in HIGHER_IS_BETTER else col.idxmin()
        who = ", ".join(p for p in col.index if _tied(col[p], best, _pair_spread(sds, m, p, top)))
        sv = "; ".join(f"{s} {_fmt(m, means.loc[s, m])}" for s in OURS if s in means.index)
        lines.append(f"- **{m}** ({'higher' if m in HIGHER_IS_BETTER else 'lower'} is better): {who} "
                     f"({_fmt(m, best)}){'; ' + sv if sv else ''}")  # fmt: skip
    return lines


def _budget_groups(methods) -> list[tuple[str, list[str]]]:
    """The methods split by budget, so that each is compared like with like: single fits, and the methods that
    combine several fits (:data:`SEVERAL_FITS`).
    """
    groups = [
        ("single fits", [m for m in methods if m not in SEVERAL_FITS]),
        ("several fits", [m for m in methods if m in SEVERAL_FITS]),
    ]
    return [(name, members) for name, members in groups if members]


def _losses(means: pd.DataFrame, metrics: list[str], sds: pd.DataFrame | None = None) -> list[str]:
    """Metrics where a peer beats every scsparse model of its budget group (:func:`_budget_groups`) by more than
    the seeds' spread: single fits against single fits, restarts and consensus against cNMF's consensus.
    """
    lines = []
    for m in metrics:
        if m not in HIGHER_IS_BETTER | LOWER_IS_BETTER:
            continue
        sign = 1.0 if m in HIGHER_IS_BETTER else -1.0
        for group, members in _budget_groups(means.index):
            ours = [s for s in OURS if s in members and means.loc[s, m] == means.loc[s, m]]
            peers = [p for p in _compared(members, m) if p not in OURS and means.loc[p, m] == means.loc[p, m]]
            if not ours or not peers:
                continue
            best_ours = max(ours, key=lambda s: sign * means.loc[s, m])
            our_best = sign * means.loc[best_ours, m]
            beaten = [
                p
                for p in peers
                if _better(sign * means.loc[p, m], our_best, higher=True, spread=_pair_spread(sds, m, p, best_ours))
            ]
            if beaten:
                shown = ", ".join(f"{p} {_fmt(m, means.loc[p, m])}" for p in beaten)
                who = ours[0] if len(ours) == 1 else f"the better of {', '.join(ours)}"
                lines.append(f"- {m} ({group}): scsparse {_fmt(m, sign * our_best)} ({who}); ahead: {shown}")
    return lines


def _ahead(
    means: pd.DataFrame, ours: str, peers: list[str], metric: str, *, higher: bool, sds: pd.DataFrame | None = None
) -> bool:
    """``ours`` better than every peer with a value by more than the seeds' spread (``False`` when ``ours`` has
    none).
    """
    mine = means.loc[ours, metric]
    others = [p for p in peers if means.loc[p, metric] == means.loc[p, metric]]
    return bool(
        mine == mine
        and all(
            _better(mine, means.loc[p, metric], higher=higher, spread=_pair_spread(sds, metric, ours, p))
            for p in others
        )
    )


def _versus(means: pd.DataFrame, ours: str, peers: list[str], metric: str) -> str:
    theirs = ", ".join(f"{p} {_fmt(metric, means.loc[p, metric])}" for p in peers)
    return f"{ours} {_fmt(metric, means.loc[ours, metric])} vs {theirs}"


def peers_targets(df: pd.DataFrame, *, assessed: bool = True) -> list[tuple[str, str, str]]:
    """``(data set, target, verdict)`` of the targets on Kang and PBMC 3k, for each SparseVAE variant.

    SparseVAE must be ahead of every peer on programme size (``median_genes``), ``redundancy`` and the known
    programmes (Kang: the interferon response, by adjusted p among methods that recover it, and the cell types'
    markers; PBMC 3k: the markers), and within :data:`ACCURACY_MARGIN` of the best held-out accuracy.
    """
    out: list[tuple[str, str, str]] = []
    for name in TARGET_DATASETS:
        frame = df[df["dataset"] == name]
        if _ok(frame).empty:
            continue
        means, sds = _means(frame), _spreads(frame)
        peers = [m for m in means.index if m not in SPARSEVAE]
        for ours in (s for s in SPARSEVAE if s in means.index):
            checks = [
                (f"smallest programmes (median genes): {_versus(means, ours, peers, 'median_genes')}",
                 _ahead(means, ours, peers, "median_genes", higher=False, sds=sds)),
                (f"least redundant programmes: {_versus(means, ours, peers, 'redundancy')}",
                 _ahead(means, ours, peers, "redundancy", higher=False, sds=sds)),
            ]  # fmt: skip
            if name == "kang":
                ifn_ok = means.loc[ours, "interferon_recovered"] == 1.0 and _ahead(
                    means, ours, peers, "interferon_p", higher=False, sds=sds
                )
                checks.append(
                    (f"interferon programme, strongest adj. p: {_versus(means, ours, peers, 'interferon_p')}", ifn_ok)
                )
            markers = means.loc[ours, "markers_recovered"]
            if markers == markers:
                checks.append(
                    (f"cell-type marker programmes recovered (ties count): "
                     f"{_versus(means, ours, peers, 'markers_recovered')}",
                     all(not _better(means.loc[p, "markers_recovered"], markers, higher=True,
                                     spread=_pair_spread(sds, "markers_recovered", p, ours))
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


def peers_summary(
    df: pd.DataFrame,
    prov: Mapping[str, Any],
    budget: FitBudget,
    *,
    quick: bool,
    total_seconds: float,
    n_kept: int = 0,
) -> list[str]:
    """The lines of ``summary.md``; ``n_kept``: rows a resumed run kept from an earlier run into its folder."""
    from scsparse._text import markdown_rows

    reading = {**READING, **MULTISTUDY_READING}
    mode = "quick smoke run" if quick else "full run"
    if n_kept:
        mode += f"; resumed: {n_kept} of the {len(df)} rows were fitted by an earlier run into this folder"
    lines = summary_head(
        "# SparseVAE against its peers on real single-cell data", prov, total_seconds=total_seconds, mode=mode
    )
    fitting = pd.to_numeric(_ok(df)["seconds"], errors="coerce").sum()
    lines.insert(-1, f"- fitting time, all fits (the sum of their seconds): {fitting / 60:.1f} min")
    lines += [
        "## What ran",
        "",
        f"Every method on the same cells and genes, with at most K = {budget.n_factors} factors (DRVI (defaults) "
        "excepted: DRVI's own default number of latent dimensions), seeds "
        f"0..{int(df['seed'].max()) if len(df) else 0}, {budget.max_epochs} epochs for the neural methods "
        f"(SparseVAE stops earlier once its fit has settled), top {budget.n_top} genes per programme where a "
        f"method's programmes are the top of a weight vector, {budget.restarts} restarts for SparseVAE (restarts), "
        f"{budget.consensus_restarts} for SparseVAE (consensus) and {budget.cnmf_iterations} NMF replicates for "
        "cNMF. Batches (where a data set has them) go to the "
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
        ok = _ok(frame)
        if ok.empty:
            continue
        spec = REAL_DATASETS[name]
        metrics = _shown_metrics(frame)
        means, sds = _means(frame), _spreads(frame)
        lines += [
            "",
            f"## {spec.title}",
            "",
            f"{int(frame['n_cells'].iloc[0])} cells x {int(frame['n_genes'].iloc[0])} genes; gene sets: "
            f"{', '.join(spec.libraries) or 'none (Ensembl ids, no symbol table offline)'}; labels: "
            f"{spec.label_key or 'none'}; batches: {spec.batch_key or 'none'}. Mean ± sd over seeds; p-values: "
            "geometric mean over seeds and their range; seconds and peak_mb: median over seeds and their range.",
        ]
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
                    digits={m: _DIGITS.get(m, 3) for m in shown},
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
            *_winners(means, metrics, sds),
        ]
        losses = _losses(means, metrics, sds)
        lines += [
            "",
            "Where a peer is ahead of scsparse by more than the seeds' spread, like with like: single fits against "
            "single fits, SparseVAE's restarts and consensus against cNMF's consensus:",
            "",
        ]
        lines += losses or ["- nowhere"]
    targets = peers_targets(df, assessed=not quick)
    if targets:
        lines += ["", "## Targets (Kang and PBMC 3k)", ""]
        lines += markdown_rows(["data set", "target", "verdict"], [list(t) for t in targets])
    return lines


def peers_figure(df: pd.DataFrame, name: str, out_dir: Path) -> Path | None:
    """Bars (mean, sd over seeds) of the main metrics of one data set, one panel per metric."""
    ok = _ok(df)
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
