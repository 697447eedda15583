"""Response curves: decoded expression of a factor's genes along its traversal."""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

from scsparse.results import FactorResponse

from ._figure import finish

__all__ = ["factor_response"]


def _default_genes(response: FactorResponse, name: str, n_genes: int, pip_threshold: float | None) -> list[str]:
    """The ``n_genes`` genes of the programme that change most, rising ones first (each by decreasing change).

    All genes are candidates when no gene passes ``pip_threshold`` (a switched-off factor drawn on purpose).
    """
    top = response.top_genes(name, n_genes, pip_threshold)
    if top.empty:
        top = response.top_genes(name, n_genes, None)
    up = top[top["direction"] == "up"].sort_values("effect", ascending=False)
    down = top[top["direction"] == "down"].sort_values("effect")
    return list(up["gene"]) + list(down["gene"])


def _draw(
    ax: Axes,
    response: FactorResponse,
    name: str,
    genes: Sequence[str] | None,
    n_genes: int,
    pip_threshold: float | None,
    log: bool | None,
) -> None:
    """One factor's panel: a line per gene, rising genes in warm colours, falling ones in cool colours."""
    curve = response.curve(name)
    effect = response.effects()[name]
    genes = _default_genes(response, name, n_genes, pip_threshold) if genes is None else genes
    x = curve.index.to_numpy()
    rising, falling = plt.get_cmap("autumn"), plt.get_cmap("winter")
    n_up = max(1, int((effect.loc[genes] >= 0).sum()))
    n_down = max(1, len(genes) - n_up)
    i_up = i_down = 0
    for gene in genes:
        if effect[gene] >= 0:
            color, i_up = rising(0.75 * i_up / n_up), i_up + 1
        else:
            color, i_down = falling(0.85 * i_down / n_down), i_down + 1
        ax.plot(x, curve[gene].to_numpy(), marker="o", markersize=2.5, linewidth=1.3, color=color, label=gene)
    if log if log is not None else response.is_counts:
        ax.set_yscale("log")
    ax.set_xlabel(f"{name} (value set in every cell)", fontsize=8)
    ax.set_ylabel(f"mean decoded expression\n({response.unit})", fontsize=8)
    ax.set_title(f"response to {name} ({int(response.n_cells[name])} cells)", fontsize=9)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))


def factor_response(
    response: FactorResponse,
    factors: Sequence[str | int] | str | int | None = None,
    *,
    genes: Sequence[str] | None = None,
    n_genes: int = 8,
    pip_threshold: float | None = 0.5,
    log: bool | None = None,
    ncols: int = 3,
    panel_size: tuple[float, float] = (4.6, 3.2),
    show: bool | None = None,
    save: str | PathLike[str] | None = None,
    ax: Axes | None = None,
) -> Axes | list[Axes] | None:
    """Decoded expression of genes along factors' traversals (from ``model.get_factor_response()``).

    One panel per factor and one line per gene: the mean decoded expression (counts per 10,000 by default) as the
    factor goes from the low to the high end of its traversal. Rising genes are drawn in warm colours, falling ones
    in cool colours.

    Parameters
    ----------
    response
        The result of :meth:`scsparse.model.SparseVAE.get_factor_response`.
    factors
        Names or positions (among the model's factors) of traversed factors to draw; ``None``: all traversed
        factors.
    genes
        Genes to draw in every panel; default: per factor the ``n_genes`` genes of its programme (``p* >
        pip_threshold``) with the largest change from end to end (:meth:`~scsparse.model.FactorResponse.top_genes`),
        rising ones first.
    n_genes
        Number of genes per panel when ``genes`` is ``None``.
    pip_threshold
        Programme membership for the default genes; ``None`` considers every gene (genes in the spike have small
        but non-zero ``w_jk`` and can move too). A factor without a gene above it draws from every gene.
    log
        Log scale for the expression axis (default: for count likelihoods).
    ncols
        Panels per row.
    panel_size
        Width and height of one panel when ``ax`` is ``None``.
    show, save
        As in the other ``scsparse.pl`` functions.
    ax
        Axes for a single factor's panel.

    Returns
    -------
    matplotlib.axes.Axes, list of them, or None
        When ``show`` is false: the axes for a single factor (``factors`` a name or a position), otherwise the
        list of the panels' axes.

    Raises
    ------
    scsparse.model.InvalidInputError
        A factor that was not traversed, a gene that is not in the model, or ``ax`` with several factors.

    Examples
    --------
    >>> response = model.get_factor_response()
    >>> scsparse.pl.factor_response(response, "factor_3", save="factor_3_response.png")
    >>> scsparse.pl.factor_response(response, n_genes=6, save="responses.png")  # every active factor
    """
    from scsparse.model import InvalidInputError

    if not isinstance(response, FactorResponse):
        raise InvalidInputError(
            f"Expected the FactorResponse of model.get_factor_response(), got {type(response).__name__}."
        )
    if factors is None:
        names = response.factors
    else:
        listed = [factors] if isinstance(factors, str | int | np.integer) else list(factors)
        names = [response.factor_name(f) for f in listed]
    if genes is None:
        if isinstance(n_genes, bool) or not isinstance(n_genes, int | np.integer) or n_genes < 1:
            raise InvalidInputError(f"n_genes must be a positive integer, got {n_genes!r}.")
    else:
        genes = [str(g) for g in genes]
        missing = [g for g in genes if g not in response.genes]
        if missing:
            raise InvalidInputError(f"Gene(s) not in the model: {missing[:5]}. Use names from adata.var_names.")
    if ax is not None and len(names) != 1:
        raise InvalidInputError(f"ax= draws one factor's panel; {len(names)} factors were asked for.")
    if ax is not None:
        fig, axes = ax.figure, [ax]
    else:
        ncols = max(1, min(int(ncols), len(names)))
        nrows = int(np.ceil(len(names) / ncols))
        fig, grid = plt.subplots(
            nrows, ncols, figsize=(panel_size[0] * ncols, panel_size[1] * nrows), squeeze=False, layout="constrained"
        )
        axes = list(grid.ravel())
        for extra in axes[len(names) :]:
            extra.set_visible(False)
        axes = axes[: len(names)]
    for panel, name in zip(axes, names, strict=True):
        _draw(panel, response, name, genes, int(n_genes), pip_threshold, log)
    single = isinstance(factors, str | int | np.integer)
    result = axes[0] if single else axes
    return result if finish(fig, show, save) else None
