"""Lightning callback that ends training once the fit has settled: the mask and the held-out ELBO stop moving."""

from __future__ import annotations

import math
import warnings
from collections import deque

import pandas as pd
import torch
from lightning.pytorch import Callback, LightningModule, Trainer

__all__ = ["FitNotSettledWarning", "SettledStopping"]


class FitNotSettledWarning(UserWarning):
    """Training ended before the mask of ``W`` and the ELBO had settled (see :class:`SettledStopping`)."""


class SettledStopping(Callback):
    """Stop training when the mask of ``W`` and the ELBO have settled, and say why training stopped.

    At the end of every epoch after the KL warm-up the callback compares the fit with the fit ``window``
    epochs before. Training stops when, over that window,

    - the set of active factors did not change,
    - at most ``max_mask_changes`` of the mask's slab entries (``p* > 0.5``) entered or left the slab at any
      epoch of the window, as a fraction of the slab entries (one entry is always allowed), and
    - the ELBO (validation ELBO when there is a validation set, else the training ELBO) improved by less
      than ``min_elbo_improvement``, relative.

    ``stop_reason`` and ``n_epochs`` (the epochs trained) record what happened: ``"settled"``,
    ``"max_epochs"`` (the fit may not have settled) or ``"stopped by another callback"`` (such as scvi-tools'
    ELBO early stopping);
    :meth:`scsparse.model.SparseVAE.train` copies them to ``model.history["stopping"]`` and warns when the
    mask had not settled. All ranks of a data-parallel run hold the same ``W`` and ``p*``, and the decision is
    reduced over ranks, so they stop together.

    Parameters
    ----------
    window
        Epochs over which the fit must not move.
    max_mask_changes
        Largest fraction of the slab entries whose ``p* > 0.5`` status may change over the window.
    min_elbo_improvement
        Relative ELBO improvement over the window below which the ELBO counts as settled.
    start_epoch
        First epoch (0-based) whose end may stop training; ``None``: the end of the plan's KL warm-up.

    Examples
    --------
    >>> model.train(stop_when_settled=SettledStopping(window=30))  # doctest: +SKIP
    >>> model.history["stopping"]  # doctest: +SKIP
    """

    def __init__(
        self,
        window: int = 20,
        max_mask_changes: float = 0.05,
        min_elbo_improvement: float = 2e-3,
        start_epoch: int | None = None,
    ) -> None:
        if int(window) != window or window < 1:
            raise ValueError(f"window must be a positive integer, got {window!r}.")
        if not 0.0 <= max_mask_changes < 1.0:
            raise ValueError(f"max_mask_changes must be in [0, 1), got {max_mask_changes!r}.")
        if not min_elbo_improvement >= 0.0:
            raise ValueError(f"min_elbo_improvement must be >= 0, got {min_elbo_improvement!r}.")
        if start_epoch is not None and (int(start_epoch) != start_epoch or start_epoch < 0):
            raise ValueError(f"start_epoch must be a non-negative integer or None, got {start_epoch!r}.")
        self.window = int(window)
        self.max_mask_changes = float(max_mask_changes)
        self.min_elbo_improvement = float(min_elbo_improvement)
        self.start_epoch = start_epoch
        self._reset()

    def __repr__(self) -> str:
        return (
            f"SettledStopping(window={self.window}, max_mask_changes={self.max_mask_changes}, "
            f"min_elbo_improvement={self.min_elbo_improvement}, start_epoch={self.start_epoch})"
        )

    def _reset(self) -> None:
        self.stop_reason: str | None = None
        self.n_epochs: int | None = None
        self.settled = False
        self._masks: deque[torch.Tensor] = deque(maxlen=self.window + 1)
        self._elbos: deque[float] = deque(maxlen=self.window + 1)

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:  # noqa: D102
        self._reset()

    def _first_epoch(self, pl_module: LightningModule) -> int:
        if self.start_epoch is not None:
            return int(self.start_epoch)
        warmup = getattr(pl_module, "n_epochs_kl_warmup", None) or 0
        return int(warmup)

    @staticmethod
    def _elbo(trainer: Trainer) -> float:
        metrics = trainer.callback_metrics
        for key in ("elbo_validation", "elbo_train"):
            if key in metrics:
                return float(metrics[key])
        return math.nan

    def is_settled(self) -> bool:
        """Whether the last ``window`` epochs recorded so far show a settled fit (see the class docstring)."""
        if len(self._masks) <= self.window:
            return False
        masks = torch.stack(list(self._masks))
        new = masks[-1]
        # the active factors (columns with a slab entry) must be the same at every epoch of the window
        if not torch.equal(masks.any(1), new.any(0).expand(masks.shape[0], -1)):
            return False
        moved = int((masks != new).any(0).sum())  # entries that left or entered the slab during the window
        if moved > max(1, self.max_mask_changes * int(new.sum())):
            return False
        before, after = self._elbos[0], min(self._elbos)
        if math.isnan(before) or math.isnan(after):
            return True  # no ELBO logged: the mask alone decides
        return (before - after) <= self.min_elbo_improvement * abs(before)

    def on_train_epoch_end(self, trainer: Trainer, pl_module: LightningModule) -> None:  # noqa: D102
        # Lightning runs the epoch's validation before this hook, so the validation ELBO is this epoch's
        epoch = trainer.current_epoch
        if trainer.max_epochs is not None and epoch + 1 >= trainer.max_epochs:
            self.stop_reason, self.n_epochs = "max_epochs", epoch + 1
        if epoch < self._first_epoch(pl_module):
            return
        self._masks.append(pl_module.module.prior.p_star.detach().gt(0.5).cpu())
        self._elbos.append(self._elbo(trainer))
        settled = bool(trainer.strategy.reduce_boolean_decision(self.is_settled(), all=True))
        self.settled = settled
        if settled:
            trainer.should_stop = True
            self.stop_reason, self.n_epochs = "settled", epoch + 1

    def on_train_end(self, trainer: Trainer, pl_module: LightningModule) -> None:  # noqa: D102
        if self.stop_reason is None:  # neither settled nor at max_epochs: another callback stopped training
            self.stop_reason, self.n_epochs = "stopped by another callback", trainer.current_epoch

    @classmethod
    def from_argument(cls, value: bool | SettledStopping) -> SettledStopping | None:
        """The callback for a ``stop_when_settled`` argument: ``True`` (the defaults), ``False`` or an instance.

        Examples
        --------
        >>> SettledStopping.from_argument(True).window
        20
        >>> SettledStopping.from_argument(False) is None
        True
        """
        if isinstance(value, SettledStopping):
            return value
        if isinstance(value, bool):
            return cls() if value else None
        raise TypeError(f"stop_when_settled must be True, False or a SettledStopping, got {value!r}.")

    def history_frame(self) -> pd.DataFrame:
        """Why training stopped, as a one-row ``model.history`` entry indexed by the last epoch."""
        last = (self.n_epochs or 0) - 1
        return pd.DataFrame({"stopping": [self.stop_reason]}, index=pd.Index([last], name="epoch"))

    def warn_if_not_settled(self, stacklevel: int = 2) -> None:
        """Warn with :class:`FitNotSettledWarning` unless training stopped because the fit had settled."""
        if self.stop_reason == "settled":
            return
        checked = max(0, len(self._masks) - 1)
        how = (
            f"the fit was compared over {checked} epochs after the KL warm-up, fewer than the window of {self.window}"
            if checked < self.window
            else f"over the last {self.window} epochs the active factors changed, more than "
            f"{self.max_mask_changes:.1%} of the slab entries of W entered or left it, or the ELBO still improved "
            f"by more than {self.min_elbo_improvement:.1%}"
        )
        warnings.warn(
            f"Training stopped after {self.n_epochs} epochs ({self.stop_reason}) before the fit settled: {how}. "
            "The factors and their genes may still change with more training: train longer (max_epochs=None "
            "chooses the number of epochs from the data and stops once the fit has settled), and see "
            "model.history['mask_changes'] and model.history['n_active_factors'].",
            FitNotSettledWarning,
            stacklevel=stacklevel,
        )
