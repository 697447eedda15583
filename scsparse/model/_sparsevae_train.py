"""The training entry point of :class:`~scsparse.model.SparseVAE` (``train``) and its helpers."""

from __future__ import annotations

from typing import Any, Literal

import torch
from scvi.model._utils import get_max_epochs_heuristic, use_distributed_sampler
from scvi.utils import unsupported_if_adata_minified

from scsparse._checks import InvalidInputError, check_real
from scsparse._options import COUNT_LIKELIHOODS
from scsparse.nn import flush_denormals
from scsparse.train import ACTIVE_SET_EVERY, SettledStopping, clean_training_output

from ._gene_sets import GUIDED_KL_DELAY
from ._init import mask_start
from ._seeding import seeded
from ._validation import check_float32_default, check_precision, check_train_arguments


class TrainMixin:
    """``train``: the settings checked, the mask started, the fit seeded, the factors oriented."""

    @unsupported_if_adata_minified
    def train(
        self,
        max_epochs: int | None = None,
        lr: float = 1e-2,
        batch_size: int = 128,
        train_size: float | None = 0.9,
        early_stopping: bool = False,
        stop_when_settled: bool | SettledStopping = True,
        seed: int | None = None,
        em_every: Literal["step", "epoch"] = "step",
        kl_warmup_fraction: float = 0.25,
        orient: bool = True,
        exact_zeros: bool = False,
        guided_start: bool = True,
        plan_kwargs: dict | None = None,
        accelerator: str = "auto",
        devices: int | list[int] | str = "auto",
        strategy: str | Any = "auto",
        datasplitter_kwargs: dict | None = None,
        datamodule: Any = None,
        **kwargs: Any,
    ) -> None:
        """Train with Adam on the per-cell ELBO and the EM update of the Spike-and-Slab Lasso prior.

        Training runs on Lightning, so it scales out the way scvi-tools models do: ``accelerator="gpu",
        devices=-1, strategy="ddp_find_unused_parameters_true"`` trains data-parallel on every GPU of a node
        (``strategy="ddp_spawn"`` from a notebook or pytest; ``num_nodes=`` for several machines, launched
        with ``torchrun`` or a cluster scheduler). Each replica sees ``batch_size`` cells per step, gradients
        are averaged across replicas before each step and every replica then runs the same EM update, so
        ``W``, ``p*`` and ``eta`` stay identical on all ranks. The model returned in the calling process holds
        the trained weights and EM state; ``model.history`` comes from rank 0. Counts in the ``.X`` of a
        backed AnnData (``anndata.read_h5ad(path, backed="r")``) are read minibatch by minibatch.

        Parameters
        ----------
        max_epochs
            Number of passes over the data; ``None`` uses scvi-tools' heuristic (fewer for more cells). It also
            sets the KL warm-up (``kl_warmup_fraction`` of it): a lower value gives another fit, not a shorter one.
        lr
            Adam learning rate. The default, 1e-2, is the paper's: ``W`` starts near the spike/slab boundary and
            its needed entries must grow past it before the EM updates pull their columns into the spike, so
            scvi-tools' usual 1e-3 can leave every factor in the spike in a short run (measurements:
            :doc:`/user-guide/settings`).
        batch_size
            Minibatch size.
        train_size
            Fraction of cells used for training; the rest is held out (``model.validation_indices``).
        early_stopping
            Stop when the validation ELBO stops improving (scvi-tools' early stopping).
        stop_when_settled
            Stop once the fit has settled: after the KL warm-up, the active factors, the mask's slab entries
            (``p* > 0.5``) and the validation ELBO stopped moving for a window of epochs
            (:class:`~scsparse.train.SettledStopping`; pass one to change its window and tolerances).
            ``max_epochs`` then bounds the epochs, and still sets the warm-up's length (``kl_warmup_fraction``
            of it), so a smaller ``max_epochs`` gives another fit, not the same one sooner.
            ``model.history["stopping"]`` says why training stopped, and
            a :class:`~scsparse.train.FitNotSettledWarning` says when it stopped before the fit settled.
        seed
            Seed for the split and training; defaults to the model's seed.
        em_every
            Run the EM update after every step (the paper's Algorithm 1) or every epoch.
        kl_warmup_fraction
            The weight of the KL term on the factors grows linearly from 0 to 1 over this fraction of
            ``max_epochs`` (0 disables the warm-up). With the mask initialised near the spike/slab boundary,
            the warm-up keeps the posterior from collapsing onto the prior before the needed entries of ``W``
            have grown; the prior on ``W`` itself is never down-weighted. ``plan_kwargs["n_epochs_kl_warmup"]``
            overrides it.
        orient
            Fix each factor's sign after training so that its top genes go up with it (:meth:`orient_factors`
            with its defaults; one pass over the data). A factor's sign is otherwise arbitrary.
        exact_zeros
            Give ``W`` the Spike-and-Slab Lasso's exact zeros and compute the decoder on its nonzero entries only:
            an entry whose step crosses zero stops there and stays until the running mean of its data gradient
            outweighs its prior rate; every 10 steps a check step computes the whole mask and readmits the zero
            entries the data call back (``plan_kwargs`` ``exact_zeros``, ``active_set_every`` and
            ``zero_rule_decay`` of :class:`~scsparse.train.SparseVAETrainingPlan`). The same programmes as the
            default steps, in less time once the mask is sparse (:doc:`/benchmarks/speed`). Not for a query model or
            a consensus refit, whose masks are held fixed.
        guided_start
            With ``gene_sets``: before the first fit, start the encoder so that each guided factor's code follows its
            set's score in every cell (the mean ``log(1 + x)`` of the set's genes at 10,000 counts per cell,
            standardised; 500 Adam steps on the encoder alone), and keep the guided codes out of the KL term for the
            first quarter of the KL warm-up, their weight then rising to the full one at its end
            (``plan_kwargs["guided_kl_free"]`` and ``"guided_kl_delay"``), so the factor carries its set's signal
            while the decoder learns to use it, whatever the random draw (:doc:`/user-guide/gene-sets`). ``False``:
            the guided codes start and warm up as the free ones (the sets still start ``W``'s columns and raise
            their genes' prior inclusion).
        plan_kwargs
            Passed to :class:`~scsparse.train.SparseVAETrainingPlan` (``lr``, ``weight_decay``,
            ``n_epochs_kl_warmup``, ``reduce_lr_on_plateau`` ...).
        accelerator
            Lightning accelerator: ``"auto"``, ``"cpu"``, ``"gpu"``, ``"mps"`` ...
        devices
            Devices per node: a number, a list of device ids, ``-1`` for all, or ``"auto"``.
        strategy
            Lightning strategy, e.g. ``"ddp"``, ``"ddp_spawn"``, ``"ddp_find_unused_parameters_true"`` or a
            :class:`lightning.pytorch.strategies.DDPStrategy`. With a DDP strategy scvi-tools shards the
            training cells over the replicas (``batch_size`` is per replica, so the effective batch is
            ``batch_size x world size``) and turns early stopping off.
        datamodule
            A Lightning data module that serves the minibatches instead of the model's AnnData (scvi-tools' custom
            dataloaders: TileDB-SOMA / CELLxGENE Census, lamindb, ``AnnbatchDataModule``); build the model with
            ``registry=datamodule.registry``. The prior on ``W`` is scaled by the module's ``n_train`` (else
            ``n_obs``) training cells. Without an AnnData the factors are not oriented after training.
        datasplitter_kwargs
            Passed to :class:`scvi.dataloaders.DataSplitter`. Under DDP ``drop_dataset_tail`` defaults to
            ``True`` (the last few cells that do not divide evenly over the replicas are left out of that
            epoch instead of being duplicated).
        **kwargs
            Passed to :meth:`scvi.model.base.UnsupervisedTrainingMixin.train` and on to the Lightning
            ``Trainer`` (``num_nodes``, ``precision``, ``callbacks``, ``enable_progress_bar``,
            ``load_sparse_tensor`` ...).

        Warns
        -----
        NoActiveFactorWarning
            When training ends with no active factor (every ``w_jk`` in the spike), which happens when the
            prior outweighs the data: few cells or too few optimiser steps.

        Examples
        --------
        >>> model.train(max_epochs=100)
        >>> model.train(max_epochs=100, accelerator="gpu", devices=-1, strategy="ddp_find_unused_parameters_true")
        """
        n_cells = self._datamodule_cells(datamodule) if datamodule is not None else self.adata.n_obs
        check_train_arguments(
            n_cells=n_cells, max_epochs=max_epochs, lr=lr, batch_size=batch_size, train_size=train_size,
            kl_warmup_fraction=kl_warmup_fraction, seed=seed,
        )  # fmt: skip
        if not isinstance(guided_start, bool):
            raise InvalidInputError(f"guided_start must be True or False, got {guided_start!r}.")
        check_float32_default()
        check_precision(kwargs.get("precision"))
        if max_epochs is None:
            max_epochs = get_max_epochs_heuristic(n_cells)
        warmup = max(1, round(kl_warmup_fraction * max_epochs)) if kl_warmup_fraction > 0 else None
        plan = {"lr": lr, "n_epochs_kl_warmup": warmup, "em_every": em_every}
        if exact_zeros:
            plan |= {"exact_zeros": True, "active_set_every": ACTIVE_SET_EVERY}
        guided = guided_start and bool(self.gene_sets_) and not self._is_query()
        if guided and warmup is not None and self.module.latent_prior is None:
            plan |= {"guided_kl_free": len(self.gene_sets_), "guided_kl_delay": GUIDED_KL_DELAY}
        if datamodule is not None and not hasattr(datamodule, "n_train"):
            plan["n_obs_training"] = n_cells
        plan.update(plan_kwargs or {})
        if "lr" in (plan_kwargs or {}):
            check_real("plan_kwargs['lr']", plan["lr"], low=0, low_open=True, fix="The default, 1e-2, suits most data.")
        self._check_plan_kwargs(plan)
        if datamodule is None and self.adata is not None:  # the data trained on, as they are now
            self._check_training_data()
        self.seed = self.seed if seed is None else int(seed)
        self.factors_oriented_ = False
        settle = SettledStopping.from_argument(stop_when_settled)
        if settle is not None:
            kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), settle]
            if datamodule is None and (train_size is None or train_size < 1):
                kwargs.setdefault("check_val_every_n_epoch", 1)  # the validation ELBO of every epoch
        splitter = dict(datasplitter_kwargs or {})
        if use_distributed_sampler(strategy):
            splitter.setdefault("drop_dataset_tail", True)
        self.train_kwargs_ = {
            "max_epochs": max_epochs,
            "batch_size": batch_size,
            "train_size": train_size,
            "early_stopping": early_stopping,
            "stop_when_settled": repr(settle) if settle is not None else False,
            "plan_kwargs": plan,
            "accelerator": str(accelerator),
            "devices": devices if isinstance(devices, int) else str(devices),
            "strategy": strategy if isinstance(strategy, str) else type(strategy).__name__,
            "orient": bool(orient) and self.adata is not None,
            "datamodule": None if datamodule is None else type(datamodule).__name__,
            # float sums depend on the number of threads: the same seed gives the same fit with the same count
            "torch_threads": int(torch.get_num_threads()),
        }
        # scvi-tools leaves the module in evaluation mode after a fit or a load, and Lightning (>= 2.2) trains
        # in the mode it finds: without this a second train() call, or training a loaded model, would run with
        # dropout off and batch norm on its running statistics
        self.module.train()
        started = not self.is_trained_
        if started:
            self._start_mask()
            self._start_guided_columns()
        # the split, the minibatch order, dropout and the orientation's pass follow the model's seed; the caller's
        # random state is kept. Denormals slow CPU training several-fold late in a fit.
        with seeded(self.seed):
            steps = self._start_guided_codes(batch_size) if started and guided_start else 0
            self.train_kwargs_["guided_code_steps"] = steps
            with flush_denormals(), clean_training_output(self._expected_training_warnings()):
                super().train(
                    max_epochs=max_epochs,
                    batch_size=batch_size,
                    train_size=train_size,
                    early_stopping=early_stopping,
                    plan_kwargs=plan,
                    accelerator=accelerator,
                    devices=devices,
                    strategy=strategy,
                    datasplitter_kwargs=splitter,
                    datamodule=datamodule,
                    **kwargs,
                )
            self._warn_if_no_active_factor()
            if settle is not None:
                self._record_stopping(settle)
            if orient and self.adata is not None:
                self.orient_factors(batch_size=batch_size)

    def _start_mask(self) -> None:
        """Set the initial ``W`` of ``mask_init="nmf"`` from the registered data (a model without an AnnData, built
        from a registry for a datamodule, keeps the constant start and says so in ``mask_init_used_``).
        """
        self.mask_init_used_ = self.mask_init
        if self.mask_init != "nmf":
            return
        if self.adata is None or self._is_query():
            self.mask_init_used_ = "constant (no AnnData to factorise)" if self.adata is None else "reference"
            return
        start = mask_start(
            self.adata, self._layer(), self.module.n_latent, counts=self.module.gene_likelihood in COUNT_LIKELIHOODS
        )
        with torch.no_grad():
            self.module.decoder.W.copy_(torch.as_tensor(start, dtype=self.module.decoder.W.dtype))

    @staticmethod
    def _datamodule_cells(datamodule: Any) -> int:
        """The number of training cells a data module serves (``n_train``, else ``n_obs``)."""
        for name in ("n_train", "n_obs"):
            value = getattr(datamodule, name, None)
            if value:
                return int(value)
        raise InvalidInputError(
            f"The datamodule ({type(datamodule).__name__}) has neither n_train nor n_obs, so the prior on W cannot be "
            "scaled to the number of training cells. Give it one of them, or plan_kwargs={'n_obs_training': N}."
        )

    def _is_query(self) -> bool:
        """Whether this model maps a query onto a reference whose parameters it keeps fixed."""
        return bool(self.module.n_batch_frozen or getattr(self.module, "n_latent_frozen", 0))

    def _check_plan_kwargs(self, plan: dict[str, Any]) -> None:
        """Adjust or reject training-plan settings the model cannot train with (in place)."""
        if not self._is_query():
            return
        plan.setdefault("weight_decay", 0.0)
        if plan["weight_decay"]:
            raise InvalidInputError(
                f"A query model trains with weight_decay=0 (got {plan['weight_decay']}): weight decay would move "
                "the reference's frozen weights. Leave plan_kwargs['weight_decay'] out."
            )

    def _expected_training_warnings(self) -> list[str]:
        """Messages (regular expressions) of warnings this model's training raises by design, silenced in train.

        Lightning's "fewer training batches than the logging interval" is one for every model: the training
        history is logged per epoch, so there is nothing to set. A query model's reference encoder is in
        evaluation mode on purpose, which Lightning reports.
        """
        expected = [r".*smaller than the logging interval.*"]
        if self.module.n_batch_frozen:
            expected.append(r".*module\(s\) in eval mode.*")
        return expected
