"""The text benchmark's settings, targets and the paper's numbers, for ``_run`` and ``_summary``."""

from __future__ import annotations

from typing import Any

from .._documents import document_settings

__all__ = ["N_TOP_WORDS", "PAPER_TEXT_LAMBDA1", "PAPER_TEXT_NLL", "TEXT_SETTINGS"]

#: Settings of the paper's PeerRead experiment (Moran et al. 2022, Table 6) and of the baselines.
TEXT_SETTINGS: dict[str, Any] = document_settings(n_hidden=100, max_epochs=40)

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
