"""What each factor guided by a gene set kept of its set, dropped and added."""

from __future__ import annotations

from os import PathLike

import matplotlib.pyplot as plt
import numpy as np
from anndata import AnnData
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from scsparse.results import MissingResultsError, read_results

from ._figure import finish, label_fontsize

__all__ = ["guided_factors"]

#: Colours of the set genes kept, the set genes dropped and the genes added.
_COLOURS = {"kept": "#3b75af", "dropped": "#c9c9c9", "added": "#e08a2c"}


def guided_factors(
    adata: AnnData,
    *,
    key: str = "sparsevae",
    n_genes_label: int = 3,
    figsize: tuple[float, float] | None = None,
    show: bool | None = None,
    save: str | PathLike[str] | None = None,
    ax: Axes | None = None,
) -> Axes | None:
    """The genes each guided factor kept of its gene set, dropped and added (``SparseVAE(gene_sets=...)``).

    One horizontal bar per guided factor, in the order of the sets: the set genes the factor kept (blue) and
    dropped (grey) make up the set's length in the data, the genes it added from outside the set (orange) follow.
    Labels give the factor, its set, its status (``kept``, ``extended``, ``departed``, ``not supported``,
    ``switched off``) and
    its fidelity (the Jaccard index of its programme and the set); the first ``n_genes_label`` added genes are
    named at the end of each bar. Read from ``uns[key]["guided_factors"]`` (:func:`scsparse.results.guided_table`).

    Parameters
    ----------
    adata
        AnnData with a guided fit written under ``key`` (``model.write_results(adata, key_added=key)``).
    key
        The ``key_added`` of the fit.
    n_genes_label
        Added genes named beside each bar.
    figsize
        Figure size in inches when ``ax`` is ``None`` (default: grows with the number of sets).
    show, save, ax
        As in the other ``scsparse.pl`` functions.

    Returns
    -------
    matplotlib.axes.Axes or None
        The axes when ``show`` is false.

    Raises
    ------
    scsparse.pl.MissingResultsError
        When the fit under ``key`` has no guided factor.

    Examples
    --------
    >>> model = scsparse.model.SparseVAE(adata, n_latent=10, gene_sets="hallmark_human")  # doctest: +SKIP
    >>> model.train()  # doctest: +SKIP
    >>> model.write_results(adata)  # doctest: +SKIP
    >>> scsparse.pl.guided_factors(adata, save="guided.png")  # doctest: +SKIP
    """
    res = read_results(adata, key)
    if res.guided is None or res.guided.empty:
        raise MissingResultsError(
            f"The fit under key={key!r} has no guided factor. Fit with gene sets, "
            "`model = scsparse.model.SparseVAE(adata, gene_sets=...)`, then "
            f"`model.write_results(adata, key_added={key!r})`."
        )
    table = res.guided.reset_index(drop=True)
    n = len(table)
    labels = [
        f"{row.factor}: {row.gene_set} ({row.status}, Jaccard {float(row.jaccard):.2f})" for row in table.itertuples()
    ]
    if ax is None:
        if figsize is None:
            figsize = (4.5 + 0.055 * max(len(s) for s in labels), 1.2 + 0.3 * n)
        _, ax = plt.subplots(figsize=figsize)
    fig = ax.figure
    y = np.arange(n)
    kept = table["n_set_genes_kept"].to_numpy(dtype=float)
    dropped = table["n_set_genes_dropped"].to_numpy(dtype=float)
    added = table["n_genes_added"].to_numpy(dtype=float)
    ax.barh(y, kept, height=0.7, color=_COLOURS["kept"], zorder=2)
    ax.barh(y, dropped, left=kept, height=0.7, color=_COLOURS["dropped"], zorder=2)
    ax.barh(y, added, left=kept + dropped, height=0.7, color=_COLOURS["added"], zorder=2)
    ends = kept + dropped + added
    for i, genes in enumerate(table["added_genes"].astype(str)):
        names = [g for g in genes.split("; ") if g][:n_genes_label]
        if names:
            more = int(added[i]) - len(names)
            text = ", ".join(names) + (f" +{more}" if more > 0 else "")
            ax.text(ends[i] + 0.01 * max(ends.max(), 1), y[i], text, va="center", fontsize=6.5, color="0.25")
    ax.set_xlim(0, 1.25 * max(ends.max(), 1))
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=label_fontsize(ax, n, max_size=8.0))
    ax.set_xlabel("genes", fontsize=8)
    ax.tick_params(axis="both", length=2, pad=1.5, labelsize=7)
    ax.grid(True, axis="x", color="0.92", linewidth=0.5, zorder=0)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    n_supported = int(table["status"].isin(["kept", "extended"]).sum())
    ax.set_title(f"{key}: {n_supported} of {n} gene sets supported by the data", fontsize=9)
    handles = [
        Patch(facecolor=_COLOURS["kept"], label="set genes kept"),
        Patch(facecolor=_COLOURS["dropped"], label="set genes dropped"),
        Patch(facecolor=_COLOURS["added"], label="genes added"),
    ]
    ax.legend(handles=handles, fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax if finish(fig, show, save) else None
