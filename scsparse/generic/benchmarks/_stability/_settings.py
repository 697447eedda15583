"""Settings of the stability benchmark, its targets and the paper's numbers (shared by ``_run`` and ``_summary``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lightning.pytorch import Callback

__all__ = [
    "CONSENSUS_TARGET",
    "FIT_METRICS",
    "HALVES_TARGET",
    "Lambda0Ladder",
    "StabilityVariant",
    "TARGETS",
    "VARIANTS",
]


class Lambda0Ladder(Callback):
    """Dynamic posterior exploration of the spike-and-slab lasso (Ročková & George 2018) along ``lambda0``.

    The spike's rate starts at ``start`` (close to the slab's, where the penalty is nearly a plain lasso and the
    posterior has few modes) and rises geometrically, epoch by epoch, to the model's own ``lambda0`` over the first
    ``n_epochs``; each epoch starts from the fit of the one before (the warm start of the ladder). From epoch
    ``n_epochs`` on the model trains at its own rate, which it ends with.

    Parameters
    ----------
    start
        ``lambda0`` of the first epoch (above the slab's ``lambda1``).
    n_epochs
        Epochs over which it reaches the model's ``lambda0``.
    """

    def __init__(self, start: float = 1.5, n_epochs: int = 80) -> None:
        self.start, self.n_epochs = float(start), int(n_epochs)
        self.end: float | None = None

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        """Remember the model's own ``lambda0``, the top of the ladder."""
        self.end = float(pl_module.module.prior.lambda0)

    def rate(self, epoch: int) -> float:
        """``lambda0`` of ``epoch`` (0-based); the top, ``end``, is read when training starts."""
        if epoch >= self.n_epochs:
            return float(self.end)
        step = epoch / self.n_epochs
        return float(math.exp(math.log(self.start) + step * (math.log(self.end) - math.log(self.start))))

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        """Set this epoch's rung."""
        pl_module.module.prior.lambda0 = self.rate(trainer.current_epoch)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        """Leave the model at its own ``lambda0``, however early training stopped."""
        pl_module.module.prior.lambda0 = float(self.end)


@dataclass(frozen=True)
class StabilityVariant:
    """How the seeds of one variant are used.

    Attributes
    ----------
    name, description
        Key (``--methods``) and what the summary says of it.
    fixed_init
        Draw the initial weights from seed 0 for every seed (only the training varies).
    fixed_training
        Train with seed 0 for every seed (only the initial weights vary).
    model_kwargs
        Arguments of :class:`~scsparse.model.SparseVAE` beyond the defaults.
    callbacks
        Makes the Lightning callbacks of each fit's training (new ones per fit), or ``None``.
    restarts
        More than 1: each run is a consensus of this many restarts (:meth:`SparseVAE.consensus
        <scsparse.model.SparseVAE.consensus>`), run ``s`` using seeds ``s * restarts ... s * restarts + restarts
        - 1``, so two runs share no seed.
    multi_study
        Whether the variant applies to :class:`~scsparse.model.MultiStudySparseVAE` (the data sets with studies).
    train_kwargs
        Arguments of :meth:`~scsparse.model.SparseVAE.train` beyond the defaults.
    same_seed
        Compare each seed's fit with the default fit of the same seed (:mod:`._same_seed`): for variants
        that change how a fit computes, not what it fits.
    """

    name: str
    description: str
    fixed_init: bool = False
    fixed_training: bool = False
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    restarts: int = 1
    callbacks: Callable[[], list[Callback]] | None = None
    multi_study: bool = True
    train_kwargs: dict[str, Any] = field(default_factory=dict)
    same_seed: bool = False

    def seeds(self, seed: int) -> tuple[int, int]:
        """The seeds of the initial weights and of the training for the run of ``seed``."""
        if self.restarts > 1:
            return seed * self.restarts, seed * self.restarts
        return (0 if self.fixed_init else seed), (0 if self.fixed_training else seed)


#: The variants, in the order they run.
VARIANTS: dict[str, StabilityVariant] = {
    v.name: v
    for v in (
        StabilityVariant("default", "SparseVAE at its defaults: the seed draws the initial weights and the training"),
        StabilityVariant(
            "fixed_init",
            "the initial weights of seed 0 in every run; the seed draws the split, the minibatches, dropout and the "
            "sampled codes",
            fixed_init=True,
        ),
        StabilityVariant(
            "consensus",
            "a consensus of 5 restarts (SparseVAE.consensus, defaults), each run with its own 5 seeds",
            restarts=5,
        ),
        StabilityVariant(
            "fixed_training",
            "the training of seed 0 in every run; the seed draws the initial weights",
            fixed_training=True,
        ),
        StabilityVariant(
            "nmf_start",
            "W starts from an NMF of the normalised counts (SparseVAE(mask_init='nmf')), the same in every seed",
            model_kwargs={"mask_init": "nmf"},
            multi_study=False,
        ),
        StabilityVariant(
            "lambda0_ladder",
            "lambda0 rises from 1.5 to 10 over the first 80 epochs (dynamic posterior exploration, Lambda0Ladder)",
            callbacks=lambda: [Lambda0Ladder(1.5, 80)],
        ),
        StabilityVariant(
            "exact_zeros",
            "exact zeros in W and the decoder on its active set (train(exact_zeros=True))",
            train_kwargs={"exact_zeros": True},
            multi_study=False,
            same_seed=True,
        ),
    )
}

FIT_METRICS: list[str] = [
    "factors_kept", "programmes", "median_genes", "accuracy", "heldout_nll", "interferon_recovered", "interferon_p",
    "markers_recovered", "epochs", "seconds",
]  # fmt: skip

#: Targets of a default single fit (issue: programmes that reproduce) and of a consensus fit.
TARGETS: dict[str, float] = {"jaccard": 0.6, "top_overlap": 0.8}

#: Target of two consensus fits of disjoint seeds (programmes, Jaccard): cNMF's level.
CONSENSUS_TARGET = 0.9

#: Consensus fits of two disjoint halves of the cells must agree at least this well (Jaccard by factor).
HALVES_TARGET = 0.75
