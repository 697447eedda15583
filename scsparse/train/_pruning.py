"""Lightning callback that fixes the spike entries of ``W`` at zero once the warm-up is over."""

from __future__ import annotations

import torch
from lightning.pytorch import Callback, LightningModule, Trainer

__all__ = ["SpikePruning"]


class SpikePruning(Callback):
    """Prune the spike of the Spike-and-Slab Lasso: ``w_jk`` with ``p*_jk <= pip_threshold`` become exact zeros.

    Once, at the end of epoch ``start_epoch``, the entries of ``W`` whose inclusion probability is at most
    ``pip_threshold`` are fixed at zero for the rest of training, and the decoder computes each gene from
    its active factors (:meth:`scsparse.nn.MaskedDecoder.prune_`). Prune late, once the support of ``W``
    has settled: pruning is irreversible, and pruning every epoch from the end of the KL warm-up on removed
    every factor on simulated counts (entries near the spike/slab boundary cross it back and forth early
    in training). After every optimiser
    step the pruned entries are reset to zero, so that Adam's momentum cannot move them. All ranks of a
    data-parallel run hold the same ``p*``, so they prune the same entries.

    Parameters
    ----------
    start_epoch
        Number of epochs to train before pruning.
    pip_threshold
        Entries with ``p* <= pip_threshold`` are pruned.

    Examples
    --------
    >>> model.train(max_epochs=100, callbacks=[SpikePruning(start_epoch=75)])  # doctest: +SKIP
    """

    def __init__(self, start_epoch: int, pip_threshold: float = 0.5) -> None:
        if start_epoch < 0:
            raise ValueError(f"start_epoch must be >= 0, got {start_epoch}.")
        if not 0.0 <= pip_threshold < 1.0:
            raise ValueError(f"pip_threshold must be in [0, 1), got {pip_threshold}.")
        self.start_epoch = int(start_epoch)
        self.pip_threshold = float(pip_threshold)
        self.n_pruned: list[int] = []

    def on_train_batch_end(self, trainer: Trainer, pl_module: LightningModule, *args, **kwargs) -> None:  # noqa: D102
        decoder = pl_module.module.decoder
        if decoder.is_pruned:
            with torch.no_grad():
                decoder.W.mul_(decoder.prune_mask)

    def on_train_epoch_end(self, trainer: Trainer, pl_module: LightningModule) -> None:  # noqa: D102
        if trainer.current_epoch + 1 == self.start_epoch:
            self.n_pruned.append(pl_module.module.prune_spike(self.pip_threshold))
