"""Torch building blocks of the sparse VAE: the masked decoder, the encoders, the Spike-and-Slab Lasso prior,
the objective and the observation models.

Nothing here imports AnnData, Lightning or scvi-tools: every piece of the model's maths is written once, here, and
shared by the scvi-tools models and the array models of :mod:`scsparse.generic`. The baselines' own building
blocks (sparse codes, group lasso) live in :mod:`scsparse.generic.nn`.
"""

from scsparse._options import DEFAULT_LAMBDA0, DEFAULT_LAMBDA1  # the prior's default rates, named in _options

from ._diagnostics import NoActiveFactorWarning, warn_no_active_factor
from ._elbo import gaussian_kl, importance_sampled_log_likelihood, kl_normal, sparse_vae_objective, sparse_vae_penalty
from ._encoder import GaussianEncoder, StackedEncoder
from ._latent_prior import CorrelatedGaussianPrior
from ._likelihoods import log_multinomial, log_normal, log_poisson
from ._masked_decoder import MaskedDecoder, default_memory_budget_mb
from ._mlp import MLP, make_activation
from ._numerics import flush_denormals
from ._observation import LIKELIHOODS, ObservationModel
from ._one_factor import one_factor_outputs
from ._priors import calibrate_inverse_gamma
from ._spike_slab_lasso import SpikeSlabLasso, slab_threshold, ssl_inclusion_logits
from ._surgery import copy_into_grown_, restore_gradient_masks_, train_only_

__all__ = [
    "DEFAULT_LAMBDA0",
    "DEFAULT_LAMBDA1",
    "LIKELIHOODS",
    "MLP",
    "calibrate_inverse_gamma",
    "copy_into_grown_",
    "CorrelatedGaussianPrior",
    "default_memory_budget_mb",
    "flush_denormals",
    "gaussian_kl",
    "GaussianEncoder",
    "importance_sampled_log_likelihood",
    "kl_normal",
    "log_multinomial",
    "log_normal",
    "log_poisson",
    "make_activation",
    "MaskedDecoder",
    "NoActiveFactorWarning",
    "ObservationModel",
    "one_factor_outputs",
    "restore_gradient_masks_",
    "slab_threshold",
    "sparse_vae_objective",
    "sparse_vae_penalty",
    "SpikeSlabLasso",
    "ssl_inclusion_logits",
    "StackedEncoder",
    "train_only_",
    "warn_no_active_factor",
]
