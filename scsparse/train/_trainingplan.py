"""Training plan of the sparse VAE: gradient (M) steps, then the closed-form EM update of the SSL prior."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import torch
from scvi.module.base import LossOutput
from scvi.train import TrainingPlan

from scsparse._checks import InvalidInputError, check_integer, check_real

__all__ = ["ACTIVE_SET_EVERY", "DIVERGENCE_FACTOR", "ZERO_RULE_DECAY", "SparseVAETrainingPlan"]

#: An epoch whose mean training loss per cell exceeds the first step's by this many times the first step's size
#: has diverged (a sound fit lowers the loss from its random start; a too-large learning rate sends it up by orders
#: of magnitude, or to NaN).
DIVERGENCE_FACTOR = 100.0
#: Optimiser steps between the active set's checks when a model trains with exact zeros
#: (:meth:`scsparse.model.SparseVAE.train`'s ``exact_zeros``): a check step costs a step of the whole mask.
ACTIVE_SET_EVERY = 10
#: Decay of the running mean of the data gradient by which a model trained with exact zeros judges its zero entries
#: (:class:`SparseVAETrainingPlan`'s ``zero_rule_decay``; a window of about 1 / (1 - decay) of an entry's steps).
ZERO_RULE_DECAY = 0.9


def check_exact_zeros(
    module: Any, exact_zeros: bool, active_set_every: int | None, zero_rule_decay: float | None
) -> None:
    """Refuse ``exact_zeros``, ``active_set_every`` and ``zero_rule_decay`` values the module cannot train with."""
    if not isinstance(exact_zeros, bool):
        raise InvalidInputError(f"exact_zeros must be True or False, got {exact_zeros!r}.")
    if zero_rule_decay is not None:
        check_real(
            "zero_rule_decay", zero_rule_decay, low=0, high=1, high_open=True,
            fix="0 judges a zero entry by each minibatch's gradient; 0.9 by a running mean over about 10 steps.",
        )  # fmt: skip
        if not exact_zeros:
            raise InvalidInputError(
                "zero_rule_decay needs exact_zeros=True: without exact zeros no entry of W is held at zero."
            )
    if active_set_every is not None:
        check_integer("active_set_every", active_set_every, fix="Or None: every entry of W at every step.")
        if not exact_zeros:
            raise InvalidInputError(
                "active_set_every needs exact_zeros=True: without exact zeros no entry of W leaves the active set."
            )
    if exact_zeros and not module.trains_w_freely:
        raise InvalidInputError(
            "exact_zeros lets every entry of W leave or enter the support, and this module keeps part of W fixed (a "
            "query model or a consensus refit with a fixed support). Train it with exact_zeros=False (the default)."
        )


class SparseVAETrainingPlan(TrainingPlan):
    """:class:`scvi.train.TrainingPlan` with the Spike-and-Slab Lasso EM update after optimiser steps.

    After every training step (``em_every="step"``, Algorithm 1 of Moran et al. 2022) or every epoch
    (``em_every="epoch"``) the module's ``em_update()`` recomputes the inclusion probabilities ``p*`` and
    the column weights ``eta`` from the current mask, without gradients. At the end of each epoch the
    number of active factors is logged (``n_active_factors`` in ``model.history``), and the number of entries of
    the mask that entered or left the slab (``p* > 0.5``) since the previous epoch (``mask_changes``), which
    shows when the mask settles.

    Training stops with an :class:`~scsparse.model.InvalidInputError` naming the epoch and the learning rate when it
    diverges: when an epoch's mean training loss is not finite, or exceeds the first step's loss by more than
    :data:`DIVERGENCE_FACTOR` times its size, or when the parameters have become NaN or infinite.

    Under Lightning DDP every rank runs the same EM update on the same ``W`` (gradients are all-reduced
    before each optimiser step), so ``p*`` and ``eta`` stay identical across ranks without any extra
    communication. Scalar ``LossOutput.extra_metrics`` of the module are logged outside inference mode:
    scvi-tools logs them inside ``torch.inference_mode``, which makes Lightning's epoch-end
    synchronisation crash under gloo DDP ("Inplace update to inference tensor outside InferenceMode").

    Parameters
    ----------
    module
        A module with ``em_update()`` and ``active_factor_mask()``.
    em_every
        When to run the EM update.
    n_obs_training
        Number of training cells, which scales the prior on ``W`` against the data (scvi-tools sets it from the
        data splitter; give it for a datamodule that has no ``n_train``).
    exact_zeros
        Give ``W`` the Spike-and-Slab Lasso's exact zeros: Adam steps on the subgradient as before, but an entry
        whose step crosses zero stops at zero, and an entry at zero moves only once its data gradient exceeds its
        Laplace rate over the cells (the lasso's least subgradient, as orthant-wise L1 methods such as OWL-QN take
        it; :meth:`~scsparse.module.SparseVAEModule.zero_rule_gradient_`). Needs a module whose ``W`` trains freely
        (not a query or a consensus refit with a fixed support).
    active_set_every
        With ``exact_zeros``: the decoder works only on the active entries of ``W``, and every this many optimiser
        steps checks which entries belong there, as glmnet's strong rules and KKT checks do — the check step runs
        the whole mask and keeps the nonzero entries and the zero entries whose data gradient breaks the lasso's
        optimality condition (:meth:`~scsparse.module.SparseVAEModule.entries_to_readmit`); between checks the
        other entries are fixed at zero (:meth:`~scsparse.nn.MaskedDecoder.prune_`) and cost nothing. ``None``:
        every entry is computed at every step. The active set is saved with the model (the decoder's
        ``prune_mask``).
    zero_rule_decay
        With ``exact_zeros``: judge a zero entry (the zero rule and the active set's checks) by a running mean of
        its data gradient, each step's weighed down by this factor, instead of by the minibatch's own gradient.
        Minibatch noise on a well-expressed gene exceeds an entry's rate over the cells many times over, so by its
        own minibatch a zero entry leaves zero again and again without the data calling it back; the mean (as
        regularised dual averaging does for stochastic L1 problems) keeps it at zero until they do. An entry
        outside the active set is seen only on check steps, so its mean runs over checks. ``0``: each minibatch's
        gradient; ``None``: :data:`ZERO_RULE_DECAY` with exact zeros.
    guided_kl_free
        The first this many codes (a guided model's gene-set factors) have no KL term for the first
        ``guided_kl_delay`` of the KL warm-up (``n_epochs_kl_warmup`` or ``n_steps_kl_warmup``); their KL weight then
        rises linearly to the full weight at the warm-up's end, while the other codes' weight rises over the whole
        warm-up as usual. The warm-up's KL would otherwise shrink a guided code before the decoder has learnt to use
        it (:doc:`/design-decisions`). ``0``: every code warms up alike.
    guided_kl_delay
        The share of the KL warm-up through which the guided codes have no KL term, in ``[0, 1]`` (1: none through
        the whole warm-up, then the full weight).
    **kwargs
        Passed to :class:`scvi.train.TrainingPlan` (``lr``, ``weight_decay``, ``n_epochs_kl_warmup`` ...).
    """

    def __init__(
        self,
        module,
        *,
        em_every: Literal["step", "epoch"] = "step",
        n_obs_training: int | None = None,
        exact_zeros: bool = False,
        active_set_every: int | None = None,
        zero_rule_decay: float | None = None,
        guided_kl_free: int = 0,
        guided_kl_delay: float = 1.0,
        **kwargs: Any,
    ) -> None:
        if em_every not in ("step", "epoch"):
            raise ValueError(f"em_every must be 'step' or 'epoch', got {em_every!r}.")
        check_exact_zeros(module, exact_zeros, active_set_every, zero_rule_decay)
        guided_kl_free = check_integer(
            "guided_kl_free", guided_kl_free, minimum=0, fix="The number of guided factors, or 0 (every code alike)."
        )
        n_latent = getattr(module, "n_latent", 0)
        if guided_kl_free > n_latent:
            raise InvalidInputError(
                f"guided_kl_free={guided_kl_free} exceeds the module's {n_latent} factors: give at most the number of "
                "guided factors (the first ones), or 0."
            )
        guided_kl_delay = check_real(
            "guided_kl_delay", guided_kl_delay, low=0, high=1, fix="A share of the KL warm-up, from 0 to 1."
        )
        super().__init__(module, **kwargs)
        self.guided_kl_free, self.guided_kl_delay = guided_kl_free, float(guided_kl_delay)
        self.em_every = em_every
        self.exact_zeros = bool(exact_zeros)
        self.active_set_every = None if active_set_every is None else int(active_set_every)
        if zero_rule_decay is None:
            zero_rule_decay = ZERO_RULE_DECAY if exact_zeros else 0.0
        self.zero_rule_decay = float(zero_rule_decay)
        self._mask_before_check: torch.Tensor | None = None
        self._before_step: torch.Tensor | None = None
        self._readmitted = 0  # entries the active-set checks of the epoch brought in
        if n_obs_training is not None:  # a datamodule that does not say how many cells it trains on
            self.n_obs_training = int(n_obs_training)

    def compute_and_log_metrics(self, loss_output: LossOutput, metrics: dict, mode: str) -> None:
        """Add the minibatch to the ELBO metrics, and log the module's scalar extra metrics as plain tensors.

        The ELBO metrics (``elbo_<mode>``, ``reconstruction_loss_<mode>``, ``kl_local_<mode>``,
        ``kl_global_<mode>``) are the same objects and values as scvi-tools', updated every step and logged
        once, at the end of the epoch (:meth:`_log_epoch_metrics`): logging a metric object every step makes
        Lightning move the whole metric to its device every step, an overhead that weighs on small models.
        With ``on_step=True`` they are logged every step, as in scvi-tools.

        Parameters
        ----------
        loss_output
            The module's loss.
        metrics
            The plan's ELBO metrics for ``mode``.
        mode
            ``"train"`` or ``"validation"``; suffix of the logged names (``<key>_<mode>``).
        """
        extra = dict(loss_output.extra_metrics or {})
        if self.on_step:
            if extra:
                loss_output = copy.copy(loss_output)
                loss_output.extra_metrics = {}
            super().compute_and_log_metrics(loss_output, metrics, mode)
        elif self.on_epoch:  # updated here, logged (and so reset) at the epoch's end
            with torch.inference_mode():
                metrics[f"elbo_{mode}"].update(
                    reconstruction_loss=loss_output.reconstruction_loss_sum,
                    kl_local=loss_output.kl_local_sum,
                    kl_global=loss_output.kl_global_sum,
                    n_obs_minibatch=loss_output.n_obs_minibatch,
                )
        for key, value in extra.items():
            if isinstance(value, torch.Tensor):
                if value.dim() != 0:  # per-cell outputs (scib autotune's z, batch, labels) are not logged
                    continue
                value = value.detach().clone()  # a normal tensor even when created under inference mode
            self.log(
                f"{key}_{mode}",
                value,
                on_step=self.on_step,
                on_epoch=self.on_epoch,
                batch_size=loss_output.n_obs_minibatch,
                sync_dist=self.use_sync_dist,
            )

    @property
    def guided_kl_weight(self) -> float:
        """The KL weight of the guided codes (``guided_kl_free``) at this epoch or step: 0 through the first
        ``guided_kl_delay`` of the warm-up, then rising linearly to the full weight at its end.
        """
        if self.n_epochs_kl_warmup:
            at, length = self.current_epoch, self.n_epochs_kl_warmup
        elif self.n_steps_kl_warmup:
            at, length = self.global_step, self.n_steps_kl_warmup
        else:
            return float(self.max_kl_weight)
        start = self.guided_kl_delay * length
        if at >= length:
            return float(self.max_kl_weight)
        if at < start:
            return 0.0
        return float(self.max_kl_weight) * (at - start) / (length - start)

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        """scvi-tools' step, with the step's loss added to the epoch's sum that :meth:`_check_divergence` reads;
        the guided codes' own KL weight through the warm-up (``guided_kl_free``).
        """
        if self.guided_kl_free:  # validation reads the same setting, as it reads the step's KL weight
            weight = self.guided_kl_weight  # the full weight once the warm-up is over: every code alike again
            codes = self.guided_kl_free if weight < self.max_kl_weight else 0
            self.loss_kwargs |= {"guided_codes": codes, "guided_kl_weight": weight}
        with self._nan_parameters_diverge():
            out = super().training_step(batch, batch_idx)
        loss = (out["loss"] if isinstance(out, dict) else out).detach()
        if getattr(self, "_start_loss", None) is None:
            self._start_loss = loss.clone()
        total = getattr(self, "_epoch_loss", None)
        self._epoch_loss = (loss.clone(), 1) if total is None else (total[0] + loss, total[1] + 1)
        return out

    def validation_step(self, batch: Any, batch_idx: int) -> Any:
        """scvi-tools' step; parameters that became NaN or infinite stop training as a divergence."""
        with self._nan_parameters_diverge():
            return super().validation_step(batch, batch_idx)

    @contextmanager
    def _nan_parameters_diverge(self) -> Iterator[None]:
        """Turn torch's check of a distribution's parameters (the weights hold NaN or inf) into our error."""
        try:
            yield
        except ValueError as exc:
            if "invalid values" not in str(exc):
                raise
            self._raise_diverged("the model's parameters became NaN or infinite")

    def on_train_start(self) -> None:
        """Remember the mask training starts from, so the first epoch's ``mask_changes`` is counted too."""
        super().on_train_start()
        self._previous_slab = self._slab()
        if not self.exact_zeros or self.zero_rule_decay == 0:  # W moves without the mean: it no longer describes W
            self.module.forget_zero_rule_mean_()
        self._start_loss, self._epoch_loss = None, None

    def _check_divergence(self) -> None:
        """Stop training when the epoch's mean loss is not finite or rose by orders of magnitude (on any rank)."""
        total = self._epoch_loss
        self._epoch_loss = None
        if total is None or self._start_loss is None:
            return
        mean, start = float(total[0]) / total[1], float(self._start_loss)
        diverged = not math.isfinite(mean) or mean - start > DIVERGENCE_FACTOR * max(abs(start), 1.0)
        if self.trainer.strategy.reduce_boolean_decision(diverged, all=False):
            what = (
                "the training loss is not finite"
                if not math.isfinite(mean)
                else f"the training loss per cell rose to {mean:.3g}, from {start:.3g} at the first step"
            )
            self._raise_diverged(what)

    def _raise_diverged(self, what: str) -> None:
        raise InvalidInputError(
            f"Training diverged in epoch {self.current_epoch + 1}: {what}. The learning rate is too large for these "
            f"data: lower lr (it was {self.lr:g}; e.g. lr={self.lr / 10:g}, the default is 1e-2) and train again."
        ) from None

    def _log_epoch_metrics(self, metrics: dict) -> None:
        """Log the ELBO metrics the epoch's steps updated (Lightning computes and resets them)."""
        if not self.on_step and self.on_epoch:
            self.log_dict(metrics, on_step=False, on_epoch=True, sync_dist=self.use_sync_dist)

    def _slab(self) -> torch.Tensor:
        """The entries of the mask in the slab, ``p* > 0.5``."""
        return self.module.prior.p_star.detach() > 0.5

    @staticmethod
    def _rng_state() -> tuple:
        return torch.get_rng_state(), torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None

    def on_validation_epoch_end(self) -> None:
        """Restore the random state of the end of the last training step (see :meth:`on_train_batch_end`).

        Validation draws from the global generators (the data loader's seed, the sampled codes); restoring the
        state makes validating every epoch, as :class:`~scsparse.train.SettledStopping` does, leave the training
        trajectory of a seed unchanged.
        """
        self._log_epoch_metrics(self.val_metrics)
        super().on_validation_epoch_end()
        state = getattr(self, "_rng_after_step", None)
        if state is not None:
            torch.set_rng_state(state[0])
            if state[1] is not None:
                torch.cuda.set_rng_state_all(state[1])

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
        """On an active-set check step, compute every entry of ``W`` (see ``active_set_every``)."""
        every = self.active_set_every
        if every is not None and self.global_step % every == 0:
            decoder = self.module.decoder
            self._mask_before_check = decoder.prune_mask.clone()
            decoder.readmit_(torch.ones_like(decoder.prune_mask))

    def on_before_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        """Before the step: a check step's active set (the nonzero entries and the violators), the zero rule."""
        if not self.exact_zeros:
            return
        before, self._mask_before_check = self._mask_before_check, None
        decoder = self.module.decoder
        judged = self._judged_gradient()
        if before is not None:
            keep = (decoder.W != 0) | self.module.entries_to_readmit(judged, self.n_obs_training)
            decoder.prune_(keep)
            self._readmitted += int((keep & ~before).sum())
        self._before_step = self.module.zero_rule_gradient_(self.n_obs_training, judged)

    @torch.no_grad()
    def _judged_gradient(self) -> torch.Tensor:
        """The data gradient zero entries are judged by: the minibatch's, or its running mean (``zero_rule_decay``).

        The mean is updated on the entries the step computed (the active set; every entry on a check step) and is
        divided by its weight, ``1 - decay^steps``, as Adam corrects its first moment. Both live on the module
        (``zero_rule_mean``, ``zero_rule_weight``), so a later ``train(exact_zeros=True)`` of the same model goes on
        from them: a mean begun afresh would judge the first check by one minibatch and readmit its noise.
        """
        module = self.module
        data = module.data_gradient(self.n_obs_training)
        decay = self.zero_rule_decay
        if decay == 0:
            return data
        if module.zero_rule_mean.shape != data.shape:
            module.zero_rule_mean, module.zero_rule_weight = torch.zeros_like(data), torch.zeros_like(data)
        seen = module.decoder.prune_mask
        mean = torch.where(seen, decay * module.zero_rule_mean + (1 - decay) * data, module.zero_rule_mean)
        weight = torch.where(seen, decay * module.zero_rule_weight + (1 - decay), module.zero_rule_weight)
        module.zero_rule_mean, module.zero_rule_weight = mean, weight
        return torch.where(weight > 0, mean / weight.clamp_min(torch.finfo(weight.dtype).tiny), data)

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        """After the optimiser step: the zero rule (``exact_zeros``), and the EM update when ``em_every == "step"``;
        keep the random state.
        """
        if self._before_step is not None:
            self.module.zero_rule_step_(self._before_step)
            self._before_step = None
        if self.em_every == "step":
            with torch.no_grad():
                self.module.em_update()
        self._rng_after_step = self._rng_state()

    def on_train_epoch_end(self) -> None:
        """Stop a diverged fit; run the per-epoch EM update if asked for, and log the ELBO and the active factors."""
        self._check_divergence()
        self._log_epoch_metrics(self.train_metrics)
        if self.em_every == "epoch":
            with torch.no_grad():
                self.module.em_update()
        n_active = self.module.active_factor_mask().sum().float()
        self.log("n_active_factors", n_active, on_step=False, on_epoch=True, sync_dist=self.use_sync_dist)
        slab = self._slab()
        changes = (slab != self._previous_slab).sum().float()
        self.log("mask_changes", changes, on_step=False, on_epoch=True, sync_dist=self.use_sync_dist)
        self._previous_slab = slab
        if self.exact_zeros:
            w = self.module.decoder.W.detach()
            self.log("w_nonzero", (w != 0).float().mean(), on_step=False, on_epoch=True, sync_dist=self.use_sync_dist)
        if self.active_set_every is not None:
            active = self.module.decoder.prune_mask.float().mean()
            self.log("w_active", active, on_step=False, on_epoch=True, sync_dist=self.use_sync_dist)
            self.log(
                "w_readmitted", float(self._readmitted), on_step=False, on_epoch=True, sync_dist=self.use_sync_dist
            )
            self._readmitted = 0
        super().on_train_epoch_end()
