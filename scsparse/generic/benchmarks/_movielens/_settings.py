"""The movielens benchmark's settings, targets and the paper's numbers, for ``_run`` and ``_summary``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._paper import PAPER_HIDDEN_LAYERS

__all__ = ["FOLD_IN_FRACTION", "METHODS", "MOVIELENS_SETTINGS", "PAPER_TABLE_1A", "RunConfig"]

#: Settings of the paper's MovieLens experiment (Moran et al. 2022, Table 6 and Appendix C.3).
MOVIELENS_SETTINGS: dict[str, Any] = {
    "n_latent": 30,
    "n_hidden": 300,
    "n_layers": PAPER_HIDDEN_LAYERS,
    "lr": 1e-4,
    "max_epochs": 100,
    "batch_size": 100,
    "likelihood": "multinomial",  # Table 6: "Loss function: Softmax"
    "lambda0": 10.0,
    "lambda1": 1.0,
    "betas": (2.0, 4.0, 6.0, 8.0, 16.0),
    "vsc_alpha": 0.01,
    "oivae_lambda": 1.0,
    "oivae_p": 5,
    "nmf_alpha": 1.0,
}

#: Methods in the order of the paper's Table 1a.
METHODS: tuple[str, ...] = ("SparseVAE", "VAE", "beta-VAE", "OI-VAE", "VSC", "NMF")

#: Table 1a of the paper (ML-25M, 100k users x 300 movies; mean over five splits): NLL, Recall@5, NDCG@10.
PAPER_TABLE_1A: dict[str, tuple[float, float, float]] = {
    "SparseVAE": (170.9, 0.98, 0.98),
    "VAE": (175.9, 0.97, 0.96),
    "beta-VAE": (178.2, 0.95, 0.93),  # beta = 2
    "OI-VAE": (212.1, 0.51, 0.50),
    "VSC": (192.2, 0.79, 0.77),
    "NMF": (198.6, 0.90, 0.85),
}

#: Fraction of each held-out user's positive movies hidden in the fold-in protocol (Liang et al. 2018).
FOLD_IN_FRACTION = 0.2


@dataclass(frozen=True)
class RunConfig:
    """Resolved settings of one run."""

    n_latent: int
    n_hidden: int
    n_layers: int
    oivae_n_layers: int
    lr: float
    epochs: int
    batch_size: int
    betas: tuple[float, ...]
    n_samples: int
    w_init: float | None = None
