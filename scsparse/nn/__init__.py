"""Torch building blocks shared by the scvi-tools models and :mod:`scsparse.generic`.

Nothing here imports AnnData, Lightning or scvi-tools: every piece of the maths is written once, here.
"""

from ._diagnostics import NoActiveFactorWarning, warn_no_active_factor
from ._elbo import gaussian_kl, importance_sampled_log_likelihood, sparse_vae_objective, sparse_vae_penalty
from ._encoder import GaussianEncoder, StackedEncoder
from ._group_lasso import group_column_norms, group_lasso_penalty, group_lasso_prox
from ._latent_prior import CorrelatedGaussianPrior
from ._likelihoods import log_bernoulli, log_multinomial, log_nb, log_normal, log_poisson, log_zinb
from ._masked_decoder import DEFAULT_MEMORY_BUDGET_MB, GPU_MEMORY_FRACTION, MaskedDecoder, default_memory_budget_mb
from ._mlp import MLP, make_activation, one_hot_covariates
from ._numerics import flush_denormals, flushing_denormals
from ._observation import COUNT_LIKELIHOODS, LIKELIHOODS, ObservationModel
from ._priors import calibrate_inverse_gamma, inverse_gamma_neg_log_prior
from ._sparse_codes import (
    BASES,
    base_kl,
    gamma_threshold_prior,
    kl_bernoulli,
    kl_gamma,
    relaxed_spike_slab_sample,
    sample_base,
    shifted_soft_threshold,
    spike_slab_kl,
    spike_slab_log_prob,
    straight_through_spike_slab_sample,
    straight_through_threshold,
    threshold_zero_probability,
    thresholded_laplace_gamma_log_prob,
    thresholded_log_prob,
)
from ._spike_slab_lasso import SpikeSlabLasso, slab_threshold, ssl_inclusion_logits
from ._surgery import copy_into_grown_, restore_gradient_masks_, train_only_

__all__ = [
    "BASES",
    "COUNT_LIKELIHOODS",
    "DEFAULT_MEMORY_BUDGET_MB",
    "GPU_MEMORY_FRACTION",
    "LIKELIHOODS",
    "MLP",
    "base_kl",
    "calibrate_inverse_gamma",
    "copy_into_grown_",
    "CorrelatedGaussianPrior",
    "default_memory_budget_mb",
    "flush_denormals",
    "flushing_denormals",
    "gamma_threshold_prior",
    "gaussian_kl",
    "GaussianEncoder",
    "group_column_norms",
    "group_lasso_penalty",
    "group_lasso_prox",
    "importance_sampled_log_likelihood",
    "inverse_gamma_neg_log_prior",
    "kl_bernoulli",
    "kl_gamma",
    "log_bernoulli",
    "log_multinomial",
    "log_nb",
    "log_normal",
    "log_poisson",
    "log_zinb",
    "make_activation",
    "MaskedDecoder",
    "NoActiveFactorWarning",
    "ObservationModel",
    "one_hot_covariates",
    "relaxed_spike_slab_sample",
    "restore_gradient_masks_",
    "sample_base",
    "shifted_soft_threshold",
    "slab_threshold",
    "sparse_vae_objective",
    "sparse_vae_penalty",
    "spike_slab_kl",
    "spike_slab_log_prob",
    "SpikeSlabLasso",
    "ssl_inclusion_logits",
    "StackedEncoder",
    "straight_through_spike_slab_sample",
    "straight_through_threshold",
    "threshold_zero_probability",
    "thresholded_laplace_gamma_log_prob",
    "thresholded_log_prob",
    "train_only_",
    "warn_no_active_factor",
]
