"""Overview of a multi-study sparse VAE: shared and study-specific factors, their size and top genes."""

from __future__ import annotations

from os import PathLike

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from anndata import AnnData
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from scsparse.results import MissingResultsError

from ._figure import finish, label_fontsize

__all__ = ["multistudy_overview"]


def _factor_table(adata: AnnData, key: str) -> pd.DataFrame:
    if key not in adata.uns or "factor_table" not in adata.uns[key]:
        found = [k for k in adata.uns if isinstance(adata.uns[k], dict) and "factor_table" in adata.uns[k]]
        hint = f" Multi-study results found under key(s): {found}." if found else ""
        raise MissingResultsError(
            f"No multi-study factor table in adata.uns[{key!r}]['factor_table']. Run "
            f"`model.write_results(adata, key_added={key!r})` with a MultiStudySparseVAE first.{hint}"
        )
    table = adata.uns[key]["factor_table"]
    table = table if isinstance(table, pd.DataFrame) else pd.DataFrame(table)
    needed = {"factor", "kind", "study", "active", "n_genes"}
    if not needed <= set(table.columns):
        raise ValueError(f"adata.uns[{key!r}]['factor_table'] lacks columns {sorted(needed - set(table.columns))}.")
    return table.reset_index(drop=True)


def multistudy_overview(
    adata: AnnData,
    *,
    key: str = "mssvae",
    active_only: bool = False,
    n_genes_label: int = 3,
    label_max_chars: int = 48,
    figsize: tuple[float, float] | None = None,
    show: bool | None = None,
    save: str | PathLike[str] | None = None,
    ax: Axes | None = None,
) -> Axes | None:
    """Shared vs study-specific programmes at a glance, from ``adata.uns[key]["factor_table"]``.

    One horizontal bar per factor, grouped by block (shared, then each study's specific factors): the bar length
    is the number of genes with ``p* > 0.5``, the colour the block; factors the prior switched off are drawn pale
    and hatched. Each label names the factor and its first top genes. The title counts the active factors per
    block.

    Parameters
    ----------
    adata
        AnnData with the results of :meth:`MultiStudySparseVAE.write_results
        <scsparse.model.MultiStudySparseVAE.write_results>` under ``key``.
    key
        The ``key_added`` of the multi-study fit.
    active_only
        Show only the active factors.
    n_genes_label
        Top genes in each label.
    label_max_chars
        Longest label (truncated with an ellipsis).
    figsize
        Figure size when ``ax`` is ``None`` (default: grows with the number of factors).
    show, save, ax
        As in the other ``scsparse.pl`` functions.

    Returns
    -------
    matplotlib.axes.Axes or None
        The axes when ``show`` is false.

    Examples
    --------
    >>> model.write_results(adata, key_added="mssvae")
    >>> scsparse.pl.multistudy_overview(adata, key="mssvae", save="overview.png")
    """
    table = _factor_table(adata, key)
    table["active"] = table["active"].astype(bool)
    table["block"] = np.where(table["kind"].astype(str) == "shared", "shared", table["study"].astype(str) + " specific")
    blocks = list(dict.fromkeys(table["block"]))
    counts = {b: (int(table.loc[table.block == b, "active"].sum()), int((table.block == b).sum())) for b in blocks}
    if active_only:
        table = table[table["active"]].reset_index(drop=True)
    if not len(table):
        raise ValueError(f"No factor to show (active_only={active_only}); the prior switched every factor off.")
    palette = plt.get_cmap("tab10")
    colour = {b: palette(i % 10) for i, b in enumerate(blocks)}
    labels = []
    for _, row in table.iterrows():
        genes = [g.strip() for g in str(row.get("top_genes", "")).split(",") if g.strip()][:n_genes_label]
        text = f"{row['factor']}: {', '.join(genes)}" if genes else str(row["factor"])
        labels.append(text if len(text) <= label_max_chars else text[: label_max_chars - 1] + "…")
    n = len(table)
    if ax is None:
        if figsize is None:
            figsize = (3.2 + 0.055 * max(len(s) for s in labels), 1.2 + 0.24 * n)
        fig, ax = plt.subplots(figsize=figsize)
    fig = ax.figure
    y = np.arange(n)
    n_genes = table["n_genes"].to_numpy(dtype=float)
    for i, row in table.iterrows():
        ax.barh(
            y[i],
            n_genes[i],
            height=0.7,
            color=colour[row["block"]],
            alpha=1.0 if row["active"] else 0.3,
            hatch=None if row["active"] else "///",
            edgecolor="0.3" if not row["active"] else colour[row["block"]],
            linewidth=0.4,
        )
        if not row["active"] and n_genes[i] == 0:  # a bar of length zero shows no hatching: say it
            ax.text(0, y[i], " inactive", va="center", ha="left", fontsize=6.5, color="0.35")
    for i in range(1, n):
        if table["block"].iloc[i] != table["block"].iloc[i - 1]:
            ax.axhline(i - 0.5, color="0.4", linewidth=0.6)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=label_fontsize(ax, n, max_size=8.0))
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlabel("genes with p* > 0.5", fontsize=9)
    ax.tick_params(axis="both", length=2, pad=1.5, labelsize=7)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    summary = "; ".join(f"{b}: {a}/{t} active" for b, (a, t) in counts.items())
    ax.set_title(f"{key}: shared and study-specific factors\n{summary}", fontsize=9)
    handles = [Patch(facecolor=colour[b], label=b) for b in blocks]
    handles.append(Patch(facecolor="white", edgecolor="0.3", hatch="///", label="inactive"))
    ax.legend(handles=handles, fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax if finish(fig, show, save) else None
