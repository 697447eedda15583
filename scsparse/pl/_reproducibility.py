"""How reproducible each programme of a consensus fit is: share of restarts that recover it, and their agreement."""

from __future__ import annotations

from os import PathLike

import matplotlib.pyplot as plt
import numpy as np
from anndata import AnnData
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from scsparse.results import MissingResultsError, read_results

from ._figure import finish, label_fontsize

__all__ = ["reproducibility"]


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

    One horizontal bar per programme of the reference restart, most reproducible first: the bar is the share of
    the restarts that recover the programme, a black dot its mean agreement (rank-biased overlap) with the
    matched programme of every other restart. Programmes below the consensus's ``min_share`` (dashed line) were
    switched off and are drawn pale and hatched; a ring marks those identifiable (two anchor genes or more).
    Labels give the factor, its number of genes and anchor genes, and its first genes.

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
        labels.append(f"{row.factor} ({int(row.n_genes)} genes, {int(row.n_anchor_genes)} anchors){named}")
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
    ax.set_xlabel("share of restarts recovering the programme", fontsize=8)
    ax.tick_params(axis="both", length=2, pad=1.5, labelsize=7)
    ax.grid(True, axis="x", color="0.92", linewidth=0.5, zorder=0)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    n_restarts = int(dict(adata.uns[key].get("consensus_params", {})).get("n_restarts", 0))
    ax.set_title(f"{key}: {int(kept.sum())} of {n} programmes reproduce ({n_restarts} restarts)", fontsize=9)
    handles = [
        Patch(facecolor=colour, label="kept (reproducible)"),
        Patch(facecolor=colour, alpha=0.3, hatch="///", edgecolor="0.3", label="switched off"),
        Line2D([], [], marker="o", linestyle="none", color="black", markersize=4, label="mean agreement (RBO)"),
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
