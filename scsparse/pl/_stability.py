"""Per-factor agreement of the loadings across seeds (the table of :func:`scsparse.tl.stability`) as a bar chart."""

from __future__ import annotations

import re
from collections.abc import Sequence
from os import PathLike

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from anndata import AnnData
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from scsparse.results import MissingResultsError

from ._figure import finish, label_fontsize

__all__ = ["stability"]

_SEED_COLUMN = re.compile(r"^corr_seed(-?\d+)$")


def _stability_table(data: AnnData | pd.DataFrame, key: str, key_added: str | None) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        table = data
    elif isinstance(data, AnnData):
        name = key_added or f"{key}_stability"
        if name not in data.uns:
            found = [k for k in data.uns if str(k).endswith("_stability")]
            hint = f" Stability tables found: {found}." if found else ""
            raise MissingResultsError(
                f"No stability table in adata.uns[{name!r}]. Run `scsparse.tl.stability(adata, seeds=(0, 1, 2), "
                f"key={key!r})` first, or pass the table it returned.{hint}"
            )
        table = data.uns[name]
        table = table if isinstance(table, pd.DataFrame) else pd.DataFrame(table)
    else:
        raise TypeError(f"Expected an AnnData or the DataFrame of scsparse.tl.stability, got {type(data).__name__}.")
    if "reproducibility" in table.columns and "loadings_corr" not in table.columns:
        raise ValueError(
            "The stability table names its mean |correlation| of the aligned loadings 'reproducibility', as earlier "
            "versions of scsparse.tl.stability did; it is 'loadings_corr' now ('reproducibility' is the share of "
            "restarts of a consensus fit that hold a programme, drawn by scsparse.pl.reproducibility). Rename the "
            "column, `table = table.rename(columns={'reproducibility': 'loadings_corr'})`, or run "
            "scsparse.tl.stability again."
        )
    needed = {"factor", "loadings_corr", "min_corr", "active"}
    if not needed <= set(table.columns):
        raise ValueError(
            f"The stability table lacks columns {sorted(needed - set(table.columns))}: pass the table returned by "
            "scsparse.tl.stability."
        )
    return table.reset_index(drop=True)


def _label(row: pd.Series, n_genes: int, max_chars: int) -> str:
    genes = [g.strip() for g in str(row.get("top_genes", "")).split(",") if g.strip()][:n_genes]
    text = f"{row['factor']}: {', '.join(genes)}" if genes else str(row["factor"])
    return text if len(text) <= max_chars else text[: max_chars - 1].rstrip() + "…"


def stability(
    data: AnnData | pd.DataFrame,
    *,
    key: str = "sparsevae",
    key_added: str | None = None,
    factors: Sequence[str] | None = None,
    active_only: bool = False,
    n_genes_label: int = 3,
    label_max_chars: int = 44,
    reference_line: float | None = 0.8,
    figsize: tuple[float, float] | None = None,
    show: bool | None = None,
    save: str | PathLike[str] | None = None,
    ax: Axes | None = None,
) -> Axes | None:
    """How much each factor's loadings agree across seeds, from :func:`scsparse.tl.stability`.

    One horizontal bar per factor of the reference run (the first seed), in the order of the table (highest
    ``loadings_corr`` first): the bar is ``loadings_corr`` (mean absolute correlation of the aligned loadings over
    all pairs of seeds), a black tick marks ``min_corr`` (the worst pair), and one dot per other seed shows the
    correlation of its matched factor with the reference. Factors inactive in the reference run are pale and
    hatched. Labels name the factor and its first top genes.

    Parameters
    ----------
    data
        An AnnData holding the table in ``uns[key_added or f"{key}_stability"]``, or the table itself.
    key
        The ``key`` given to :func:`scsparse.tl.stability`.
    key_added
        The ``key_added`` given to :func:`scsparse.tl.stability`, if any.
    factors
        Factors to show (default: all rows of the table).
    active_only
        Show only the factors active in the reference run.
    n_genes_label
        Top genes in each label.
    label_max_chars
        Longest label (truncated with an ellipsis).
    reference_line
        Draw a dashed guide at this ``loadings_corr`` (``None``: none).
    figsize
        Figure size in inches when ``ax`` is ``None`` (default: grows with the number of factors).
    show, save, ax
        As in the other ``scsparse.pl`` functions: show the figure (default: when ``save`` is not given), write it
        (dpi 150), draw into existing axes.

    Returns
    -------
    matplotlib.axes.Axes or None
        The axes when ``show`` is false.

    Raises
    ------
    scsparse.pl.MissingResultsError
        No stability table in ``adata.uns``.
    ValueError
        A table without the columns of :func:`scsparse.tl.stability` (one that still names ``loadings_corr``
        ``reproducibility`` is told how to rename it), or no factor left to show.

    Examples
    --------
    >>> scsparse.tl.stability(adata, seeds=(0, 1, 2), layer="counts", max_epochs=40)
    >>> scsparse.pl.stability(adata, save="stability.png")
    """
    table = _stability_table(data, key, key_added).copy()
    table["active"] = table["active"].astype(bool)
    if factors is not None:
        wanted = [str(f) for f in factors]
        unknown = sorted(set(wanted) - set(table["factor"].astype(str)))
        if unknown:
            raise ValueError(f"Factors {unknown} are not in the stability table.")
        table = table[table["factor"].astype(str).isin(wanted)]
    if active_only:
        table = table[table["active"]]
    if not len(table):
        raise ValueError("No factor to show (check factors= and active_only=).")
    table = table.reset_index(drop=True)
    seeds = [(col, m.group(1)) for col in table.columns if (m := _SEED_COLUMN.match(str(col)))]
    labels = [_label(row, n_genes_label, label_max_chars) for _, row in table.iterrows()]
    n = len(table)
    if ax is None:
        if figsize is None:
            figsize = (3.6 + 0.06 * max(len(s) for s in labels), 1.3 + 0.24 * n)
        fig, ax = plt.subplots(figsize=figsize)
    fig = ax.figure
    y = np.arange(n)
    corr = table["loadings_corr"].to_numpy(dtype=float)
    active = table["active"].to_numpy()
    colour = "#3b75af"
    ax.barh(y[active], corr[active], height=0.7, color=colour, edgecolor=colour, linewidth=0.4, zorder=2)
    ax.barh(
        y[~active], corr[~active], height=0.7, color=colour, alpha=0.3, hatch="///", edgecolor="0.3",
        linewidth=0.4, zorder=2,
    )  # fmt: skip
    ax.scatter(table["min_corr"].to_numpy(dtype=float), y, marker="|", s=90, c="black", linewidths=1.2, zorder=4)
    markers = ["o", "s", "^", "D", "v", "P", "X", "*"]
    seed_colours = plt.get_cmap("Set2")
    for i, (col, _seed) in enumerate(seeds):
        ax.scatter(
            table[col].to_numpy(dtype=float), y + 0.18 * (i - (len(seeds) - 1) / 2) / max(len(seeds), 1),
            s=14, marker=markers[i % len(markers)], color=seed_colours(i % 8), edgecolors="0.2", linewidths=0.4,
            zorder=5,
        )  # fmt: skip
    if reference_line is not None:
        ax.axvline(float(reference_line), color="0.35", linestyle="--", linewidth=0.7, zorder=3)
    ax.set_xlim(0.0, 1.02)
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=label_fontsize(ax, n, max_size=8.0))
    ax.set_xlabel("|correlation| of the aligned loadings across seeds", fontsize=8)
    ax.tick_params(axis="both", length=2, pad=1.5, labelsize=7)
    ax.grid(True, axis="x", color="0.92", linewidth=0.5, zorder=0)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ref_seed = ""
    if seeds:
        match_cols = [c for c in table.columns if str(c).startswith("match_seed")]
        others = ", ".join(s for _, s in seeds)
        ref_seed = f" (reference run vs seed{'s' if len(seeds) > 1 else ''} {others})" if match_cols else ""
    n_stable = int((corr >= reference_line).sum()) if reference_line is not None else None
    summary = f"; {n_stable}/{n} factors ≥ {reference_line:g}" if n_stable is not None else ""
    ax.set_title(f"{key}: loadings' |correlation| per factor{ref_seed}{summary}", fontsize=9)
    handles: list = [
        Patch(facecolor=colour, label="mean over seed pairs"),
        Patch(facecolor=colour, alpha=0.3, hatch="///", edgecolor="0.3", label="inactive in reference"),
        Line2D([], [], marker="|", linestyle="none", color="black", markersize=9, label="worst pair"),
    ]
    for i, (_, seed) in enumerate(seeds):
        handles.append(
            Line2D(
                [],
                [],
                marker=markers[i % len(markers)],
                linestyle="none",
                markerfacecolor=seed_colours(i % 8),
                markeredgecolor="0.2",
                markersize=5,
                label=f"seed {seed} vs reference",
            )  # fmt: skip
        )
    ax.legend(handles=handles, fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax if finish(fig, show, save) else None
