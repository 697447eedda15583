"""The patches benchmark's settings, targets and the paper's numbers, for ``_run`` and ``_summary``."""

from __future__ import annotations

from typing import Any

from scsparse.generic.models import (
    SPARSE_CODING_THRESHOLDS,
)

__all__ = ["METHODS", "PAPER_TABLE1", "PATCH_SETTINGS", "VARIATIONAL"]

#: Methods in the order of the paper's Table 1 (FISTA first, then the variational priors).
METHODS: tuple[str, ...] = (
    "fista",
    "gaussian",
    "laplace",
    "spike_slab",
    "thresholded_gaussian",
    "thresholded_laplace",
)

VARIATIONAL: tuple[str, ...] = METHODS[1:]

#: Fallah & Rozell (2022) Table 1 / Table 6, J = 20: validation loss (Eq. 10) and multi-information.
PAPER_TABLE1: dict[str, dict[str, float]] = {
    "fista": {"val_loss": 1.01e2, "multi_info": 8.75e1},
    "gaussian": {"val_loss": 1.35e3, "multi_info": 7.36e2},
    "laplace": {"val_loss": 5.79e2, "multi_info": 5.34e2},
    "spike_slab": {"val_loss": 2.39e2, "multi_info": 1.96e2},
    "thresholded_gaussian": {"val_loss": 2.30e2, "multi_info": 1.76e2},
    "thresholded_laplace": {"val_loss": 1.94e2, "multi_info": 1.91e2},
}

#: The paper's settings (app. D) and those of this implementation.
PATCH_SETTINGS: dict[str, Any] = {
    "patch_size": 16,
    "n_train": 80_000,
    "n_val": 16_000,
    "n_atoms": 256,
    "max_epochs": 300,
    "batch_size": 100,
    "lambda_l1": 20.0,  # Eq. 10; ~10% non-zero FISTA codes
    "kappa_fista": 1e-3,
    "kappa_vi": 1e-4,
    "kl_weight": 1e-2,
    "prior_scale": 0.1,  # Laplace b0; Gaussian variance (std sqrt(0.1))
    "spike_prior": 0.1,
    "thresholds": SPARSE_CODING_THRESHOLDS,
    "n_samples": 20,  # J of max-ELBO sampling
    "lr_encoder": 1e-2,  # SGD + Nesterov momentum 0.9, one-cycle schedule
    "lr_dictionary": 0.5,  # plain gradient steps (dictionary_step)
    "lr_decay": 0.99,  # per epoch, the dictionary's step size
    "encoder_hidden": 512,
    "encoder_layers": 3,
    "fista_iters": 100,
}
