"""The bars benchmark's settings, targets and the paper's numbers, for ``_run`` and ``_summary``."""

from __future__ import annotations

from typing import Any

__all__ = ["BARS_SETTINGS", "N_MC_SAMPLES", "OFF_REL", "OWN_REL", "PAPER_TABLE3"]

#: The paper's bars settings (App. A); ``w_lr`` is the step of the proximal gradient updates of ``W``.
BARS_SETTINGS: dict[str, Any] = {
    "n_train": 2048,
    "n_test": 512,
    "size": 8,
    "intensity": 0.5,
    "noise_sd": 0.05,
    "p": 1,
    "lambda_": 1.0,
    "lr": 1e-2,
    "w_lr": 1e-4,
    "theta_prior_weight": 1.0,
    "batch_size": 64,
    "iterations": 20_000,
    "n_hidden": 32,
    # oi-VAE is fitted with seeds s, s + RESTART_SEED_STEP, ... and the fit with the lowest training objective
    # (the collapsed bound with the group lasso, OIVAE.training_objective on the training images) is kept; no
    # row label is used. With K = 8 a single fit ends, seed by seed, either with one factor per row or with 7
    # factors mixing rows, and the one-factor-per-row fits have the lower objective.
    "n_restarts": 4,
}

#: A factor touches a row when its influence is at least this fraction of the row's largest influence.
OWN_REL = 0.1

#: A factor is switched off when all its influences are below this fraction of the matrix's largest.
OFF_REL = 0.01

#: Importance samples for the log-likelihoods.
N_MC_SAMPLES = 100

#: The paper's Table 3 (K = 16): train / test log-likelihood per image.
PAPER_TABLE3 = {"oi-VAE (lambda=1)": (99.9325, 100.1394), "oi-VAE (lambda=0, no theta prior)": (95.0687, 95.4285)}
