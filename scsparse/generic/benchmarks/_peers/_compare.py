"""How ``scsparse bench peers`` compares methods: means and spreads over seeds, ties, budgets, who is ahead.

A difference inside the seeds' spread (the larger standard deviation of the two methods) is a tie; p-values are
compared on the log10 scale, by the standard deviation of their log10 over seeds (their geometric mean is the mean
of that scale). Methods are
compared like with like (:func:`budget_groups`): single fits with single fits, and the methods that combine several
fits (SparseVAE's restarts and consensus, cNMF's consensus of NMF replicates) with each other. A deterministic
method's stability (1 by construction) is not compared.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pandas as pd

from .._programme_fit import EQUAL_SIZES
from .._programme_methods import DETERMINISTIC
from .._programme_scores import HIGHER_IS_BETTER, LOWER_IS_BETTER, METRICS, SIZE_DEPENDENT, STABILITY

__all__ = [
    "COSTS", "DIGITS", "IN_SHORT", "OURS", "P_VALUES", "SEVERAL_FITS", "SPARSEVAE", "ahead_of_all", "better",
    "budget_groups", "compared", "fmt_apart", "fmt_cost", "fmt_value", "geometric_mean", "in_short_rows", "loss_lines",
    "method_means", "method_spreads", "on_scale", "pair_spread", "ran", "tied", "verdict", "versus", "winner_lines",
]  # fmt: skip

SPARSEVAE = ("SparseVAE", "SparseVAE (restarts)", "SparseVAE (consensus)")
#: scsparse's models, against which the others are compared (the per-study SparseVAE fits are the multi-study
#: arm's baseline, a peer of MultiStudySparseVAE).
OURS = (*SPARSEVAE, "MultiStudySparseVAE")
#: Methods that combine several fits: compared with each other (scsparse's restarts and consensus with cNMF's
#: consensus of NMF replicates), not with single fits.
SEVERAL_FITS = ("SparseVAE (restarts)", "SparseVAE (consensus)", "cNMF")
#: Metrics that are p-values: summarised over seeds by their geometric mean, shown in scientific notation, and
#: compared on the log10 scale with the seeds' spread of their log10 (:func:`method_spreads`, :func:`on_scale`).
P_VALUES = ("interferon_p", *(f"interferon_p_at{n}" for n in EQUAL_SIZES))
_SMALLEST_P = 1e-300
#: Cost metrics: summarised over seeds by their median (a fit slowed by another job beside it moves a mean, not a
#: median), shown with their range.
COSTS = ("seconds", "peak_mb")
DIGITS = {"distinct_terms": 1, "factors_kept": 1, "programmes": 1, "median_genes": 1}
DIGITS.update({f"distinct_terms_at{n}": 1 for n in EQUAL_SIZES})
_SIZED = frozenset(SIZE_DEPENDENT)


def ran(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of the fits that ran (``status`` "ok")."""
    return df[df["status"] == "ok"]


def geometric_mean(values: pd.Series) -> float:
    """Geometric mean of the finite values (p-values: the arithmetic mean is the largest one's)."""
    finite = values[np.isfinite(values)].clip(lower=_SMALLEST_P)
    return float(np.exp(np.log(finite).mean())) if len(finite) else math.nan


def method_means(df: pd.DataFrame) -> pd.DataFrame:
    """Method x metric means over seeds (runs that ran); geometric means of the p-values, medians of the costs."""
    grouped = ran(df).groupby("method", sort=False)
    means = grouped[list(METRICS)].mean(numeric_only=True)
    for m in P_VALUES:
        means[m] = grouped[m].agg(lambda v: geometric_mean(pd.to_numeric(v, errors="coerce")))
    for m in COSTS:
        means[m] = grouped[m].agg(lambda v: pd.to_numeric(v, errors="coerce").median())
    return means


def _log10_p(values: pd.Series) -> pd.Series:
    """log10 of the finite p-values, clipped as :func:`geometric_mean` clips them (NaN where not finite)."""
    values = pd.to_numeric(values, errors="coerce")
    return np.log10(values.where(np.isfinite(values)).clip(lower=_SMALLEST_P))


def method_spreads(df: pd.DataFrame) -> pd.DataFrame:
    """Method x metric standard deviations over seeds (0 for one seed); for the p-values, the standard deviation
    of their log10, the scale :func:`on_scale` compares them on.
    """
    rows = ran(df)
    sds = rows.groupby("method", sort=False)[list(METRICS)].std(ddof=1, numeric_only=True)
    for m in P_VALUES:
        sds[m] = _log10_p(rows[m]).groupby(rows["method"], sort=False).std(ddof=1)
    return sds.fillna(0.0)


def on_scale(metric: str | None, value: float) -> float:
    """``value`` on the scale ``metric`` is compared on: log10 for a p-value (clipped at 1e-300), as it is for
    every other metric.

    Examples
    --------
    >>> on_scale("interferon_p", 1e-14), on_scale("redundancy", 0.25)
    (-14.0, 0.25)
    """
    if metric in P_VALUES:
        return math.log10(max(value, _SMALLEST_P))
    return value


def tied(a: float, b: float, spread: float = 0.0, *, metric: str | None = None) -> bool:
    """A tie: a difference inside the seeds' spread (the larger sd of the two methods), or equal up to the
    rounding of a mean over seeds (6/7 from two different sums of fractions). For a p-value ``metric`` the
    difference is that of the log10s, and ``spread`` the sd of the log10 (:func:`method_spreads`).

    Examples
    --------
    >>> tied(1.3e-14, 6.3e-14, 1.34, metric="interferon_p")  # 0.69 orders of magnitude apart, seeds' sd 1.34
    True
    >>> tied(1.3e-14, 6.3e-14, 0.0, metric="interferon_p")
    False
    """
    a, b = on_scale(metric, a), on_scale(metric, b)
    return bool(np.isclose(a, b, rtol=1e-9, atol=0.0) or abs(a - b) <= spread)


def better(a: float, b: float, *, higher: bool, spread: float = 0.0, metric: str | None = None) -> bool:
    """``a`` better than ``b`` by more than the seeds' spread (on ``metric``'s scale, :func:`tied`)."""
    return (a > b if higher else a < b) and not tied(a, b, spread, metric=metric)


def pair_spread(sds: pd.DataFrame | None, metric: str, *methods: str) -> float:
    if sds is None or metric not in sds:
        return 0.0
    return float(max((sds.loc[m, metric] for m in methods if m in sds.index), default=0.0))


def compared(methods, metric: str) -> list[str]:
    """The methods a metric compares: a deterministic method's stability (1 by construction) is not a result."""
    return [m for m in methods if not (metric in STABILITY and m in DETERMINISTIC)]


def fmt_cost(value: float, extra: int = 0) -> str:
    """A cost (seconds, MB): a whole number from 10 on, two significant digits below (``extra`` more each).

    Examples
    --------
    >>> fmt_cost(1209.4), fmt_cost(0.4123), fmt_cost(2.41)
    ('1209', '0.41', '2.4')
    """
    if abs(value) >= 10:
        return f"{value:.{extra}f}"
    return f"{value:.{2 + extra}g}"


def fmt_value(metric: str, value: float, extra: int = 0) -> str:
    """``value`` with the metric's digits (two significant ones for a p-value), ``extra`` more; "n/a" for NaN."""
    if value != value:
        return "n/a"
    if metric in P_VALUES:
        return f"{value:.{2 + extra}g}"
    if metric in COSTS:
        return fmt_cost(value, extra)
    return f"{value:.{DIGITS.get(metric, 3) + extra}f}"


def fmt_apart(metric: str, value: float, *others: float) -> tuple[str, ...]:
    """``value`` and each of ``others`` as :func:`fmt_value` writes them, with more digits (at most four more)
    where that would show two different values as the same number; ``value`` gets as many as its closest other.

    Examples
    --------
    >>> fmt_apart("redundancy", 0.0648, 0.0645, 0.08)
    ('0.0648', '0.0645', '0.080')
    >>> fmt_apart("redundancy", 0.05, 0.08)
    ('0.050', '0.080')
    >>> fmt_apart("redundancy", 0.1 + 0.2, 0.3)  # equal but for rounding error: no extra digits
    ('0.300', '0.300')
    """

    def digits_apart(other: float) -> int:
        for extra in range(4):
            same = math.isclose(other, value, rel_tol=1e-9, abs_tol=1e-12)
            if same or fmt_value(metric, value, extra) != fmt_value(metric, other, extra):
                return extra
        return 4

    extras = [digits_apart(other) for other in others]
    return fmt_value(metric, value, max(extras, default=0)), *map(partial(fmt_value, metric), others, extras)


def winner_lines(means: pd.DataFrame, metrics: list[str], sds: pd.DataFrame | None = None) -> list[str]:
    """The best method(s) of each metric: every method within the seeds' spread of the best one."""
    lines = []
    for m in metrics:
        if m not in HIGHER_IS_BETTER | LOWER_IS_BETTER:
            continue
        col = means.loc[compared(means.index, m), m].dropna()
        if col.empty:
            continue
        best = col.max() if m in HIGHER_IS_BETTER else col.min()
        top = col.idxmax() if m in HIGHER_IS_BETTER else col.idxmin()
        who = ", ".join(p for p in col.index if tied(col[p], best, pair_spread(sds, m, p, top), metric=m))
        ours = [s for s in OURS if s in means.index]
        best_shown, *ours_shown = fmt_apart(m, best, *(means.loc[s, m] for s in ours))
        sv = "; ".join(f"{s} {shown}" for s, shown in zip(ours, ours_shown, strict=True))
        lines.append(f"- **{m}** ({'higher' if m in HIGHER_IS_BETTER else 'lower'} is better): {who} "
                     f"({best_shown}){'; ' + sv if sv else ''}")  # fmt: skip
    return lines


def budget_groups(methods) -> list[tuple[str, list[str]]]:
    """The methods split by budget, so that each is compared like with like: single fits, and the methods that
    combine several fits (:data:`SEVERAL_FITS`).
    """
    groups = [
        ("single fits", [m for m in methods if m not in SEVERAL_FITS]),
        ("several fits", [m for m in methods if m in SEVERAL_FITS]),
    ]
    return [(name, members) for name, members in groups if members]


def loss_lines(means: pd.DataFrame, metrics: list[str], sds: pd.DataFrame | None = None) -> list[str]:
    """Metrics where a peer beats every scsparse model of its budget group (:func:`budget_groups`) by more than
    the seeds' spread: single fits against single fits, restarts and consensus against cNMF's consensus.
    """
    lines = []
    for m in metrics:
        if m not in HIGHER_IS_BETTER | LOWER_IS_BETTER:
            continue
        higher = m in HIGHER_IS_BETTER
        sign = 1.0 if higher else -1.0
        for group, members in budget_groups(means.index):
            ours = [s for s in OURS if s in members and means.loc[s, m] == means.loc[s, m]]
            peers = [p for p in compared(members, m) if p not in OURS and means.loc[p, m] == means.loc[p, m]]
            if not ours or not peers:
                continue
            best_ours = max(ours, key=lambda s: sign * means.loc[s, m])
            our_best = means.loc[best_ours, m]
            beaten = [
                p
                for p in peers
                if better(means.loc[p, m], our_best, higher=higher, spread=pair_spread(sds, m, p, best_ours), metric=m)
            ]
            if beaten:
                mine, *theirs = fmt_apart(m, our_best, *(means.loc[p, m] for p in beaten))
                shown = ", ".join(f"{p} {value}" for p, value in zip(beaten, theirs, strict=True))
                who = ours[0] if len(ours) == 1 else f"the better of {', '.join(ours)}"
                lines.append(f"- {m} ({group}): scsparse {mine} ({who}); ahead: {shown}")
    return lines


def ahead_of_all(
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
            better(mine, means.loc[p, metric], higher=higher, spread=pair_spread(sds, metric, ours, p), metric=metric)
            for p in others
        )
    )


def versus(means: pd.DataFrame, ours: str, peers: list[str], metric: str) -> str:
    mine, *shown = fmt_apart(metric, means.loc[ours, metric], *(means.loc[p, metric] for p in peers))
    theirs = ", ".join(f"{p} {value}" for p, value in zip(peers, shown, strict=True))
    return f"{ours} {mine} vs {theirs}"


#: The questions of the "in short" tables, ``(metric, question)``; a size-dependent metric is also read with every
#: programme cut to the same number of genes (``<metric>_at<n>``).
IN_SHORT: tuple[tuple[str, str], ...] = (
    ("median_genes", "smallest programmes (median genes)"),
    ("redundancy", "least redundant programmes"),
    ("enriched_share", "most programmes enriched"),
    ("distinct_terms", "most distinct gene sets"),
    ("interferon_p", "interferon response most strongly enriched (adj. p)"),
    ("markers_recovered", "most cell types' markers recovered"),
    ("accuracy", "cell types read off the factors (accuracy)"),
    ("lms_smi", "one factor per cell type (LMS of SMI)"),
    ("transfer_accuracy", "cell types transferred between studies"),
    ("batch_leakage", "least batch leakage"),
    ("stability_top10", "strongest genes stable over seeds (top-10 overlap)"),
    ("seconds", "fastest (median seconds)"),
)


def verdict(means: pd.DataFrame, sds: pd.DataFrame | None, ours: str, peers: list[str], metric: str) -> str:
    """``ours`` against the best of ``peers`` on ``metric``: "ahead", "tie" (inside the seeds' spread) or
    "behind", with both values and the peer's name; "n/a" where either side has no value.

    Examples
    --------
    >>> means = pd.DataFrame({"redundancy": [0.05, 0.08, 0.04]}, index=["SparseVAE", "LDVAE", "PCA"])
    >>> verdict(means, None, "SparseVAE", ["LDVAE"], "redundancy")
    'ahead: 0.050 vs 0.080 (LDVAE)'
    >>> verdict(means, None, "SparseVAE", ["LDVAE", "PCA"], "redundancy")
    'behind: 0.050 vs 0.040 (PCA)'
    """
    if metric not in means or ours not in means.index:
        return "n/a"
    mine = means.loc[ours, metric]
    theirs = means.loc[[p for p in compared(peers, metric) if p in means.index], metric].dropna()
    if mine != mine or theirs.empty:
        return "n/a"
    higher = metric in HIGHER_IS_BETTER
    best = theirs.idxmax() if higher else theirs.idxmin()
    spread = pair_spread(sds, metric, ours, best)
    word = (
        "ahead"
        if better(mine, theirs[best], higher=higher, spread=spread, metric=metric)
        else "behind"
        if better(theirs[best], mine, higher=higher, spread=spread, metric=metric)
        else "tie"
    )
    mine_shown, best_shown = fmt_apart(metric, mine, theirs[best])
    return f"{word}: {mine_shown} vs {best_shown} ({best})"


def in_short_rows(
    means: pd.DataFrame, sds: pd.DataFrame | None, sizes: tuple[int, ...] = EQUAL_SIZES
) -> list[tuple[str, list[list[str]]]]:
    """Each scsparse model of the data set against the peers of its budget group (:func:`budget_groups`), question
    by question (:data:`IN_SHORT`): ``(title, rows)``, a row ``[question, own reading, at n genes for n in sizes]``.
    Equal-size cells are "—" for the metrics that do not depend on programme size.
    """
    out = []
    for group, members in budget_groups(means.index):
        peers = [p for p in members if p not in OURS]
        for ours in (s for s in OURS if s in members):
            if not peers:
                continue
            rows = []
            for metric, question in IN_SHORT:
                sized = [f"{metric}_at{n}" for n in sizes] if metric in _SIZED else []
                cells = [verdict(means, sds, ours, peers, m) for m in (metric, *sized)]
                if all(c == "n/a" for c in cells):
                    continue
                rows.append([question, cells[0], *(cells[1:] if sized else ["—"] * len(sizes))])
            if rows:
                out.append((f"{ours} against the {group} ({', '.join(peers)})", rows))
    return out
