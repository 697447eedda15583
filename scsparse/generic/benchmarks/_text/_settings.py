"""The text benchmark's settings, targets and the paper's numbers, for ``_run`` and ``_summary``."""

from __future__ import annotations

from typing import Any

from .._paper import PAPER_HIDDEN_LAYERS

__all__ = ["N_TOP_WORDS", "PAPER_TEXT_LAMBDA1", "PAPER_TEXT_NLL", "TEXT_SETTINGS"]

#: Settings of the paper's PeerRead experiment (Moran et al. 2022, Table 6) and of the baselines.
TEXT_SETTINGS: dict[str, Any] = {
    "n_latent": 20,
    "n_hidden": 100,
    "n_layers": PAPER_HIDDEN_LAYERS,
    "lr": 0.01,
    "max_epochs": 40,
    "batch_size": 128,
    "lambda0": 5.0,
    "lambda1": 1.0,  # Table 6: 0.001 (PAPER_TEXT_LAMBDA1), see _paper.slab_threshold_note
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
}

#: The slab rate of Table 6 for PeerRead, paired there with an E-step without the Laplace normalisers.
PAPER_TEXT_LAMBDA1 = 0.001

#: The paper's held-out NLL on PeerRead (Table 1b, mean over five splits; sd in brackets).
PAPER_TEXT_NLL: dict[str, tuple[float, float]] = {
    "SparseVAE": (245.0, 2.0),
    "VAE": (252.6, 1.4),
    "beta-VAE": (254.5, 3.0),
    "OI-VAE": (260.6, 1.2),
    "VSC": (252.9, 2.0),
    "NMF": (267.2, 1.0),
}

#: Words shown per factor in the topic tables.
N_TOP_WORDS = 8
