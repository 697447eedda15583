"""How reproducible each programme of a consensus fit is, and how the restarts' programmes were grouped."""

from __future__ import annotations

from os import PathLike

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from anndata import AnnData
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from scsparse.results import MissingResultsError, read_results

from ._figure import finish, label_fontsize

__all__ = ["consensus_selection", "reproducibility"]


def reproducibility(
    adata: AnnData,
    *,
    key: str = "sparsevae",
    n_genes_label: int = 3,
    figsize: tuple[float, float] | None = None,
    show: bool | None = None,
    save: str | PathLike[str] | None = None,
    ax: Axes | None = None,
) -> Axes | None:
    """Reproducibility of each programme of a consensus fit (:meth:`SparseVAE.consensus
    <scsparse.model.SparseVAE.consensus>`).

    One horizontal bar per group of the restarts' programmes, most reproducible first: the bar is the group's
    ``reproducibility``, the share of the restarts with a programme in the group (the agreement of the loadings
    across seeds, ``loadings_corr``, is :func:`scsparse.pl.stability`'s), a black dot the group's agreement (mean
    Jaccard index of its members' genes with the consensus genes). Groups below the consensus's ``min_share``
    (dashed line) were not kept and are drawn pale and hatched; a ring marks the kept programmes that are
    identifiable (two anchor genes or more). Labels give the refit's factor (or the group, when not kept), its
    numbers of genes and anchor genes, and its strongest genes.

    Parameters
    ----------
    adata
        AnnData with a consensus fit written under ``key`` (``model.write_results(adata, key_added=key)``).
    key
        The ``key_added`` of the fit.
    n_genes_label
        Genes named in each label (the kept programmes' strongest).
    figsize
        Figure size in inches when ``ax`` is ``None`` (default: grows with the number of programmes).
    show, save, ax
        As in the other ``scsparse.pl`` functions.

    Returns
    -------
    matplotlib.axes.Axes or None
        The axes when ``show`` is false.

    Raises
    ------
    scsparse.pl.MissingResultsError
        When the fit under ``key`` is a single fit, not a consensus.

    Examples
    --------
    >>> model = scsparse.model.SparseVAE.consensus(adata, n_restarts=10)
    >>> model.write_results(adata)
    >>> scsparse.pl.reproducibility(adata, save="reproducibility.png")
    """
    res = read_results(adata, key)
    if res.consensus is None:
        raise MissingResultsError(
            f"The fit under key={key!r} is a single fit, with no reproducibility to show. Fit a consensus, "
            "`model = scsparse.model.SparseVAE.consensus(adata, n_restarts=10)`, then "
            f"`model.write_results(adata, key_added={key!r})`."
        )
    table = res.consensus.sort_values(["reproducibility", "agreement"], ascending=False, kind="stable")
    table = table.reset_index(drop=True)
    share = float(dict(adata.uns[key].get("consensus_params", {})).get("min_share", np.nan))
    labels = []
    for row in table.itertuples():
        genes = res.top_genes.get(str(row.factor), [])[:n_genes_label] if row.kept else []
        named = f": {', '.join(genes)}" if genes else ""
        name = row.factor if row.kept else f"{row.programme} (not kept)"
        labels.append(f"{name} ({int(row.n_genes)} genes, {int(row.n_anchor_genes)} anchors){named}")
    n = len(table)
    if ax is None:
        if figsize is None:
            figsize = (3.8 + 0.06 * max((len(s) for s in labels), default=10), 1.3 + 0.26 * n)
        _, ax = plt.subplots(figsize=figsize)
    fig = ax.figure
    y = np.arange(n)
    kept = table["kept"].to_numpy(dtype=bool)
    repro = table["reproducibility"].to_numpy(dtype=float)
    colour = "#3b75af"
    ax.barh(y[kept], repro[kept], height=0.7, color=colour, zorder=2)
    ax.barh(y[~kept], repro[~kept], height=0.7, color=colour, alpha=0.3, hatch="///", edgecolor="0.3", zorder=2)
    ax.scatter(table["agreement"].to_numpy(dtype=float), y, s=18, color="black", zorder=4)
    ident = table["identifiable"].to_numpy(dtype=bool)
    ax.scatter(np.minimum(repro[ident] + 0.03, 1.04), y[ident], s=40, facecolors="none", edgecolors="#d1495b", zorder=4)
    if np.isfinite(share):
        ax.axvline(share, color="0.35", linestyle="--", linewidth=0.7, zorder=3)
    ax.set_xlim(0.0, 1.08)
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=label_fontsize(ax, n, max_size=8.0))
    ax.set_xlabel("share of restarts with a programme in the group", fontsize=8)
    ax.tick_params(axis="both", length=2, pad=1.5, labelsize=7)
    ax.grid(True, axis="x", color="0.92", linewidth=0.5, zorder=0)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    n_restarts = int(dict(adata.uns[key].get("consensus_params", {})).get("n_restarts", 0))
    ax.set_title(f"{key}: {int(kept.sum())} of {n} groups of programmes kept ({n_restarts} restarts)", fontsize=9)
    handles = [
        Patch(facecolor=colour, label="kept (reproducible)"),
        Patch(facecolor=colour, alpha=0.3, hatch="///", edgecolor="0.3", label="not kept"),
        Line2D([], [], marker="o", linestyle="none", color="black", markersize=4, label="agreement (Jaccard)"),
        Line2D(
            [],
            [],
            marker="o",
            linestyle="none",
            markerfacecolor="none",
            markeredgecolor="#d1495b",
            markersize=6,
            label="identifiable (>= 2 anchors)",
        ),  # fmt: skip
        Line2D([], [], linestyle="--", color="0.35", label="min_share"),
    ]
    ax.legend(handles=handles, fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax if finish(fig, show, save) else None


def consensus_selection(
    adata: AnnData,
    *,
    key: str = "sparsevae",
    figsize: tuple[float, float] | None = None,
    show: bool | None = None,
    save: str | PathLike[str] | None = None,
) -> list[Axes] | None:
    """How a consensus fit chose its programmes: the number kept at each cut, and which restarts fed each group.

    Left: for each candidate cosine distance at which the grouping tree is cut, the number of kept programmes
    (groups with members from at least ``min_share`` of the restarts), the number of groups, and their mean
    silhouette (right axis: how well separated the groups are); the cut used is marked. A plateau in the number of
    kept programmes around the cut means the choice does not hang on it. Right: one row per group, one column per
    restart, a dot where the restart contributes a programme to the group (kept groups dark, others pale), and
    each restart's outliers (programmes no group took in) in the last row.

    Parameters
    ----------
    adata
        AnnData with a consensus fit written under ``key``.
    key
        The ``key_added`` of the fit.
    figsize
        Figure size in inches (default: grows with the numbers of groups and restarts).
    show, save
        As in the other ``scsparse.pl`` functions.

    Returns
    -------
    list of matplotlib.axes.Axes or None
        The two axes when ``show`` is false.

    Raises
    ------
    scsparse.pl.MissingResultsError
        When the fit under ``key`` is a single fit, not a consensus.

    Examples
    --------
    >>> model = scsparse.model.SparseVAE.consensus(adata, n_restarts=10)
    >>> model.write_results(adata)
    >>> scsparse.pl.consensus_selection(adata, save="consensus_selection.png")
    """
    uns = adata.uns.get(key, {})
    if "consensus_selection" not in uns or "consensus_members" not in uns:
        raise MissingResultsError(
            f"The fit under key={key!r} is not a pooled consensus, so there is no grouping to show. Fit one, "
            "`model = scsparse.model.SparseVAE.consensus(adata, n_restarts=10)`, then "
            f"`model.write_results(adata, key_added={key!r})`."
        )
    res = read_results(adata, key)
    selection = pd.DataFrame(uns["consensus_selection"])
    members = pd.DataFrame(uns["consensus_members"])
    params = dict(uns.get("consensus_params", {}))
    table = res.consensus
    n_restarts = int(params.get("n_restarts", members["restart"].max() + 1 if len(members) else 0))
    groups = table["programme"].astype(str).tolist()
    n_rows = len(groups) + 1
    if figsize is None:
        figsize = (4.2 + 0.16 * n_restarts + 3.6, 1.6 + 0.22 * n_rows)
    widths = [1.0, 0.5 + 0.05 * n_restarts]
    fig, (left, right) = plt.subplots(1, 2, figsize=figsize, gridspec_kw={"width_ratios": widths})
    left.plot(selection["distance"], selection["n_programmes"], marker="o", markersize=3, color="#3b75af",
              label="kept programmes")  # fmt: skip
    left.plot(selection["distance"], selection["n_groups"], marker="o", markersize=3, color="0.6", label="groups")
    left.axvline(float(params.get("distance", np.nan)), color="0.35", linestyle="--", linewidth=0.7, label="cut used")
    left.set_xlabel("cut (cosine distance)", fontsize=8)
    left.set_ylabel("number", fontsize=8)
    left.yaxis.set_major_locator(MaxNLocator(integer=True))
    twin = left.twinx()
    twin.plot(selection["distance"], selection["silhouette"], color="#d1495b", linewidth=1.0, label="silhouette")
    twin.set_ylabel("silhouette", fontsize=8, color="#d1495b")
    twin.tick_params(axis="y", labelsize=7, colors="#d1495b")
    handles = left.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    left.legend(handles=handles, fontsize=7, frameon=False, loc="upper right")
    left.tick_params(axis="both", labelsize=7)
    left.set_title(f"{key}: programmes kept at each cut ({n_restarts} restarts)", fontsize=9)
    kept = dict(zip(groups, table["kept"].astype(bool), strict=True))
    row_of = {g: i for i, g in enumerate(groups)}
    for member in members.itertuples():
        if member.programme:
            row, colour = row_of[str(member.programme)], "#3b75af" if kept[str(member.programme)] else "#a9c4e0"
        else:
            row, colour = len(groups), "#d1495b"
        right.scatter(int(member.restart), row, s=22, color=colour, zorder=3)
    labels = [f"{row.factor or row.programme} ({row.reproducibility:.0%})" for row in table.itertuples()]
    right.set_yticks(np.arange(n_rows))
    right.set_yticklabels([*labels, "outliers"], fontsize=label_fontsize(right, n_rows, max_size=8.0))
    right.set_ylim(n_rows - 0.5, -0.5)
    right.set_xticks(np.arange(n_restarts))
    right.set_xlim(-0.5, n_restarts - 0.5)
    right.set_xlabel("restart", fontsize=8)
    right.tick_params(axis="both", length=2, labelsize=7)
    right.grid(True, color="0.93", linewidth=0.5, zorder=0)
    right.set_title("which restarts feed each group", fontsize=9)
    fig.tight_layout()
    axes = [left, right]
    return axes if finish(fig, show, save) else None
