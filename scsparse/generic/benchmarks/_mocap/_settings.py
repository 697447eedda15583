"""The mocap benchmark's settings, targets, the paper's numbers and its split, for ``_run`` and ``_summary``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["ACTIVE_REL", "MIN_RANGE", "MOCAP_SETTINGS", "MocapSplit", "N_MC_SAMPLES", "PAPER_TABLE2", "TOP_JOINTS"]

#: The paper's motion-capture settings (App. B); ``w_lr``: step of the proximal gradient updates of ``W``.
MOCAP_SETTINGS: dict[str, Any] = {
    "p": 8,
    "lambda_": 1.0,
    "lr": 1e-3,
    "w_lr": 1e-4,
    "theta_prior_weight": 1.0,
    "batch_size": 64,
    "max_epochs": 1000,
    "n_hidden": 32,
    "train_trials": (1, 2, 3, 5, 6, 7, 8, 9, 10),
    "test_trial": 11,
}

#: Importance samples for the held-out log-likelihood.
N_MC_SAMPLES = 100

#: Angles whose range in the training pool is below this are dropped.
MIN_RANGE = 1e-6

#: A factor is active when its largest group norm is at least this fraction of the largest overall.
ACTIVE_REL = 0.01

#: Joints listed per factor (Table 1).
TOP_JOINTS = 3

#: The paper's Table 2 (standard walk, test log-likelihood per frame) by number of training trials.
PAPER_TABLE2: dict[str, dict[int, float]] = {
    "VAE (K=16)": {1: -3518, 2: -251, 5: 18, 10: 114},
    "oi-VAE (K=4)": {1: -2722, 2: -214, 5: 27, 10: 70},
    "oi-VAE (K=8)": {1: -3196, 2: -195, 5: 29, 10: 75},
    "oi-VAE (K=16)": {1: -3550, 2: -188, 5: 31, 10: 108},
}


class MocapSplit:
    """Scaled training pool and test frames, the angle groups, and what was dropped.

    Attributes
    ----------
    X_pool, trial_pool
        Frames of the training trials scaled to [0, 1] by the pool's range, and their trial numbers.
    X_test
        Frames of the test trial on the same scale.
    joints, feature_names
        Joint (group) and ``joint_dof`` name of every kept angle.
    dropped
        Names of the constant angles that were left out.
    """

    def __init__(
        self,
        X_pool: np.ndarray,
        trial_pool: np.ndarray,
        X_test: np.ndarray,
        joints: np.ndarray,
        feature_names: list[str],
        dropped: list[str],
    ) -> None:
        self.X_pool, self.trial_pool, self.X_test = X_pool, trial_pool, X_test
        self.joints, self.feature_names, self.dropped = joints, feature_names, dropped

    def train_rows(self, trials: Sequence[int]) -> np.ndarray:
        """Frames of the given training trials."""
        return self.X_pool[np.isin(self.trial_pool, list(trials))]
