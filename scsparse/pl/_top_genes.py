"""Each factor's top genes as bars, coloured by direction (up or down with the factor)."""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike

import matplotlib.pyplot as plt
import numpy as np
from anndata import AnnData
from matplotlib.axes import Axes

from scsparse.results import read_results

from ._figure import finish, label_fontsize

__all__ = ["top_genes"]


def top_genes(
    adata: AnnData,
    *,
    key: str = "sparsevae",
    n_top: int = 10,
    factors: Sequence[str | int] | None = None,
    pip_threshold: float = 0.5,
    layer: str | None = None,
    ncols: int = 4,
    panel_size: tuple[float, float] = (2.6, 2.8),
    show: bool | None = None,
    save: str | PathLike[str] | None = None,
    ax: Axes | None = None,
) -> Axes | list[Axes] | None:
    """Bar chart of each factor's top genes: length ``|w_jk|``, red for genes up with the factor, blue for down.

    Genes are those of :func:`scsparse.tl.top_genes` (largest ``|w_jk|`` among ``p*_jk > pip_threshold``); the
    direction comes from the data (correlation of the gene's expression with the factor across cells), not from
    the sign of ``w_jk``. Anchor genes (the gene's only programme) are marked with ``*``.

    Parameters
    ----------
    adata
        AnnData with results of :func:`scsparse.tl.sparse_vae` under ``key``.
    key
        The ``key_added`` of the fit.
    n_top
        Genes per factor.
    factors
        Factor names or indices (default: the active factors).
    pip_threshold
        Inclusion threshold on ``p*``.
    layer
        Expression layer for the direction (default: the model's training layer, else ``X``).
    ncols
        Panels per row.
    panel_size
        Width and height of one panel (inches).
    show, save, ax
        As in the other ``scsparse.pl`` functions; ``ax`` only for a single factor.

    Returns
    -------
    matplotlib.axes.Axes, list of Axes, or None
        One axes per factor when ``show`` is false.

    Examples
    --------
    >>> scsparse.pl.top_genes(adata, n_top=8, factors=["factor_0", "factor_3"])
    """
    from scsparse.tl import top_genes as top_genes_table

    res = read_results(adata, key)
    names = res.resolve(factors)
    table = top_genes_table(adata, key=key, n_top=n_top, pip_threshold=pip_threshold, factors=names, layer=layer)
    if ax is not None and len(names) > 1:
        raise ValueError(f"ax= needs a single factor, but {len(names)} are requested.")
    if ax is None:
        ncols = max(1, min(int(ncols), len(names)))
        nrows = int(np.ceil(len(names) / ncols))
        fig, grid = plt.subplots(
            nrows,
            ncols,
            figsize=(panel_size[0] * ncols, panel_size[1] * nrows),
            squeeze=False,
            gridspec_kw={"wspace": 0.75, "hspace": 0.45},
        )
        axes = list(grid.ravel())
        for extra in axes[len(names) :]:
            extra.set_visible(False)
        axes = axes[: len(names)]
    else:
        fig, axes = ax.figure, [ax]
    for panel, f in zip(axes, names, strict=True):
        sub = table[table["factor"] == f]
        if not len(sub):
            panel.text(0.5, 0.5, f"no gene with\np* > {pip_threshold:g}", ha="center", va="center", fontsize=8)
            panel.set_axis_off()
            panel.set_title(f, fontsize=9)
            continue
        direction = sub["direction"].to_numpy()
        colours = np.where(direction == "positive", "#c0392b", np.where(direction == "negative", "#2e6fb7", "0.6"))
        ypos = np.arange(len(sub))
        panel.barh(ypos, sub["abs_loading"].to_numpy(), color=colours, height=0.75)
        labels = [f"{g}*" if a else str(g) for g, a in zip(sub["gene"], sub["anchor"], strict=True)]
        panel.set_yticks(ypos)
        panel.set_yticklabels(labels, fontsize=label_fontsize(panel, len(sub), max_size=8.0))
        panel.set_ylim(len(sub) - 0.5, -0.5)
        panel.tick_params(axis="both", length=2, pad=1.5, labelsize=7)
        panel.set_xlabel("|w|", fontsize=8)
        panel.set_title(f, fontsize=9)
        for side in ("top", "right"):
            panel.spines[side].set_visible(False)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in ("#c0392b", "#2e6fb7")]
    names_legend = ["up with factor", "down with factor"]
    if ax is None:  # just above the panel titles of the first row: never over tick labels, no gap
        top = max(a.get_position().y1 for a in axes) + 0.32 / fig.get_figheight()
        fig.legend(
            handles, names_legend, loc="lower center", ncol=2, fontsize=8, frameon=False, bbox_to_anchor=(0.5, top)
        )
    else:  # bars are sorted by length, so the lower right corner is free
        ax.legend(handles, names_legend, loc="lower right", fontsize=7, frameon=False)
    out = axes[0] if len(axes) == 1 else axes
    return out if finish(fig, show, save) else None
