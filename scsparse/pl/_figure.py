"""What every plot of :mod:`scsparse.pl` does at the end: tick-label sizes that fit, and save and/or show."""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import Literal

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

from scsparse._io import save_figure

__all__ = ["finish", "label_fontsize", "rotate_xlabels"]


def finish(fig: plt.Figure, show: bool | None, save: str | PathLike[str] | None) -> bool:
    """Save (dpi 150, tight; a path is written whole or not at all) and/or show; returns whether the caller should
    return its axes.
    """
    if isinstance(save, str | PathLike):
        save_figure(fig, save, dpi=150, bbox_inches="tight")
    elif save is not None:  # an open binary file
        fig.savefig(save, dpi=150, bbox_inches="tight")
    if show is None:
        show = save is None
    if show:
        plt.show()
        return False
    return True


def label_fontsize(
    ax: Axes, n_labels: int, axis: Literal["x", "y"] = "y", max_size: float = 9.0, min_size: float = 3.0
) -> float:
    """Font size (points) at which ``n_labels`` tick labels fit the height (or width) of ``ax`` without overlap."""
    pos = ax.get_position()
    if axis == "y":
        extent_pt = pos.height * ax.figure.get_figheight() * 72
    else:
        extent_pt = pos.width * ax.figure.get_figwidth() * 72
    return float(np.clip(0.75 * extent_pt / max(n_labels, 1), min_size, max_size))


def rotate_xlabels(ax: Axes, labels: Sequence[str], fontsize: float) -> int:
    """0, or 90 when the longest label (about 0.6 em per character) is wider than the space of one column."""
    pos = ax.get_position()
    column_pt = pos.width * ax.figure.get_figwidth() * 72 / max(len(labels), 1)
    widest_pt = 0.6 * fontsize * max((len(str(s)) for s in labels), default=0)
    return 90 if widest_pt > 0.9 * column_pt else 0
