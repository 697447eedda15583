"""The tables of the summaries: ``mean ± sd`` over seeds, one row per group."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from scsparse.utils import markdown_rows

__all__ = [
    "format_mean_sd",
    "markdown_table",
    "mean_sd",
    "results_section",
    "within_spread",
]


def mean_sd(values: Sequence[float] | np.ndarray | pd.Series) -> tuple[float, float] | None:
    """Mean and sample sd (``ddof=1``) of the finite values; sd 0 for one value, ``None`` for none.

    Examples
    --------
    >>> mean_sd([0.5, 0.7, float("nan")])
    (0.6, 0.14142135623730948)
    >>> mean_sd([2.0]), mean_sd([])
    ((2.0, 0.0), None)
    """
    arr = np.asarray(values, dtype=np.float64).ravel()
    finite = arr[np.isfinite(arr)]
    if finite.size == 0:
        return None
    return float(finite.mean()), float(finite.std(ddof=1)) if finite.size > 1 else 0.0


def within_spread(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """A tie of two ``(mean, sd)`` readings: the means differ by at most the larger sd (the seeds' spread).

    Examples
    --------
    >>> within_spread((0.35, 0.05), (0.27, 0.0)), within_spread((0.80, 0.01), (0.27, 0.01))
    (False, False)
    >>> within_spread((0.30, 0.05), (0.27, 0.0))
    True
    """
    return abs(a[0] - b[0]) <= max(a[1], b[1])


def format_mean_sd(values: Sequence[float] | np.ndarray | pd.Series, digits: int = 3) -> str:
    """``"mean ± sd"`` of the finite values (sample sd, ``ddof=1``); ``"mean"`` alone for one value.

    Non-finite values are left out and counted, e.g. ``"0.812 ± 0.041 (1 nan)"``; no finite value gives
    ``"n/a"``.

    Examples
    --------
    >>> format_mean_sd([0.5, 0.7])
    '0.600 ± 0.141'
    >>> format_mean_sd([2.0])
    '2.000'
    """
    arr = np.asarray(values, dtype=np.float64).ravel()
    finite = arr[np.isfinite(arr)]
    n_bad = arr.size - finite.size
    if finite.size == 0:
        return "n/a"
    text = f"{finite.mean():.{digits}f}"
    if finite.size > 1:
        text += f" ± {finite.std(ddof=1):.{digits}f}"
    if n_bad:
        text += f" ({n_bad} nan)"
    return text


def markdown_table(
    df: pd.DataFrame,
    by: Sequence[str],
    metrics: Sequence[str],
    digits: int | Mapping[str, int] = 3,
    labels: Mapping[str, str] | None = None,
    formats: Mapping[str, Callable[[pd.Series], str]] | None = None,
) -> str:
    """Markdown table of ``mean ± sd`` over seeds for each metric, one row per group.

    Parameters
    ----------
    df
        Per-run results (one row per method, setting and seed).
    by
        Grouping columns shown first (e.g. ``["method", "rho"]``).
    metrics
        Metric columns, shown as ``mean ± sd`` (sample sd over the runs of the group).
    digits
        Decimals, for all metrics or per metric (default 3).
    labels
        Optional column headers for the ``by`` and metric columns.
    formats
        Optional cell text of a metric from the group's values (numeric), in place of ``mean ± sd``; for
        values such as p-values that a mean summarises badly.

    Returns
    -------
    str
        A GitHub-flavoured markdown table; the last column is the number of runs (seeds) per group.
    """
    labels = dict(labels or {})
    formats = dict(formats or {})
    header = [labels.get(c, c) for c in by] + [labels.get(m, m) for m in metrics] + ["n seeds"]
    rows = []
    for key, group in df.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        cells = [str(k) for k in key]
        for m in metrics:
            values = pd.to_numeric(group[m], errors="coerce")
            if m in formats:
                cells.append(formats[m](values))
                continue
            d = digits.get(m, 3) if isinstance(digits, Mapping) else digits
            cells.append(format_mean_sd(values, d))
        cells.append(str(len(group)))
        rows.append(cells)
    return "\n".join(markdown_rows(header, rows))


def results_section(table: str) -> list[str]:
    """The lines of a summary's results section: its heading, a blank line, ``table`` (:func:`markdown_table`'s),
    a blank line.

    Examples
    --------
    >>> results_section("| method |")
    ['## Results (mean ± sd over seeds)', '', '| method |', '']
    """
    return ["## Results (mean ± sd over seeds)", "", table, ""]
