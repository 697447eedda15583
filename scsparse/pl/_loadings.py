"""Heatmap of the sparse VAE loadings ``W`` (or inclusion probabilities ``p*``) of the top genes per factor."""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import Literal

import matplotlib.pyplot as plt
import numpy as np
from anndata import AnnData
from matplotlib.axes import Axes
from matplotlib.colors import TwoSlopeNorm

from scsparse.results import read_results

from ._figure import finish, label_fontsize, rotate_xlabels

__all__ = ["loadings_heatmap"]


def loadings_heatmap(
    adata: AnnData,
    *,
    key: str = "sparsevae",
    n_top_genes: int = 5,
    factors: Sequence[str | int] | None = None,
    use: Literal["W", "pip", "directed"] = "W",
    pip_threshold: float | None = None,
    cmap: str | None = None,
    figsize: tuple[float, float] | None = None,
    show: bool | None = None,
    save: str | PathLike[str] | None = None,
    ax: Axes | None = None,
) -> Axes | None:
    """Heatmap of the loadings of each factor's top genes: genes (rows, grouped by factor) x factors.

    The rows are the union of each factor's ``n_top_genes`` top genes (by ``|w_jk|`` among genes with
    ``p*_jk > pip_threshold``), in the order of the factors, so that a sparse, identifiable solution shows
    as a block diagonal. Thin lines separate the genes contributed by each factor.

    Reads ``adata.varm[f"{key}_W"]``, ``adata.varm[f"{key}_pip"]`` and ``adata.uns[key]`` as written by
    :func:`scsparse.tl.sparse_vae` or :meth:`~scsparse.model.SparseVAE.write_results`.

    Parameters
    ----------
    adata
        AnnData with sparse VAE results.
    key
        The ``key_added`` of the fit.
    n_top_genes
        Top genes per factor.
    factors
        Factor names or indices (default: the active factors, ``adata.uns[key]["active_factors"]``).
    use
        ``"W"``: the loadings, diverging colour map centred at 0; ``"pip"``: the inclusion probabilities
        ``p*`` on ``[0, 1]``; ``"directed"``: ``|w_jk|`` with the sign of the gene's direction in the factor
        (the correlation across cells of its normalised expression with the factor's activity,
        :func:`scsparse.tl.factor_gene_correlation`), so red means the gene goes up with the factor. The sign of
        ``w_jk`` itself is not the direction of the effect (the decoder is nonlinear); ``"directed"`` needs the
        expression the model was trained on in ``adata``.
    pip_threshold
        Inclusion threshold to pick the top genes (default: ``adata.uns[key]["pip_threshold"]``, 0.5).
    cmap
        Colour map (default ``"RdBu_r"`` for ``W``, ``"Reds"`` for ``pip``).
    figsize
        Figure size in inches when ``ax`` is ``None`` (default: grows with the number of genes and factors).
    show
        Show the figure (default: only when ``save`` is not given).
    save
        Path to write the figure to (dpi 150, tight bounding box); the format follows the extension.
    ax
        Axes to draw in (a colour bar is added beside it).

    Returns
    -------
    matplotlib.axes.Axes or None
        The heatmap axes when ``show`` is false, else ``None``.

    Raises
    ------
    KeyError
        When there are no results under ``key``.
    ValueError
        When no factor is active (and ``factors`` is not given) or no gene passes the threshold.

    Examples
    --------
    >>> import scsparse
    >>> scsparse.tl.sparse_vae(adata, layer="counts")
    >>> scsparse.pl.loadings_heatmap(adata, n_top_genes=5)
    >>> ax = scsparse.pl.loadings_heatmap(adata, use="pip", show=False, save="pip.png")
    >>> ax = scsparse.pl.loadings_heatmap(adata, use="directed", show=False)  # red: up with the factor
    """
    if use not in ("W", "pip", "directed"):
        raise ValueError(f"use must be 'W', 'pip' or 'directed', got {use!r}.")
    res = read_results(adata, key)
    names = res.resolve(factors)
    tops = {f: res.programme_genes(f, n_top_genes, pip_threshold) for f in names}
    genes: list[str] = []
    owner: list[str] = []
    for f in names:
        for g in tops[f]:
            if g not in genes:
                genes.append(g)
                owner.append(f)
    if not genes:
        thr = res.pip_threshold if pip_threshold is None else pip_threshold
        raise ValueError(f"No gene has p* > {thr} for factors {names}; lower pip_threshold= or choose other factors.")
    gene_idx = adata.var_names.get_indexer(genes)
    fac_idx = [res.factor_names.index(f) for f in names]
    values = (res.pip if use == "pip" else res.W)[np.ix_(gene_idx, fac_idx)]
    if use == "directed":
        from scsparse.tl import factor_gene_correlation

        r = factor_gene_correlation(adata, key=key).to_numpy()[np.ix_(gene_idx, fac_idx)]
        values = np.abs(values) * np.sign(r)

    n_genes, n_fac = len(genes), len(names)
    if ax is None:
        if figsize is None:
            figsize = (1.6 + 0.42 * n_fac + 1.2, max(3.0, 0.17 * n_genes + 1.4))
        fig, ax = plt.subplots(figsize=figsize)
    fig = ax.figure
    if use in ("W", "directed"):
        vmax = float(np.nanmax(np.abs(values))) or 1.0
        norm = TwoSlopeNorm(vmin=-vmax, vcenter=0.0, vmax=vmax)
        image = ax.imshow(values, aspect="auto", cmap=cmap or "RdBu_r", norm=norm, interpolation="nearest")
        label = "loading $w_{jk}$" if use == "W" else "$|w_{jk}|$, signed by the gene's direction"
    else:
        image = ax.imshow(values, aspect="auto", cmap=cmap or "Reds", vmin=0.0, vmax=1.0, interpolation="nearest")
        label = "inclusion probability $p^*_{jk}$"
    fontsize = label_fontsize(ax, n_genes)
    ax.set_yticks(np.arange(n_genes))
    ax.set_yticklabels(genes, fontsize=fontsize)
    ax.set_xticks(np.arange(n_fac))
    short = [f.replace("factor_", "") for f in names]
    x_size = label_fontsize(ax, n_fac, axis="x")
    ax.set_xticklabels(short, fontsize=x_size, rotation=rotate_xlabels(ax, short, x_size))
    ax.set_xlabel("factor")
    ax.set_ylabel(f"top {n_top_genes} genes per factor")
    ax.tick_params(axis="both", length=2, pad=1.5)
    # separators between the gene groups of consecutive factors
    for i in range(1, n_genes):
        if owner[i] != owner[i - 1]:
            ax.axhline(i - 0.5, color="0.3", linewidth=0.5)
    # outline each factor's own block so the block-diagonal structure is easy to read
    for f in dict.fromkeys(owner):
        rows = [i for i, o in enumerate(owner) if o == f]
        col = names.index(f)
        ax.add_patch(
            plt.Rectangle(
                (col - 0.5, rows[0] - 0.5), 1, len(rows), fill=False, edgecolor="black", linewidth=0.8, zorder=3
            )
        )
    what = {"W": "W", "pip": "p*", "directed": "|W| (red: up with the factor)"}[use]
    ax.set_title(f"{key}: {what} of top genes", fontsize=10)
    cbar = fig.colorbar(image, ax=ax, shrink=float(np.clip(4.0 / fig.get_figheight(), 0.25, 1.0)), pad=0.02)
    cbar.set_label(label)
    return ax if finish(fig, show, save) else None
