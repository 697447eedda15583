"""Factor activity by group (condition, cell type, cluster): violins or boxes, one panel per factor."""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import Literal

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from anndata import AnnData
from matplotlib.axes import Axes

from scsparse._checks import did_you_mean
from scsparse.results import MissingResultsError, read_results

from ._figure import finish

__all__ = ["factor_activity"]


def _short(label: str, max_chars: int) -> str:
    return label if len(label) <= max_chars else label[: max(1, max_chars - 1)] + "…"


def factor_activity(
    adata: AnnData,
    groupby: str,
    *,
    key: str = "sparsevae",
    factors: Sequence[str | int] | None = None,
    kind: Literal["violin", "box"] = "violin",
    order: Sequence[str] | None = None,
    ncols: int = 4,
    panel_size: tuple[float, float] | None = None,
    n_genes_title: int = 2,
    label_max_chars: int = 18,
    show: bool | None = None,
    save: str | PathLike[str] | None = None,
    ax: Axes | None = None,
) -> Axes | list[Axes] | None:
    """Distribution of each factor's activity (posterior mean ``z``) in each group of an ``obs`` column.

    One panel per factor, a violin (or box) per group, with the group's median marked. Panels are titled with the
    factor and its first top genes. Group labels are truncated to ``label_max_chars`` characters and rotated when
    there are many groups, so they never overlap. With multi-study results, a study-specific factor is shown on
    its own study's cells only.

    Parameters
    ----------
    adata
        AnnData with results of :func:`scsparse.tl.sparse_vae` under ``key``.
    groupby
        Column of ``adata.obs`` (categorical or strings).
    key
        The ``key_added`` of the fit.
    factors
        Factor names or indices (default: the active factors).
    kind
        ``"violin"`` or ``"box"``.
    order
        Order of the groups (default: the categories, or sorted values).
    ncols
        Panels per row.
    panel_size
        Width and height of one panel in inches (default: grows with the number of groups).
    n_genes_title
        Top genes named in each title.
    label_max_chars
        Longest group label.
    show, save, ax
        As in the other ``scsparse.pl`` functions; ``ax`` only for a single factor.

    Returns
    -------
    matplotlib.axes.Axes, list of Axes, or None
        One axes per factor when ``show`` is false.

    Examples
    --------
    >>> scsparse.pl.factor_activity(adata, "cell_type", factors=["factor_0", "factor_3"], kind="box")
    """
    if kind not in ("violin", "box"):
        raise ValueError(f"kind must be 'violin' or 'box', got {kind!r}.")
    res = read_results(adata, key)
    names = res.resolve(factors)
    if groupby not in adata.obs.columns:
        raise MissingResultsError(
            f"groupby={groupby!r} is not a column of adata.obs{did_you_mean(groupby, adata.obs.columns)} "
            f"({list(adata.obs.columns)})."
        )
    labels = adata.obs[groupby]
    if order is None:
        if isinstance(labels.dtype, pd.CategoricalDtype):
            order = [str(c) for c in labels.cat.categories if (labels == c).any()]
        else:
            order = sorted(labels.dropna().astype(str).unique())
    order = [str(g) for g in order]
    lab = labels.astype(str).to_numpy()
    n_groups = len(order)
    if ax is not None and len(names) > 1:
        raise ValueError(f"ax= needs a single factor, but {len(names)} are requested.")
    longest = min(label_max_chars, max(map(len, order)))
    width = panel_size[0] if panel_size is not None else max(2.4, 0.38 * n_groups + 1.0)
    if ax is not None:
        width = ax.get_position().width * ax.figure.get_figwidth() / 0.75
    # rotate the group labels only when the longest (about 0.6 em per character at 8 pt) is wider than its slot
    rotate = 0.6 * 8 * longest > 0.9 * (0.75 * width * 72 / n_groups)
    if ax is None:
        if panel_size is None:
            panel_size = (width, 2.6 + (0.06 * longest if rotate else 0.0))
        ncols = max(1, min(int(ncols), len(names)))
        nrows = int(np.ceil(len(names) / ncols))
        fig, grid = plt.subplots(
            nrows,
            ncols,
            figsize=(panel_size[0] * ncols, panel_size[1] * nrows),
            squeeze=False,
            gridspec_kw={"wspace": 0.35, "hspace": 0.9 if rotate else 0.5},
        )
        axes = list(grid.ravel())
        for extra in axes[len(names) :]:
            extra.set_visible(False)
        axes = axes[: len(names)]
    else:
        fig, axes = ax.figure, [ax]
    colours = plt.get_cmap("tab10" if n_groups <= 10 else "tab20")(np.arange(n_groups) % (10 if n_groups <= 10 else 20))
    for panel, f in zip(axes, names, strict=True):
        z = res.Z[:, res.factor_names.index(f)]
        mask = res.cell_masks.get(f)  # a study-specific factor: its study's cells only
        cells = np.ones(z.shape[0], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        data = [z[cells & (lab == g)] for g in order]
        positions = np.arange(n_groups)
        nonempty = [i for i, d in enumerate(data) if d.size > 0]
        if kind == "violin":
            parts = panel.violinplot(
                [data[i] for i in nonempty], positions=positions[nonempty], widths=0.8, showextrema=False
            )
            for body, i in zip(parts["bodies"], nonempty, strict=True):
                body.set_facecolor(colours[i])
                body.set_edgecolor("0.3")
                body.set_linewidth(0.4)
                body.set_alpha(0.75)
            medians = [np.median(data[i]) for i in nonempty]
            panel.scatter(positions[nonempty], medians, s=10, c="white", edgecolors="black", linewidths=0.6, zorder=3)
        else:
            box = panel.boxplot(
                [data[i] for i in nonempty],
                positions=positions[nonempty],
                widths=0.6,
                patch_artist=True,
                showfliers=False,
                medianprops={"color": "black", "linewidth": 0.8},
            )
            for patch, i in zip(box["boxes"], nonempty, strict=True):
                patch.set_facecolor(colours[i])
                patch.set_alpha(0.75)
                patch.set_linewidth(0.5)
        panel.axhline(0.0, color="0.7", linewidth=0.5, zorder=0)
        panel.set_xticks(positions)
        panel.set_xticklabels(
            [_short(g, label_max_chars) for g in order],
            rotation=90 if rotate else 0,
            fontsize=7 if rotate else 8,
        )
        panel.tick_params(axis="both", length=2, pad=1.5, labelsize=7)
        panel.set_xlim(-0.6, n_groups - 0.4)
        genes = res.top_genes.get(f, [])[:n_genes_title]
        panel.set_title(f if not genes else f"{f}\n{', '.join(genes)}", fontsize=8)
        panel.set_ylabel("activity z", fontsize=8)
        for side in ("top", "right"):
            panel.spines[side].set_visible(False)
    out = axes[0] if len(axes) == 1 else axes
    return out if finish(fig, show, save) else None
