"""Factor activity of a sparse VAE on a 2-d embedding (UMAP, t-SNE, ...), drawn with scanpy."""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from anndata import AnnData
from matplotlib.axes import Axes

from scsparse.results import MissingResultsError, read_results

from ._figure import finish

__all__ = ["factor_embedding"]


def _embedding_error(adata: AnnData, basis: str, key: str) -> MissingResultsError:
    available = [k.removeprefix("X_") for k in adata.obsm if k.startswith("X_")]
    return MissingResultsError(
        f"adata.obsm['X_{basis}'] not found (available bases: {available}). Compute the embedding on the "
        f"sparse VAE factors first, e.g. `sc.pp.neighbors(adata, use_rep='X_{key}')` and `sc.tl.umap(adata)`, "
        "or pass basis= naming an existing embedding."
    )


def factor_embedding(
    adata: AnnData,
    *,
    key: str = "sparsevae",
    basis: str = "umap",
    factors: Sequence[str | int] | None = None,
    color_extra: Sequence[str] | str | None = None,
    ncols: int = 4,
    n_genes_title: int = 3,
    cmap: str = "RdBu_r",
    size: float | None = None,
    panel_size: tuple[float, float] = (3.4, 3.0),
    show: bool | None = None,
    save: str | PathLike[str] | None = None,
    ax: Axes | None = None,
    **kwargs,
) -> Axes | list[Axes] | None:
    """Scatter of each factor's activity (posterior mean ``z_ik``) on an embedding, one panel per factor.

    Each panel is titled with the factor and its first top genes (``adata.uns[key]["top_genes"]``) and uses a
    diverging colour map centred at 0, clipped symmetrically at the 99th percentile of ``|z_k|``. Drawn with
    :func:`scanpy.pl.embedding` on a lightweight AnnData, so ``adata`` is not modified. With multi-study results
    (``key`` of a :class:`~scsparse.model.MultiStudySparseVAE`), a study-specific factor is drawn on its own
    study's cells and the other cells are grey.

    Parameters
    ----------
    adata
        AnnData with sparse VAE results under ``key`` and an embedding in ``adata.obsm[f"X_{basis}"]``.
    key
        The ``key_added`` of the fit (reads ``adata.obsm[f"X_{key}"]`` and ``adata.uns[key]``).
    basis
        Embedding to draw on: ``adata.obsm[f"X_{basis}"]`` (e.g. ``"umap"``, ``"tsne"``, ``"pca"``).
    factors
        Factor names or indices (default: the active factors). ``[]`` draws only ``color_extra``.
    color_extra
        Further panels after the factors: columns of ``adata.obs`` or genes (``adata.var_names``; values
        from ``adata.X``).
    ncols
        Panels per row.
    n_genes_title
        Number of top genes named in each factor's title.
    cmap
        Colour map of the factor panels (diverging; genes use ``"viridis"``).
    size
        Point size (default: scanpy's, ``120000 / n_cells``).
    panel_size
        Width and height of one panel in inches.
    show
        Show the figure (default: only when ``save`` is not given).
    save
        Path to write the figure to (dpi 150, tight bounding box).
    ax
        Axes to draw in; only for a single panel.
    **kwargs
        Passed to :func:`scanpy.pl.embedding` (``frameon``, ``legend_loc``, ``sort_order``, ...).

    Returns
    -------
    matplotlib.axes.Axes, list of Axes, or None
        When ``show`` is false: the axes (one per panel; a single Axes for a single panel). ``None`` otherwise.

    Raises
    ------
    KeyError
        When there are no results under ``key``, when ``adata.obsm[f"X_{basis}"]`` is missing (the message
        says how to compute it), or when a ``color_extra`` entry is neither an obs column nor a gene.

    Examples
    --------
    >>> import scanpy as sc
    >>> import scsparse
    >>> scsparse.tl.sparse_vae(adata, layer="counts")
    >>> sc.pp.neighbors(adata, use_rep="X_sparsevae")
    >>> sc.tl.umap(adata)
    >>> scsparse.pl.factor_embedding(adata, color_extra=["cell_type"])
    >>> axes = scsparse.pl.factor_embedding(adata, factors=["factor_0"], show=False, save="factor_0.png")
    """
    import scanpy as sc

    res = read_results(adata, key)
    if f"X_{basis}" not in adata.obsm:
        raise _embedding_error(adata, basis, key)
    coords = np.asarray(adata.obsm[f"X_{basis}"])
    names = [] if factors is not None and len(factors) == 0 else res.resolve(factors)
    extras = [color_extra] if isinstance(color_extra, str) else list(color_extra or [])

    # a lightweight AnnData carrying only what is drawn: the user's object is never touched
    obs = pd.DataFrame(index=adata.obs_names.copy())
    uns: dict = {}
    panels: list[tuple[str, str, dict]] = []
    for f in names:
        z = np.asarray(res.Z[:, res.factor_names.index(f)], dtype=np.float64)
        if res.cell_masks.get(f) is not None:  # a study-specific factor: grey outside its study
            z = np.where(res.cell_masks[f], z, np.nan)
        col = f"__factor__{f}"
        obs[col] = z
        lim = float(np.nanpercentile(np.abs(z), 99)) or 1.0
        genes = res.top_genes.get(f, [])[:n_genes_title]
        title = f if not genes else f"{f}\n{', '.join(genes)}"
        panels.append((col, title, {"vmin": -lim, "vmax": lim, "cmap": cmap}))
    for name in extras:
        col = f"__extra__{name}"
        if name in adata.obs.columns:
            obs[col] = adata.obs[name].to_numpy()
            if isinstance(adata.obs[name].dtype, pd.CategoricalDtype):
                obs[col] = pd.Categorical(adata.obs[name])
                if f"{name}_colors" in adata.uns:
                    uns[f"{col}_colors"] = adata.uns[f"{name}_colors"]
            panels.append((col, name, {}))
        elif name in adata.var_names:
            obs[col] = np.asarray(adata.obs_vector(name), dtype=float)
            panels.append((col, name, {"cmap": "viridis"}))
        else:
            raise MissingResultsError(f"color_extra entry {name!r} is neither a column of adata.obs nor a gene.")
    if not panels:
        raise ValueError("Nothing to draw: no factors and no color_extra.")
    plot_data = AnnData(obs=obs, obsm={f"X_{basis}": coords}, uns=uns)

    is_categorical = [isinstance(obs[col].dtype, pd.CategoricalDtype) for col, _, _ in panels]
    if ax is not None and len(panels) > 1:
        raise ValueError(f"ax= needs a single panel, but {len(panels)} are requested; leave ax=None.")
    if ax is None:
        ncols = max(1, min(int(ncols), len(panels)))
        nrows = int(np.ceil(len(panels) / ncols))
        width = panel_size[0] * (1.4 if all(is_categorical) else 1.0)
        fig, grid = plt.subplots(
            nrows,
            ncols,
            figsize=(width * ncols, panel_size[1] * nrows),
            squeeze=False,
            gridspec_kw={"wspace": 0.15, "hspace": 0.35},
        )
        axes = list(grid.ravel())
        for extra_ax in axes[len(panels) :]:
            extra_ax.set_visible(False)
        axes = axes[: len(panels)]
    else:
        fig, axes = ax.figure, [ax]
    kwargs.setdefault("frameon", False)
    kwargs.setdefault("legend_fontsize", 8)
    for panel_ax, (col, title, style), categorical in zip(axes, panels, is_categorical, strict=True):
        sc.pl.embedding(
            plot_data, basis=basis, color=col, title=title, ax=panel_ax, show=False, size=size, **style, **kwargs
        )
        panel_ax.title.set_fontsize(9)
        if categorical and ax is None:
            # leave room in the panel's own grid cell for scanpy's legend (drawn right of the axes)
            box = panel_ax.get_position()
            panel_ax.set_position([box.x0, box.y0, box.width * 0.62, box.height])
    out = axes[0] if len(axes) == 1 else axes
    return out if finish(fig, show, save) else None
