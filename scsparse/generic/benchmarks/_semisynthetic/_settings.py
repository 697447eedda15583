"""The semisynthetic benchmark's settings, targets and the paper's numbers, for ``_run`` and ``_summary``."""

from __future__ import annotations

from typing import Any

from .._documents import document_settings

__all__ = ["PAPER_SEMISYNTHETIC_LAMBDA1", "PAPER_SEMISYNTHETIC_NLL", "SEMISYNTHETIC_SETTINGS"]

#: The slab rate of Table 6 for semi-synthetic PeerRead, paired there with an E-step without the normalisers.
PAPER_SEMISYNTHETIC_LAMBDA1 = 0.01

#: Settings of the paper's semi-synthetic PeerRead experiment (Moran et al. 2022, Table 6) and the baselines.
SEMISYNTHETIC_SETTINGS: dict[str, Any] = document_settings(n_hidden=50, max_epochs=50, n_topics=20)

#: The paper's held-out NLL (Table 2; high, medium, low difference between train and test).
PAPER_SEMISYNTHETIC_NLL: dict[str, tuple[float, float, float]] = {
    "SparseVAE": (52.4, 49.2, 48.6),
    "VAE": (54.6, 52.3, 50.8),
    "beta-VAE": (54.7, 52.1, 51.0),
    "OI-VAE": (65.7, 64.4, 64.6),
    "VSC": (58.7, 56.1, 55.4),
    "NMF": (60.1, 58.0, 57.3),
}
