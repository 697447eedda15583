"""Timing helpers shared by the sections of ``scsparse bench speed``: an epoch timer and the timed fits' settings."""

from __future__ import annotations

import math
import statistics
import time
from typing import Any

from lightning.pytorch.callbacks import Callback

from .._fits import scvi_tools_fit

__all__ = ["SCVI_DEFAULT_LATENT", "EpochTimer", "sync_device", "timed_train_kwargs"]

#: SCVI's default number of latent factors; the epoch section also times both models at it.
SCVI_DEFAULT_LATENT = 10


def sync_device(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


class EpochTimer(Callback):
    """Lightning callback recording the wall time of every training epoch."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.epochs: list[float] = []
        self._start = 0.0

    def on_train_epoch_start(self, trainer, pl_module) -> None:  # noqa: D102
        sync_device(self.device)
        self._start = time.perf_counter()

    def on_train_epoch_end(self, trainer, pl_module) -> None:  # noqa: D102
        sync_device(self.device)
        self.epochs.append(time.perf_counter() - self._start)

    def per_epoch(self) -> float:
        """Median epoch time, leaving out the first epoch (warm-up) when there are several."""
        if not self.epochs:
            return math.nan
        return statistics.median(self.epochs[1:] if len(self.epochs) > 1 else self.epochs)


def timed_train_kwargs(device: str, batch_size: int, timer: EpochTimer, scsparse_model: bool = True) -> dict[str, Any]:
    """`train()` arguments of a timed fit: every cell trains, no logger or checkpoints, the timer as a callback."""
    accelerator = "gpu" if device.startswith("cuda") else "cpu"
    kwargs: dict[str, Any] = {
        "batch_size": batch_size,
        "train_size": 1.0,
        "accelerator": accelerator,
        "enable_progress_bar": False,
        "logger": False,
        "enable_checkpointing": False,
        "callbacks": [timer],
    }
    if scsparse_model:
        kwargs["stop_when_settled"] = False  # timed epochs, nothing to settle
    if ":" in device:
        kwargs["devices"] = [int(device.split(":")[1])]
    return kwargs


def scvi_epoch_seconds(
    adata, *, n_latent: int, n_hidden: int, epochs: int, batch_size: int, device: str, seed: int
) -> float:
    """Median epoch time of a fresh ``scvi.model.SCVI`` trained ``epochs`` epochs on ``adata`` (the first left out)."""
    import scvi

    timer = EpochTimer(device)
    network = {"n_hidden": n_hidden, "n_latent": n_latent}
    train = {"max_epochs": epochs, **timed_train_kwargs(device, batch_size, timer, scsparse_model=False)}
    with scvi_tools_fit(scvi.model.SCVI, adata, seed, setup={"layer": "counts"}, model=network, train=train):
        return timer.per_epoch()
