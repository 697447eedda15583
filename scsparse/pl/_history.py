"""Training history of a sparse VAE: the ELBO and the number of active factors over epochs."""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from ._figure import finish

__all__ = ["training_history"]


def _series(history: Mapping[str, Any], name: str) -> pd.Series | None:
    if name not in history:
        return None
    value = history[name]
    if isinstance(value, pd.DataFrame):
        if value.shape[1] == 0:
            return None
        value = value.iloc[:, 0]
    series = pd.Series(value).astype(float).dropna()
    return series if len(series) else None


def training_history(
    model_or_history: Any,
    *,
    log_elbo: bool | None = None,
    figsize: tuple[float, float] = (5.0, 4.2),
    show: bool | None = None,
    save: str | PathLike[str] | None = None,
    ax: Axes | None = None,
) -> list[Axes] | None:
    """The training curve: the negative ELBO per cell (training, and validation when recorded) and the number
    of active factors, per epoch.

    Reads ``model.history`` (scvi-tools: a dict of one-column DataFrames indexed by epoch): ``elbo_train``,
    ``elbo_validation`` (when validation was run), ``n_active_factors`` (logged by the sparse VAE's training
    plan: factors with at least one gene with ``p* > 0.5``). A falling number of active factors shows the prior
    switching unused factors off; a flat one at ``n_latent`` means ``W`` is not sparse yet. Where ``train``
    recorded why it stopped (``history["stopping"]``), a dotted line marks the last epoch with the reason
    (``settled``, ``max_epochs``).

    Parameters
    ----------
    model_or_history
        A trained model (anything with ``.history``) or the history mapping itself.
    log_elbo
        Log scale for the ELBO axis (default: when it spans more than a factor of 10).
    figsize
        Figure size when ``ax`` is ``None`` (two stacked panels sharing the epoch axis).
    show, save
        As in the other ``scsparse.pl`` functions.
    ax
        Draw into these axes: the ELBO on ``ax`` and the active factors on a twin y axis.

    Returns
    -------
    list of matplotlib.axes.Axes or None
        ``[elbo_axes, active_factors_axes]`` (or only the first when ``n_active_factors`` was not logged) when
        ``show`` is false.

    Raises
    ------
    ValueError
        The history has no ``elbo_train`` (the model is not trained).

    Examples
    --------
    >>> model.train(max_epochs=100)
    >>> scsparse.pl.training_history(model, save="history.png")
    """
    history = getattr(model_or_history, "history", model_or_history)
    if history is None or not isinstance(history, Mapping):
        raise ValueError("No training history: train the model first (model.history is empty).")
    elbo = _series(history, "elbo_train")
    if elbo is None:
        raise ValueError(f"The history has no 'elbo_train' (keys: {sorted(history)}); train the model first.")
    elbo_val = _series(history, "elbo_validation")
    active = _series(history, "n_active_factors")
    if ax is None:
        if active is not None:
            fig, (ax_elbo, ax_active) = plt.subplots(
                2, 1, figsize=figsize, sharex=True, gridspec_kw={"height_ratios": [2, 1], "hspace": 0.08}
            )
        else:
            fig, ax_elbo = plt.subplots(figsize=(figsize[0], figsize[1] * 0.7))
            ax_active = None
    else:
        fig, ax_elbo = ax.figure, ax
        ax_active = ax.twinx() if active is not None else None
    ax_elbo.plot(elbo.index.to_numpy(), elbo.to_numpy(), color="#1f4e79", linewidth=1.4, label="training")
    if elbo_val is not None:
        ax_elbo.plot(elbo_val.index.to_numpy(), elbo_val.to_numpy(), color="#d35400", linewidth=1.4, label="validation")
        ax_elbo.legend(fontsize=8, frameon=False)
    values = np.concatenate([elbo.to_numpy()] + ([elbo_val.to_numpy()] if elbo_val is not None else []))
    if log_elbo is None:
        positive = values[values > 0]
        log_elbo = bool(positive.size == values.size and positive.max() / positive.min() > 10)
    if log_elbo:
        ax_elbo.set_yscale("log")
    ax_elbo.set_ylabel("negative ELBO per cell", fontsize=9)
    ax_elbo.tick_params(labelsize=8)
    ax_elbo.set_title("training history", fontsize=10)
    if ax_active is not None:
        ax_active.step(active.index.to_numpy(), active.to_numpy(), where="post", color="#27ae60", linewidth=1.4)
        ax_active.set_ylabel("active factors", fontsize=9, color="#27ae60" if ax is not None else "black")
        lo, hi = float(active.min()), float(active.max())
        ax_active.set_ylim(max(0.0, lo - 1), hi + 1)
        ax_active.yaxis.get_major_locator().set_params(integer=True)
        ax_active.tick_params(labelsize=8)
    (ax_active if ax is None and ax_active is not None else ax_elbo).set_xlabel("epoch", fontsize=9)
    stopping = history.get("stopping")
    if isinstance(stopping, pd.DataFrame) and len(stopping):
        epoch, reason = float(stopping.index[-1]), str(stopping.iloc[-1, 0])
        ax_elbo.axvline(epoch, color="grey", linestyle=":", linewidth=1.0)
        ax_elbo.annotate(
            reason, (epoch, 1.0), xycoords=("data", "axes fraction"), ha="right", va="top", fontsize=7, color="grey"
        )
    axes = [ax_elbo] + ([ax_active] if ax_active is not None else [])
    return axes if finish(fig, show, save) else None
