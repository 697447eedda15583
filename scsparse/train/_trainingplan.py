"""Training plan of the sparse VAE: gradient (M) steps, then the closed-form EM update of the SSL prior."""

from __future__ import annotations

from typing import Any, Literal

import torch
from scvi.train import TrainingPlan

__all__ = ["SparseVAETrainingPlan"]


class SparseVAETrainingPlan(TrainingPlan):
    """:class:`scvi.train.TrainingPlan` with the Spike-and-Slab Lasso EM update after optimiser steps.

    After every training step (``em_every="step"``, Algorithm 1 of Moran et al. 2022) or every epoch
    (``em_every="epoch"``) the module's ``em_update()`` recomputes the inclusion probabilities ``p*`` and
    the column weights ``eta`` from the current mask, without gradients. At the end of each epoch the
    number of active factors is logged (``n_active_factors`` in ``model.history``).

    Parameters
    ----------
    module
        A module with ``em_update()`` and ``active_factor_mask()``.
    em_every
        When to run the EM update.
    **kwargs
        Passed to :class:`scvi.train.TrainingPlan` (``lr``, ``weight_decay``, ``n_epochs_kl_warmup`` ...).
    """

    def __init__(self, module, *, em_every: Literal["step", "epoch"] = "step", **kwargs: Any) -> None:
        if em_every not in ("step", "epoch"):
            raise ValueError(f"em_every must be 'step' or 'epoch', got {em_every!r}.")
        super().__init__(module, **kwargs)
        self.em_every = em_every

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        """Run the EM update after each optimiser step when ``em_every == "step"``."""
        if self.em_every == "step":
            with torch.no_grad():
                self.module.em_update()

    def on_train_epoch_end(self) -> None:
        """Run the per-epoch EM update if asked for, and log how many factors are active."""
        if self.em_every == "epoch":
            with torch.no_grad():
                self.module.em_update()
        n_active = self.module.active_factor_mask().sum().float()
        self.log("n_active_factors", n_active, on_step=False, on_epoch=True, sync_dist=self.use_sync_dist)
        super().on_train_epoch_end()
