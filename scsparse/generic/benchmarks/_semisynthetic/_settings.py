"""The semisynthetic benchmark's settings, targets and the paper's numbers, for ``_run`` and ``_summary``."""

from __future__ import annotations

from typing import Any

from .._paper import PAPER_HIDDEN_LAYERS

__all__ = ["PAPER_SEMISYNTHETIC_LAMBDA1", "PAPER_SEMISYNTHETIC_NLL", "SEMISYNTHETIC_SETTINGS"]

#: The slab rate of Table 6 for semi-synthetic PeerRead, paired there with an E-step without the normalisers.
PAPER_SEMISYNTHETIC_LAMBDA1 = 0.01

#: Settings of the paper's semi-synthetic PeerRead experiment (Moran et al. 2022, Table 6) and the baselines.
SEMISYNTHETIC_SETTINGS: dict[str, Any] = {
    "n_latent": 20,
    "n_hidden": 50,
    "n_layers": PAPER_HIDDEN_LAYERS,
    "lr": 0.01,
    "max_epochs": 50,
    "batch_size": 128,
    "lambda0": 5.0,
    "lambda1": 1.0,  # Table 6: 0.01 (PAPER_SEMISYNTHETIC_LAMBDA1), see _paper.slab_threshold_note
    "betas": (2.0, 4.0, 6.0, 8.0, 16.0),
    "vsc_alpha": 0.01,
    "oivae_lambda": 1.0,
    "oivae_p": 5,
    "oivae_layers": 1,
    "nmf_alpha": 0.0,
    "vocab_size": 500,
    "n_docs": None,
    "n_is_samples": 50,
    "n_eval_docs": None,
    "n_topics": 20,
}

#: The paper's held-out NLL (Table 2; high, medium, low difference between train and test).
PAPER_SEMISYNTHETIC_NLL: dict[str, tuple[float, float, float]] = {
    "SparseVAE": (52.4, 49.2, 48.6),
    "VAE": (54.6, 52.3, 50.8),
    "beta-VAE": (54.7, 52.1, 51.0),
    "OI-VAE": (65.7, 64.4, 64.6),
    "VSC": (58.7, 56.1, 55.4),
    "NMF": (60.1, 58.0, 57.3),
}
