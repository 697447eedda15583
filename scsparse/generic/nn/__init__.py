"""Torch building blocks of the array baselines: sparse latent codes (VSC, thresholded VSC) and the group lasso
(oi-VAE).

The sparse VAE's own blocks are in :mod:`scsparse.nn`; nothing outside :mod:`scsparse.generic` uses these.
"""

from ._group_lasso import group_column_norms, group_lasso_penalty, group_lasso_prox
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

__all__ = [
    "BASES",
    "base_kl",
    "gamma_threshold_prior",
    "group_column_norms",
    "group_lasso_penalty",
    "group_lasso_prox",
    "kl_bernoulli",
    "kl_gamma",
    "relaxed_spike_slab_sample",
    "sample_base",
    "shifted_soft_threshold",
    "spike_slab_kl",
    "spike_slab_log_prob",
    "straight_through_spike_slab_sample",
    "straight_through_threshold",
    "threshold_zero_probability",
    "thresholded_laplace_gamma_log_prob",
    "thresholded_log_prob",
]
