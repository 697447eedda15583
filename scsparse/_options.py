"""The choices the models offer and their numeric defaults, named once: the layers, the tools and the command line
all read them from here.

Standard library only, so the command line can offer them without importing torch.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "COUNT_LIKELIHOODS",
    "DEFAULT_LAMBDA0",
    "DEFAULT_LAMBDA1",
    "DEFAULT_MAX_PRIOR_CELLS",
    "GENE_LIKELIHOODS",
    "LATENT_PRIORS",
    "MASK_INITS",
    "CountLikelihood",
    "GeneLikelihood",
    "LatentPrior",
    "MaskInit",
]

#: Likelihoods of counts: their mean is ``library * softmax(logits)``.
CountLikelihood = Literal["nb", "zinb", "poisson", "multinomial"]
#: Likelihoods of the models: the count likelihoods, and ``"normal"`` for normalised data.
GeneLikelihood = Literal[CountLikelihood, "normal"]
#: Priors on the factors: independent standard normals, or a learnt correlation.
LatentPrior = Literal["identity", "correlated"]
#: Starts of the mask ``W``: a constant, or an NMF of the normalised counts.
MaskInit = Literal["nmf", "constant"]

#: Likelihoods of counts, whose mean is ``library * softmax(logits)``: ``"nb"``, ``"zinb"``, ``"poisson"``,
#: ``"multinomial"``.
COUNT_LIKELIHOODS: tuple[str, ...] = get_args(CountLikelihood)
#: Likelihoods of the models: the count likelihoods, and ``"normal"`` for normalised data.
GENE_LIKELIHOODS: tuple[str, ...] = get_args(GeneLikelihood)
#: Priors on the factors: ``"identity"`` (independent standard normals) or ``"correlated"``.
LATENT_PRIORS: tuple[str, ...] = get_args(LatentPrior)
#: Starts of the mask ``W``: ``"nmf"`` or ``"constant"``.
MASK_INITS: tuple[str, ...] = get_args(MaskInit)

#: The most training cells the models weigh the prior on ``W`` against by default (their ``max_prior_cells``): up to
#: 10,000 cells planted programmes kept their size under the untempered objective, beyond it they grew.
DEFAULT_MAX_PRIOR_CELLS: int | None = 10_000

#: The spike's Laplace rate ``lambda0`` of the Spike-and-Slab Lasso prior on ``W``, the default of every layer that
#: takes it (the prior, the modules, the models and the array model). Large: entries in the spike shrink hard to zero.
DEFAULT_LAMBDA0: float = 10.0
#: The slab's Laplace rate ``lambda1`` of the Spike-and-Slab Lasso prior on ``W``, the default of every layer that
#: takes it. Small: entries in the slab barely shrink. With :data:`DEFAULT_LAMBDA0` the slab starts at
#: ``|w| = 0.26`` (``eta = 0.5``, :func:`scsparse.nn.slab_threshold`).
DEFAULT_LAMBDA1: float = 1.0
