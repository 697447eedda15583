"""The enrichment dot plot of the programmes (from :func:`scsparse.tl.enrich`)."""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import Literal

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from anndata import AnnData
from matplotlib.axes import Axes

from scsparse.results import MissingResultsError
from scsparse.tl import short_term

from ._figure import finish, label_fontsize, rotate_xlabels

__all__ = ["enrichment_dotplot"]


def _factor_label(factor: str) -> str:
    return factor.replace("factor_", "")


def _enrichment_table(adata: AnnData | None, key: str, enrichment: pd.DataFrame | None) -> pd.DataFrame:
    if enrichment is not None:
        table = enrichment
    else:
        name = f"{key}_enrichment"
        if adata is None or name not in adata.uns:
            raise MissingResultsError(
                f"No enrichment table in adata.uns[{name!r}]. Run `scsparse.tl.enrich(adata, gene_sets, key={key!r})` "
                "first (or pass enrichment=<the DataFrame it returned>)."
            )
        table = adata.uns[name]
    if not isinstance(table, pd.DataFrame):
        table = pd.DataFrame(table)
    needed = {"factor", "direction", "term", "overlap", "p_adj"}
    if not needed <= set(table.columns):
        raise ValueError(f"The enrichment table lacks columns {sorted(needed - set(table.columns))}.")
    return table


def enrichment_dotplot(
    adata: AnnData | None = None,
    *,
    key: str = "sparsevae",
    enrichment: pd.DataFrame | None = None,
    factors: Sequence[str] | None = None,
    direction: Literal["both", "positive", "negative"] = "both",
    n_terms: int = 3,
    max_p_adj: float = 0.05,
    term_max_chars: int = 40,
    strip_prefix: bool = True,
    cmap: str = "viridis_r",
    figsize: tuple[float, float] | None = None,
    show: bool | None = None,
    save: str | PathLike[str] | None = None,
    ax: Axes | None = None,
) -> Axes | None:
    """Dot plot of the enrichment of each programme: columns are factor x direction, rows gene sets.

    Each dot is one (factor, direction, term) test of :func:`scsparse.tl.enrich`: its area grows with the
    overlap (programme genes in the set; the leading edge for prerank), its colour is ``-log10`` of the adjusted
    p-value. Columns are labelled ``<factor>+`` (genes higher where the factor is high) and ``<factor>−`` (lower).
    Rows are, for every column, its ``n_terms`` best terms with ``p_adj <= max_p_adj`` (or its best terms if no
    term of the table passes), ordered so that each column's terms come together. Term names lose their collection
    prefix (``HALLMARK_``, ``GOBP_``, ...) and are truncated to ``term_max_chars`` characters.

    Parameters
    ----------
    adata
        AnnData holding ``uns[f"{key}_enrichment"]`` (not needed when ``enrichment`` is given).
    key
        The ``key`` the enrichment was computed for.
    enrichment
        The table returned by :func:`scsparse.tl.enrich` (instead of reading it from ``adata``).
    factors
        Factors to show (default: all in the table, in its order).
    direction
        ``"both"``, ``"positive"`` or ``"negative"``.
    n_terms
        Best terms per column.
    max_p_adj
        Significance level for picking the terms.
    term_max_chars
        Longest term label (longer labels are truncated with an ellipsis).
    strip_prefix
        Remove collection prefixes and underscores from term names.
    cmap
        Colour map of ``-log10(p_adj)``.
    figsize
        Figure size in inches when ``ax`` is ``None`` (default: from the numbers of rows and columns).
    show, save, ax
        As in the other ``scsparse.pl`` functions: show the figure (default: when ``save`` is not given), write it
        (dpi 150), draw into existing axes.

    Returns
    -------
    matplotlib.axes.Axes or None
        The axes when ``show`` is false.

    Examples
    --------
    >>> scsparse.tl.enrich(adata, "hallmark_human")
    >>> scsparse.pl.enrichment_dotplot(adata, n_terms=2, save="enrichment.png")
    """
    table = _enrichment_table(adata, key, enrichment).copy()
    if direction != "both":
        table = table[table["direction"] == direction]
    if factors is not None:
        table = table[table["factor"].isin([str(f) for f in factors])]
    if not len(table):
        raise ValueError("The enrichment table has no rows for these factors and direction.")
    table["p_adj"] = pd.to_numeric(table["p_adj"], errors="coerce").fillna(1.0)
    table["overlap"] = pd.to_numeric(table["overlap"], errors="coerce").fillna(0)
    factor_order = list(dict.fromkeys(table["factor"].astype(str)))
    significant = table[table["p_adj"] <= max_p_adj]
    any_significant = len(significant) > 0
    pool = significant if any_significant else table
    columns = [(f, d) for f in factor_order for d in ("positive", "negative")]
    columns = [c for c in columns if ((pool["factor"] == c[0]) & (pool["direction"] == c[1])).any()]
    terms: list[str] = []
    for f, d in columns:
        sub = pool[(pool["factor"] == f) & (pool["direction"] == d)].sort_values("p_adj", kind="stable")
        for t in sub["term"].head(int(n_terms)):
            if t not in terms:
                terms.append(str(t))
    if not terms:
        raise ValueError("No term to show.")
    keep_cols = set(columns)
    shown = table[
        table["term"].isin(terms)
        & pd.Series(list(zip(table["factor"], table["direction"], strict=True)), index=table.index).isin(keep_cols)
    ]
    col_index = {c: i for i, c in enumerate(columns)}
    row_index = {t: i for i, t in enumerate(terms)}
    x = np.asarray([col_index[(f, d)] for f, d in zip(shown["factor"], shown["direction"], strict=True)])
    y = np.asarray([row_index[t] for t in shown["term"]])
    score = -np.log10(np.clip(shown["p_adj"].to_numpy(dtype=float), 1e-300, 1.0))
    overlap = shown["overlap"].to_numpy(dtype=float)
    max_overlap = max(float(overlap.max()), 1.0)
    sizes = 15 + 185 * overlap / max_overlap

    labels = [short_term(t, term_max_chars, strip_prefix) for t in terms]
    n_rows, n_cols = len(terms), len(columns)
    if ax is None:
        if figsize is None:
            label_width = 0.065 * max(len(s) for s in labels)
            figsize = (label_width + 0.32 * n_cols + 2.4, 1.3 + 0.26 * n_rows)
        fig, ax = plt.subplots(figsize=figsize)
    fig = ax.figure
    vmax = max(float(score.max()), -np.log10(max_p_adj) + 0.5)
    passed = shown["p_adj"].to_numpy(dtype=float) <= max_p_adj
    points = None
    for mask, alpha in ((~passed, 0.35), (passed, 1.0)):  # tests above max_p_adj drawn faded
        if mask.any():
            drawn = ax.scatter(
                x[mask], y[mask], s=sizes[mask], c=score[mask], cmap=cmap, vmin=0.0, vmax=vmax,
                edgecolors="0.25", linewidths=0.4, alpha=alpha, zorder=3,
            )  # fmt: skip
            points = drawn if points is None or alpha == 1.0 else points
    ax.set_xlim(-0.6, n_cols - 0.4)
    ax.set_ylim(n_rows - 0.5, -0.5)
    ax.set_yticks(np.arange(n_rows))
    ax.set_yticklabels(labels, fontsize=label_fontsize(ax, n_rows, max_size=9.0))
    ax.set_xticks(np.arange(n_cols))
    sign = {"positive": "+", "negative": "−"}
    x_labels = [f"{_factor_label(f)}{sign[d]}" for f, d in columns]
    x_size = label_fontsize(ax, n_cols, axis="x", max_size=9.0)
    ax.set_xticklabels(x_labels, fontsize=x_size, rotation=rotate_xlabels(ax, x_labels, x_size))
    ax.set_xlabel("factor (+: genes up with the factor, −: down)")
    ax.grid(True, color="0.9", linewidth=0.5, zorder=0)
    ax.set_axisbelow(True)
    ax.tick_params(axis="both", length=2, pad=1.5)
    library = str(table["library"].iloc[0]) if "library" in table.columns else ""
    method = str(table["method"].iloc[0]) if "method" in table.columns else ""
    title = f"{key}: enrichment" + (f" ({library}, {method})" if library else "")
    if not any_significant:
        title += f"\nno term with adj. p ≤ {max_p_adj:g}; best terms shown"
    ax.set_title(title, fontsize=10)
    cbar = fig.colorbar(
        points, ax=ax, shrink=float(np.clip(2.0 / fig.get_figheight(), 0.3, 0.8)), pad=0.02, anchor=(0.0, 1.0)
    )
    cbar.set_label("−log10 adj. p", fontsize=8)
    cbar.ax.tick_params(labelsize=7)
    # size legend (three representative overlaps), right of the colour bar and its label
    positive = overlap[overlap > 0] if (overlap > 0).any() else np.ones(1)
    ref = sorted({max(1, int(round(v))) for v in np.quantile(positive, [0.0, 0.5, 1.0])})
    handles = [
        ax.scatter([], [], s=15 + 185 * v / max_overlap, c="0.6", edgecolors="0.25", linewidths=0.4) for v in ref
    ]
    # 0.12 inch right of the colour bar's ticks and label, as drawn
    box = cbar.ax.get_position()
    right = cbar.ax.get_tightbbox().x1 / (fig.dpi * fig.get_figwidth())
    ax.legend(
        handles,
        [str(v) for v in ref],
        title="overlap",
        fontsize=7,
        title_fontsize=7,
        loc="upper left",
        bbox_to_anchor=(right + 0.12 / fig.get_figwidth(), box.y1),
        bbox_transform=fig.transFigure,
        frameon=False,
        labelspacing=1.2,
        borderaxespad=0.0,
    )
    return ax if finish(fig, show, save) else None
