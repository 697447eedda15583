"""Synthetic benchmark of Moran et al. (2022): recovering the ground-truth factors of Eq. 9.

Every method of the paper's Figure 3 (sparse VAE, VAE, beta-VAE, VSC, oi-VAE) is fitted on the same
simulated datasets, splits and seeds in one run, and scored by held-out NLL and MSE, DCI disentanglement,
support F-score of ``W`` (methods with a feature x factor loading) and the number of active factors.
"""

from __future__ import annotations

import functools
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from scsparse.data._simulate import EQ9_FEATURE_NAMES, simulate_eq9
from scsparse.generic.metrics import dci_disentanglement, estimated_support, match_factors, support_confusion

from ._common import (
    PAPER_DEPTH_NOTE,
    PAPER_HIDDEN_LAYERS,
    RESTART_SEED_STEP,
    best_of_restarts,
    check_positive_int,
    make_output_dir,
    markdown_table,
    provenance,
    provenance_markdown,
    quiet_training_logs,
    torch_threads,
    write_results,
)

if TYPE_CHECKING:  # pragma: no cover
    from anndata import AnnData

    from scsparse.generic.models import ArrayModel

__all__ = [
    "BETA_GRID",
    "METHODS",
    "OURS_CORRELATED",
    "OURS_SINGLE",
    "RESULT_COLUMNS",
    "SYNTHETIC_SETTINGS",
    "MethodOutput",
    "SyntheticSplit",
    "active_units",
    "fit_beta_vae",
    "fit_oivae",
    "fit_sparsevae",
    "fit_vae",
    "fit_vsc",
    "run_synthetic",
    "select_beta",
    "split_indices",
]

#: Columns of ``results.csv``, in order.
RESULT_COLUMNS: tuple[str, ...] = (
    "method",
    "seed",
    "rho",
    "beta",
    "n_active",
    "active_units",
    "w_fscore",
    "w_precision",
    "w_recall",
    "dci",
    "heldout_nll",
    "heldout_mse",
    "fit_seconds",
)

#: Settings of the paper's synthetic experiment (Moran et al. 2022, Table 6), shared by every method.
SYNTHETIC_SETTINGS: dict[str, Any] = {
    "n_hidden": 50,
    "n_layers": PAPER_HIDDEN_LAYERS,
    "lr": 0.01,
    "max_epochs": 200,
    "batch_size": 100,
    "gene_likelihood": "normal",
    "lambda0": 10.0,
    "lambda1": 1.0,
    "dropout_rate": 0.0,
    # the paper's decoder: no first-layer bias (H1 (w ⊙ z)); pinned here, not left to SparseVAE's default
    "first_bias": False,
    "vsc_alpha": 0.01,
    "oivae_lambda": 1.0,
    "oivae_p": 5,
    "kl_warmup_fraction": 0.25,
    # every method is fitted with seeds s + r * RESTART_SEED_STEP and the fit with the lowest training objective
    # is kept (its own objective; scsparse.model.select_best for the sparse VAE; no true factor is used);
    # "SparseVAE (1 fit)" reports the sparse VAE's restart 0 alone
    "n_restarts": 4,
}

#: The paper's beta grid for the beta-VAE (Table 6).
BETA_GRID: tuple[float, ...] = (2.0, 4.0, 6.0, 8.0, 16.0)
#: The paper's correlations of the true factors.
PAPER_RHOS: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8)
#: The paper's number of datasets per correlation.
PAPER_SEEDS = 25
#: Epochs with ``quick=True`` (a smoke run: every method, one rho, one seed).
QUICK_EPOCHS = 4
#: The single correlation of a quick run.
QUICK_RHO = 0.4
#: Fraction of the cells held out for the test set.
TEST_FRACTION = 0.2
#: Offset added to the seed for the train/test split, so the split stream differs from the data stream.
_SPLIT_SEED_OFFSET = 1_000_003
#: Seeds of the validation datasets that choose beta: ``VALIDATION_SEED + i`` (never a test seed < 10000).
VALIDATION_SEED = 10_000
#: Importance samples for the held-out negative log-likelihood.
N_MC_SAMPLES = 100
#: Seed of the DCI regressors and of their train/test split (fixed across runs).
DCI_SEED = 0
#: Variance of a posterior mean across cells above which a latent unit counts as active (Burda et al. 2016).
ACTIVE_UNIT_THRESHOLD = 0.01
#: The paper's number of active factors, and the issue's target for the W support F-score (rho <= 0.4).
TARGET_ACTIVE = 2
TARGET_FSCORE = 0.9
TARGET_FSCORE_MAX_RHO = 0.4
#: Method names of the issue's comparisons.
OURS, VAE_NAME, BETA_NAME, VSC_NAME, OIVAE_NAME = "SparseVAE", "VAE", "beta-VAE", "VSC", "oi-VAE"
#: The sparse VAE without restarts (restart 0 of :data:`OURS`), reported beside it.
OURS_SINGLE = "SparseVAE (1 fit)"
#: The sparse VAE with a learned correlation of the codes, ``z ~ N(0, Sigma_z)`` (the paper's Appendix B.2).
OURS_CORRELATED = "SparseVAE (correlated prior)"
#: The sparse VAE variants whose targets the summary checks, in order.
OURS_VARIANTS: tuple[str, ...] = (OURS, OURS_CORRELATED)


@dataclass(frozen=True, eq=False)
class SyntheticSplit:
    """One simulated dataset and its fixed train/test split, handed to every method.

    Attributes
    ----------
    adata_all
        All cells (train and test, in simulation order), ``X`` the data, ``obsm["Z_true"]`` the factors.
    adata_train
        Copy of the training cells (80%); fit on this one.
    adata_test
        Copy of the held-out cells (20%).
    train_idx, test_idx
        Row indices of ``adata_all`` in each part.
    seed
        Seed of the simulation and of the models.
    rho
        Correlation of the true factors.
    """

    adata_all: AnnData
    adata_train: AnnData
    adata_test: AnnData
    train_idx: np.ndarray
    test_idx: np.ndarray
    seed: int
    rho: float

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(X_train, X_test, X_all)`` as ``float32`` arrays (the input of the generic models)."""
        return tuple(np.asarray(a.X, dtype=np.float32) for a in (self.adata_train, self.adata_test, self.adata_all))


@dataclass(eq=False)
class MethodOutput:
    """What a method returns for scoring.

    Attributes
    ----------
    z
        Posterior means (codes) of ALL cells, rows in the order of ``adata_all``, shape ``(n_obs, K)``.
    test_mean
        Reconstruction of the test cells (decoder mean at the posterior mean), shape ``(n_test, G)``.
    heldout_nll
        Negative log-likelihood per test cell (a true likelihood; ``nan`` if the method has none).
    fit_seconds
        Wall-clock seconds to build and train the model.
    W, pip
        Estimated factor-to-feature matrix and inclusion probabilities ``(G, K)``; ``None`` for a method
        without a feature-level loading (its ``w_fscore`` is then ``nan``).
    n_active
        Number of factors the model itself keeps switched on (``nan`` if it has no such mechanism).
    beta
        KL weight of a beta-VAE (``nan`` for the other methods).
    extra
        Anything else worth keeping (e.g. names of the active factors).
    """

    z: np.ndarray
    test_mean: np.ndarray
    heldout_nll: float
    fit_seconds: float
    W: np.ndarray | None = None
    pip: np.ndarray | None = None
    n_active: float = math.nan
    beta: float = math.nan
    extra: dict[str, Any] = field(default_factory=dict)


#: A method: ``fit_fn(split, max_epochs, n_latent) -> MethodOutput``.
FitFn = Callable[[SyntheticSplit, int, int], MethodOutput]


def split_indices(n_obs: int, seed: int, test_fraction: float = TEST_FRACTION) -> tuple[np.ndarray, np.ndarray]:
    """Fixed train/test split of ``n_obs`` cells for a given seed, independent of any model.

    Parameters
    ----------
    n_obs
        Number of cells.
    seed
        Dataset seed; the split is drawn with ``numpy.random.default_rng(seed + 1_000_003)``.
    test_fraction
        Fraction held out (rounded, at least one cell in each part).

    Returns
    -------
    tuple of numpy.ndarray
        Sorted ``train_idx`` and ``test_idx``.

    Examples
    --------
    >>> train, test = split_indices(10, seed=0)
    >>> len(train), len(test)
    (8, 2)
    """
    rng = np.random.default_rng(int(seed) + _SPLIT_SEED_OFFSET)
    n_test = min(max(int(round(test_fraction * n_obs)), 1), n_obs - 1)
    perm = rng.permutation(n_obs)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def _make_split(n_obs: int, rho: float, seed: int) -> tuple[Any, SyntheticSplit]:
    data = simulate_eq9(n_obs, rho, seed=seed)
    adata = data.to_anndata()
    train_idx, test_idx = split_indices(n_obs, seed)
    # Standardise every feature with training-set statistics: the features of Eq. 9 have variances from
    # 1.5 to ~65, and the spike-and-slab threshold on |w_jk| (about 0.26 for lambda0=10, lambda1=1) is
    # only meaningful when features are on a common unit scale. Held-out NLL and MSE are on this scale.
    X = np.asarray(adata.X, dtype=np.float64)
    mean, sd = X[train_idx].mean(0), X[train_idx].std(0)
    adata.X = ((X - mean) / sd).astype(np.float32)
    split = SyntheticSplit(
        adata_all=adata,
        adata_train=adata[train_idx].copy(),
        adata_test=adata[test_idx].copy(),
        train_idx=train_idx,
        test_idx=test_idx,
        seed=int(seed),
        rho=float(rho),
    )
    return data, split


# ---------------------------------------------------------------------------------------------- methods
def fit_sparsevae(
    split: SyntheticSplit,
    max_epochs: int,
    n_latent: int = 5,
    n_restarts: int | None = None,
    latent_prior: str = "identity",
) -> MethodOutput:
    """Fit :class:`scsparse.model.SparseVAE` with the paper's synthetic settings (Table 6).

    Gaussian likelihood, ``n_hidden=50``, ``n_layers=2`` (the paper's "3 layers", see ``PAPER_HIDDEN_LAYERS``),
    the paper's decoder without a first-layer bias (``SYNTHETIC_SETTINGS["first_bias"]``; the package's
    default has one), ``lambda0=10``, ``lambda1=1``, no dropout, Adam with ``lr=0.01``, minibatches of 100,
    every training cell used for training (``train_size=1``). Of ``n_restarts`` fits
    (:func:`._common.best_of_restarts`) the one with the lowest training objective is kept
    (:func:`scsparse.model.select_best`); the true factors play no part in the choice.

    Parameters
    ----------
    split
        The dataset; the model sees only ``split.adata_train``.
    max_epochs
        Training epochs (the paper: 200).
    n_latent
        Number of latent factors ``K`` (an upper bound; the paper: 5).
    n_restarts
        Number of fits to choose from (default ``SYNTHETIC_SETTINGS["n_restarts"]``; 1: a single fit with
        ``split.seed``).
    latent_prior
        ``"identity"`` (the paper's ``N(0, I)``) or ``"correlated"`` (``N(0, Sigma_z)`` with a learned
        correlation matrix; see :class:`scsparse.model.SparseVAE`).

    Returns
    -------
    MethodOutput
        Codes of all cells, test reconstruction, held-out NLL (importance sampling, 100 samples), ``W``,
        ``p*`` and the number of active factors; ``fit_seconds`` covers every restart.

    Examples
    --------
    >>> from scsparse.generic.benchmarks._synthetic import _make_split, fit_sparsevae
    >>> data, split = _make_split(200, rho=0.4, seed=0)
    >>> fit_sparsevae(split, max_epochs=2).W.shape  # doctest: +SKIP
    (7, 5)
    """
    from scsparse.model import SparseVAE

    s = SYNTHETIC_SETTINGS
    adata_train = split.adata_train.copy()
    SparseVAE.setup_anndata(adata_train)

    def fit(seed: int) -> SparseVAE:
        model = SparseVAE(
            adata_train,
            n_latent=n_latent,
            n_hidden=s["n_hidden"],
            n_layers=s["n_layers"],
            gene_likelihood=s["gene_likelihood"],
            lambda0=s["lambda0"],
            lambda1=s["lambda1"],
            dropout_rate=s["dropout_rate"],
            latent_prior=latent_prior,
            seed=seed,
            decoder_kwargs={"first_bias": s["first_bias"]},
        )
        model.train(
            max_epochs=max_epochs,
            lr=s["lr"],
            batch_size=s["batch_size"],
            train_size=1.0,
            enable_progress_bar=False,
        )
        return model

    t0 = time.perf_counter()
    model = best_of_restarts(fit, split.seed, s["n_restarts"] if n_restarts is None else n_restarts)
    fit_seconds = time.perf_counter() - t0
    model.module.eval()
    # New AnnData objects get the training set-up transferred by scvi-tools (_validate_anndata).
    adata_all = split.adata_all.copy()
    adata_test = split.adata_test.copy()
    z = np.asarray(model.get_latent_representation(adata_all), dtype=np.float64)
    test_mean = np.asarray(model.get_normalized_expression(adata_test, return_numpy=True), dtype=np.float64)
    nll = model.get_heldout_nll(adata_test, n_mc_samples=N_MC_SAMPLES)
    active = model.active_factors()
    return MethodOutput(
        z=z,
        test_mean=test_mean,
        heldout_nll=float(nll),
        fit_seconds=fit_seconds,
        W=model.get_loadings().to_numpy(dtype=np.float64),
        pip=model.get_inclusion_probabilities().to_numpy(dtype=np.float64),
        n_active=float(len(active)),
        extra={"active_factors": active, "eta": model.get_factor_weights().to_numpy()},
    )


def _fit_array_model(
    make: Callable[[int], ArrayModel],
    split: SyntheticSplit,
    max_epochs: int,
    nll_kwargs: dict[str, Any] | None = None,
) -> tuple[MethodOutput, ArrayModel]:
    """Fit a generic model on the training cells and collect codes, test reconstruction and held-out NLL.

    ``make(seed)`` builds the unfitted model. Like the sparse VAE, every method is fitted
    ``SYNTHETIC_SETTINGS["n_restarts"]`` times (seeds ``split.seed + r * RESTART_SEED_STEP``) and the fit with
    the lowest training objective on the training cells is kept (its own objective, no true factor used);
    ``fit_seconds`` covers every fit.
    """
    X_train, X_test, X_all = split.arrays()
    t0 = time.perf_counter()
    model = best_of_restarts(
        lambda seed: make(seed).fit(X_train, max_epochs=max_epochs),
        split.seed,
        SYNTHETIC_SETTINGS["n_restarts"],
        objective=lambda fitted: fitted.training_objective(X_train),
    )
    fit_seconds = time.perf_counter() - t0
    out = MethodOutput(
        z=np.asarray(model.transform(X_all), dtype=np.float64),
        test_mean=np.asarray(model.predict_mean(X_test), dtype=np.float64),
        heldout_nll=float(model.heldout_nll(X_test, n_samples=N_MC_SAMPLES, **(nll_kwargs or {}))),
        fit_seconds=fit_seconds,
    )
    return out, model


def _dense_settings() -> dict[str, Any]:
    s = SYNTHETIC_SETTINGS
    return {"n_hidden": s["n_hidden"], "n_layers": s["n_layers"], "lr": s["lr"], "batch_size": s["batch_size"]}


@functools.cache
def _warmup_vae_class() -> type:
    """:class:`scsparse.generic.models.VAE` with the sparse VAE's linear KL warm-up (built on first use)."""
    from scsparse.generic.models import VAE

    class WarmupVAE(VAE):
        """VAE whose KL weight rises linearly from 0 to ``beta`` over the first ``kl_warmup_fraction`` of the epochs."""

        def __init__(self, *, kl_warmup_fraction: float = 0.25, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.kl_warmup_fraction = float(kl_warmup_fraction)
            self._epochs = self.max_epochs

        def fit(self, X: Any, *, max_epochs: int | None = None, verbose: bool = False) -> WarmupVAE:
            self._epochs = self.max_epochs if max_epochs is None else int(max_epochs)
            super().fit(X, max_epochs=max_epochs, verbose=verbose)
            return self

        def build(self, n_features: int, data: Any) -> Any:
            module = super().build(n_features, data)
            module.kl_warmup_epochs = round(self.kl_warmup_fraction * self._epochs)
            return module

    return WarmupVAE


def fit_beta_vae(split: SyntheticSplit, max_epochs: int, n_latent: int = 5, beta: float = 4.0) -> MethodOutput:
    """Fit a (beta-)VAE (:class:`scsparse.generic.models.VAE`) with the paper's synthetic settings.

    Gaussian likelihood with learned per-feature variances, encoder and decoder MLPs of 2 hidden layers of 50, no
    dropout, Adam ``lr=0.01``, minibatches of 100, fitted on the training cells. The KL weight rises
    linearly from 0 to ``beta`` over the first quarter of the epochs, the warm-up the sparse VAE gets, so
    that the two are trained on the same schedule (without it the dense VAEs often collapsed onto the
    prior in the first epochs).

    Parameters
    ----------
    split
        The dataset; the model sees only the training cells.
    max_epochs
        Training epochs (the paper: 200).
    n_latent
        Number of latent factors ``K`` (the paper: 5).
    beta
        KL weight (1: the VAE; the paper's beta-VAE grid: 2, 4, 6, 8, 16).

    Returns
    -------
    MethodOutput
        Codes, test reconstruction and importance-sampled held-out NLL of the fitted model (the estimate
        of ``-log p(x)``, whatever ``beta`` was used in training); no ``W``, no factor selection.

    Examples
    --------
    >>> from scsparse.generic.benchmarks._synthetic import _make_split, fit_beta_vae
    >>> data, split = _make_split(200, rho=0.4, seed=0)
    >>> res = fit_beta_vae(split, max_epochs=2, beta=4.0)
    >>> res.z.shape, res.beta
    ((200, 5), 4.0)
    """

    def make(seed: int) -> ArrayModel:
        return _warmup_vae_class()(
            kl_warmup_fraction=SYNTHETIC_SETTINGS["kl_warmup_fraction"],
            n_latent=n_latent,
            likelihood="normal",
            beta=beta,
            seed=seed,
            dropout_rate=SYNTHETIC_SETTINGS["dropout_rate"],
            max_epochs=max_epochs,
            **_dense_settings(),
        )

    out, _ = _fit_array_model(make, split, max_epochs)
    out.beta = float(beta)
    return out


def fit_vae(split: SyntheticSplit, max_epochs: int, n_latent: int = 5) -> MethodOutput:
    """Fit the VAE: :func:`fit_beta_vae` with ``beta = 1`` (its ``beta`` column is left ``nan``).

    Examples
    --------
    >>> from scsparse.generic.benchmarks._synthetic import _make_split, fit_vae
    >>> data, split = _make_split(200, rho=0.0, seed=0)
    >>> fit_vae(split, max_epochs=2).W is None
    True
    """
    out = fit_beta_vae(split, max_epochs, n_latent, beta=1.0)
    out.beta = math.nan
    return out


def fit_vsc(split: SyntheticSplit, max_epochs: int, n_latent: int = 5) -> MethodOutput:
    """Fit variational sparse coding (:class:`scsparse.generic.models.VSC`) with the paper's settings.

    ``alpha = 0.01`` (Table 6), 20 pseudo-inputs, MLPs of 2 hidden layers of 50, Adam ``lr=0.01``, batch 100, the
    default ``c`` schedule (50 -> 200) and spike warm-up. Codes are the posterior means ``gamma * mu``;
    the held-out NLL is the importance-weighted bound (100 exact spike-and-slab samples), an upper bound
    on ``-log p(x)``. No ``W`` and no factor selection (sparsity is per cell, in the codes).

    Examples
    --------
    >>> from scsparse.generic.benchmarks._synthetic import _make_split, fit_vsc
    >>> data, split = _make_split(200, rho=0.0, seed=0)
    >>> fit_vsc(split, max_epochs=2).z.shape
    (200, 5)
    """
    from scsparse.generic.models import VSC

    def make(seed: int) -> ArrayModel:
        return VSC(
            n_latent=n_latent,
            alpha=SYNTHETIC_SETTINGS["vsc_alpha"],
            likelihood="normal",
            seed=seed,
            max_epochs=max_epochs,
            **_dense_settings(),
        )

    out, _ = _fit_array_model(make, split, max_epochs, nll_kwargs={"importance_weighted": True})
    return out


def fit_oivae(split: SyntheticSplit, max_epochs: int, n_latent: int = 5) -> MethodOutput:
    """Fit oi-VAE (:class:`scsparse.generic.models.OIVAE`) with every feature its own group.

    As in the sparse VAE paper: singleton groups, ``lambda = 1``, ``p = 5`` (Table 6), group generators
    and encoder of 2 hidden layers of 50, Adam ``lr=0.01``, batch 100, the proximal group-lasso step after every
    optimiser step. With singleton groups ``||W^(j)[:, k]||`` is a feature x factor loading: it is scored
    like the sparse VAE's ``W`` (support ``>= 0.01``; no ``p*``), and a factor is active when some
    feature's column norm is non-zero.

    Examples
    --------
    >>> from scsparse.generic.benchmarks._synthetic import _make_split, fit_oivae
    >>> data, split = _make_split(200, rho=0.0, seed=0)
    >>> fit_oivae(split, max_epochs=2).W.shape
    (7, 5)
    """
    from scsparse.generic.models import OIVAE

    s = SYNTHETIC_SETTINGS
    n_features = split.adata_train.n_vars

    def make(seed: int) -> ArrayModel:
        return OIVAE(
            groups=np.arange(n_features),
            n_latent=n_latent,
            p=s["oivae_p"],
            lambda_=s["oivae_lambda"],
            likelihood="normal",
            seed=seed,
            max_epochs=max_epochs,
            **_dense_settings(),
        )

    out, model = _fit_array_model(make, split, max_epochs)
    out.W = np.asarray(model.loadings(), dtype=np.float64)
    out.n_active = float(np.sum(model.active_factors()))
    return out


#: Methods compared by default, as ``(name, fit_fn)`` pairs. ``fit_beta_vae`` gets its ``beta`` per rho
#: from :func:`select_beta` inside :func:`run_synthetic`.
METHODS: list[tuple[str, FitFn]] = [
    (OURS, fit_sparsevae),
    (OURS_SINGLE, functools.partial(fit_sparsevae, n_restarts=1)),
    (OURS_CORRELATED, functools.partial(fit_sparsevae, latent_prior="correlated")),
    (VAE_NAME, fit_vae),
    (BETA_NAME, fit_beta_vae),
    (VSC_NAME, fit_vsc),
    (OIVAE_NAME, fit_oivae),
]


def active_units(z: np.ndarray, threshold: float = ACTIVE_UNIT_THRESHOLD) -> int:
    """Number of active latent units (Burda et al. 2016): ``Var_cells(E_q[z_k | x]) > threshold``.

    A unit whose posterior mean does not vary across cells carries no information about them (it has
    collapsed onto the prior or been switched off); this count applies to every method alike.

    Parameters
    ----------
    z
        Posterior means of the cells, shape ``(n_obs, K)``.
    threshold
        Variance threshold (Burda et al.: 0.01).

    Returns
    -------
    int
        Number of columns of ``z`` whose variance across rows exceeds ``threshold``.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.column_stack([np.linspace(-1, 1, 50), np.full(50, 0.3)])
    >>> active_units(z)
    1
    """
    z = np.asarray(z, dtype=np.float64)
    if z.ndim != 2:
        raise ValueError(f"z must be 2-d (cells x factors), got shape {z.shape}")
    return int(np.sum(z.var(axis=0) > threshold))


def _score(data: Any, split: SyntheticSplit, res: MethodOutput) -> dict[str, float]:
    """Metrics of one fitted method on one dataset."""
    z_all = np.asarray(res.z, dtype=np.float64)
    if z_all.shape[0] != split.adata_all.n_obs:
        raise ValueError(f"codes have {z_all.shape[0]} rows, expected {split.adata_all.n_obs} (all cells)")
    if not np.all(np.isfinite(z_all)):
        raise FloatingPointError("the method returned non-finite codes (training diverged)")
    Z = np.asarray(data.Z, dtype=np.float64)
    f, prec, rec = math.nan, math.nan, math.nan
    match = None
    if res.W is not None:
        # a true factor is matched to a code by correlation, columns of W that select any feature first: a
        # switched-off code can still track a true factor (see match_factors)
        selecting = estimated_support(res.W, pip=res.pip).any(axis=0)
        match = match_factors(z_all[split.train_idx], Z[split.train_idx], among=selecting)
        conf = support_confusion(res.W, data.W_support, pip=res.pip, column_match=match)
        f, prec, rec = conf.f1, conf.precision, conf.recall
    dci = dci_disentanglement(z_all, Z, regressor="gbt", seed=DCI_SEED).disentanglement
    x_test = np.asarray(split.adata_test.X, dtype=np.float64)
    mse = float(np.mean((x_test - np.asarray(res.test_mean, dtype=np.float64)) ** 2))
    res.extra["column_match"] = match
    return {
        "beta": float(res.beta),
        "n_active": float(res.n_active),
        "active_units": float(active_units(z_all)),
        "w_fscore": float(f),
        "w_precision": float(prec),
        "w_recall": float(rec),
        "dci": float(dci),
        "heldout_nll": float(res.heldout_nll),
        "heldout_mse": mse,
        "fit_seconds": float(res.fit_seconds),
    }


def select_beta(
    rho: float,
    *,
    betas: Sequence[float] = BETA_GRID,
    n_validation: int = 1,
    n_obs: int = 1000,
    max_epochs: int = 200,
    n_latent: int = 5,
    verbose: bool = False,
) -> tuple[float, pd.DataFrame]:
    """Choose the beta-VAE's ``beta`` for one ``rho`` on validation datasets, never on the test datasets.

    Rule: for ``i = 0 .. n_validation - 1`` simulate an Eq. 9 dataset with seed ``10000 + i`` (disjoint
    from the test seeds ``0 .. seeds - 1``), fit a beta-VAE for every ``beta`` on its training cells,
    compute the DCI disentanglement of all its cells' codes; keep the ``beta`` with the highest mean
    validation DCI (ties: the smaller ``beta``). DCI is the metric the benchmark compares, and the
    validation data are simulated from the same model as the test data, so this picks the best beta the
    way the paper's "best beta" does but without looking at any test dataset.

    Parameters
    ----------
    rho
        Correlation of the true factors.
    betas
        Candidates (the paper: 2, 4, 6, 8, 16).
    n_validation
        Number of validation datasets.
    n_obs, max_epochs, n_latent
        As in :func:`run_synthetic`.
    verbose
        Print one line per fit.

    Returns
    -------
    tuple
        The chosen ``beta`` and a table with one row per validation dataset and ``beta``
        (``rho``, ``validation_seed``, ``beta``, ``dci``, ``heldout_nll``, ``chosen``).

    Examples
    --------
    >>> from scsparse.generic.benchmarks._synthetic import select_beta
    >>> beta, table = select_beta(0.4, betas=[2.0, 8.0], n_obs=200, max_epochs=2)
    >>> beta in (2.0, 8.0), len(table)
    (True, 2)
    """
    betas = [float(b) for b in betas]
    if not betas or any(not (b > 0 and math.isfinite(b)) for b in betas):
        raise ValueError(f"betas must be a non-empty list of positive numbers, got {betas}")
    check_positive_int("n_validation", n_validation)
    rows = []
    for i in range(int(n_validation)):
        data, split = _make_split(n_obs, rho, VALIDATION_SEED + i)
        for beta in betas:
            res = fit_beta_vae(split, max_epochs, n_latent, beta=beta)
            dci = dci_disentanglement(res.z, data.Z, regressor="gbt", seed=DCI_SEED).disentanglement
            rows.append(
                {
                    "rho": float(rho),
                    "validation_seed": VALIDATION_SEED + i,
                    "beta": beta,
                    "dci": float(dci),
                    "heldout_nll": res.heldout_nll,
                }
            )
            if verbose:
                print(
                    f"[synthetic] select beta rho={rho:g} val seed={VALIDATION_SEED + i} beta={beta:g}: DCI={dci:.3f}"
                )
    table = pd.DataFrame(rows)
    mean_dci = table.groupby("beta", sort=True)["dci"].mean()
    best = float(mean_dci.index[int(np.argmax(mean_dci.to_numpy()))])  # argmax: first (smallest) on ties
    table["chosen"] = table["beta"] == best
    return best, table


# ---------------------------------------------------------------------------------------------- summary
def _mean(df: pd.DataFrame, method: str, rho: float, metric: str) -> float:
    v = df[(df["method"] == method) & np.isclose(df["rho"], rho)][metric].to_numpy(dtype=np.float64)
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else math.nan


def _beta_label(df: pd.DataFrame, rho: float) -> str:
    b = df[(df["method"] == BETA_NAME) & np.isclose(df["rho"], rho)]["beta"].dropna().unique()
    return f"{BETA_NAME} (beta={', '.join(f'{x:g}' for x in b)})" if b.size else BETA_NAME


def _paired_wins(df: pd.DataFrame, rho: float, metric: str, rivals: Sequence[str], ours: str) -> tuple[int, int]:
    """Datasets (seeds) at ``rho`` where ``ours``' ``metric`` is above every rival's."""
    at = df[np.isclose(df["rho"], rho)]
    wide = at.pivot_table(index="seed", columns="method", values=metric, aggfunc="first")
    if ours not in wide or any(r not in wide for r in rivals):
        return 0, 0
    wins = np.ones(len(wide), dtype=bool)
    for r in rivals:
        wins &= (wide[ours] > wide[r]).to_numpy()
    return int(wins.sum()), int(len(wide))


def _variant_targets(
    df: pd.DataFrame, rhos: Sequence[float], ours: str, rivals: Sequence[str], *, quick: bool
) -> tuple[list[str], list[str]]:
    """Target rows (DCI at every rho, F-score at rho <= 0.4) of one sparse VAE variant, and why any was missed."""
    lines: list[str] = []
    why: list[str] = []
    sv = df[df["method"] == ours]
    for r in rhos:
        mean_dci = _mean(df, ours, r, "dci")
        parts = [f"{ours} {mean_dci:.3f}"]
        ok = True
        for m in rivals:
            v = _mean(df, m, r, "dci")
            parts.append(f"{_beta_label(df, r) if m == BETA_NAME else m} {v:.3f}")
            ok &= bool(mean_dci > v)
        wins, n = _paired_wins(df, r, "dci", rivals, ours=ours)
        verdict = "not assessed (quick)" if quick else ("met" if ok else "not met")
        lines.append(
            f"| {ours}: DCI above VAE and beta-VAE | {r:g} | mean DCI {' vs '.join(parts)}; "
            f"above both in {wins}/{n} datasets | {verdict} |"
        )
        if not ok and not quick:
            at = sv[np.isclose(sv["rho"], r)]
            counts = at["n_active"].value_counts().sort_index()
            act = ", ".join(f"{int(k)} active: {int(c)}" for k, c in counts.items())
            why.append(
                f"- {ours}, DCI at rho={r:g}: mean {mean_dci:.3f} (sd {at['dci'].std(ddof=1):.3f} over {len(at)} "
                f"datasets), above both baselines in {wins}/{n} datasets. Active factors per "
                f"dataset: {act}. With more than {TARGET_ACTIVE} active codes DCI is diluted (a true factor is "
                "spread over several codes); with fewer, one code mixes both factors. The VAE and beta-VAE have no "
                "such switch and are scored on the same 5 codes."
            )
    for r in [x for x in rhos if x <= TARGET_FSCORE_MAX_RHO + 1e-12]:
        at = sv[np.isclose(sv["rho"], r)]
        if not len(at):
            continue
        f = float(at["w_fscore"].mean())
        k = int((at["w_fscore"] >= TARGET_FSCORE).sum())
        prec, rec = float(at["w_precision"].mean()), float(at["w_recall"].mean())
        met = f >= TARGET_FSCORE
        verdict = "not assessed (quick)" if quick else ("met" if met else "not met")
        lines.append(
            f"| {ours}: W support F-score >= {TARGET_FSCORE} (rho <= {TARGET_FSCORE_MAX_RHO:g}) | {r:g} "
            f"| mean F {f:.3f} (precision {prec:.3f}, recall {rec:.3f}); >= {TARGET_FSCORE} in {k}/{len(at)} "
            f"datasets | {verdict} |"
        )
        if not met and not quick:
            cause = (
                "false positives dominate: entries of W selected outside the true support, including every "
                "selected entry of extra (unmatched) active columns"
                if prec < rec
                else "missed entries dominate: true feature-factor links whose |w| or p* fell below the "
                "thresholds (|w| >= 0.01 and p* >= 0.5)"
            )
            why.append(
                f"- {ours}, F-score at rho={r:g}: mean {f:.3f}, precision {prec:.3f}, recall {rec:.3f}: {cause}. "
                f"Datasets below {TARGET_FSCORE}: {len(at) - k}/{len(at)} (seeds "
                f"{', '.join(str(int(s)) for s in at.loc[at['w_fscore'] < TARGET_FSCORE, 'seed'])})."
            )
    return lines, why


def _targets_section(df: pd.DataFrame, rhos: Sequence[float], *, quick: bool, seeds: int) -> list[str]:
    """The issue's must-show targets, one line per rho, with met / not met and a data-driven why."""
    lines = ["## Must show (issue 6): met or not, per rho", ""]
    if quick:
        lines += [
            f"Quick smoke run ({QUICK_EPOCHS} epochs unless overridden, {seeds} dataset): the verdicts are "
            "'not assessed'; the numbers only show that every method ran and was scored.",
            "",
        ]
    elif seeds < PAPER_SEEDS:
        lines += [
            f"Reduced run: {seeds} dataset(s) per rho instead of the paper's {PAPER_SEEDS}; verdicts are on the "
            "means over these datasets and are provisional where the spread is large.",
            "",
        ]
    lines += ["| target | rho | ours | verdict |", "|---|---|---|---|"]
    why: list[str] = []
    have = set(df["method"])
    rivals = [m for m in (VAE_NAME, BETA_NAME) if m in have]
    variants = [m for m in OURS_VARIANTS if m in have]
    if not variants or not rivals:
        lines += [
            f"| SparseVAE DCI above VAE and beta-VAE | {r:g} | a method is missing from the run | not assessed |"
            for r in rhos
        ]
    else:
        for ours in variants:
            new_lines, new_why = _variant_targets(df, rhos, ours, rivals, quick=quick)
            lines += new_lines
            why += new_why
    if why:
        lines += ["", "Why the targets not met were missed (from this run's numbers):", "", *why]
    return lines


def _claims_section(df: pd.DataFrame, rhos: Sequence[float], *, quick: bool) -> list[str]:
    """The paper's claims about Figure 3 beside ours (the paper prints no numbers for it)."""
    lines = [
        "## The paper's claims beside ours",
        "",
        "Figure 3 of Moran et al. (2022) shows box plots over 25 datasets per rho without printed numbers, so "
        "we compare with its stated findings (§4 and the Figure 3 caption).",
        "",
        "| claim (Moran et al. 2022) | ours (means over datasets) | verdict |",
        "|---|---|---|",
    ]
    have = set(df["method"])

    def verdict(ok: bool) -> str:
        return "not assessed (quick)" if quick else ("met" if ok else "not met")

    def per_rho(metric: str, a: str, b: str, digits: int = 3) -> tuple[str, list[bool]]:
        txt, flags = [], []
        for r in rhos:
            va, vb = _mean(df, a, r, metric), _mean(df, b, r, metric)
            txt.append(f"rho={r:g}: {va:.{digits}f} vs {vb:.{digits}f}")
            flags.append((va, vb))
        return "; ".join(txt), flags

    if {OURS, VAE_NAME} <= have:
        txt, pairs = per_rho("dci", OURS, VAE_NAME)
        lines.append(
            f"| sparse VAE has higher DCI than the VAE at every rho (Fig. 3b) | {txt} | "
            f"{verdict(all(a > b for a, b in pairs))} |"
        )
        txt, pairs = per_rho("heldout_mse", OURS, VAE_NAME)
        lines.append(
            f"| sparse VAE has lower held-out MSE than the VAE across rho (Fig. 3a) | {txt} | "
            f"{verdict(all(a < b for a, b in pairs))} |"
        )
    if {BETA_NAME, VAE_NAME} <= have:
        txt, pairs = per_rho("dci", BETA_NAME, VAE_NAME)
        lines.append(
            f"| beta-VAE (best beta) performs similarly to the VAE (DCI within 0.1) | {txt} | "
            f"{verdict(all(abs(a - b) <= 0.1 for a, b in pairs))} |"
        )
    if {VSC_NAME, OURS, VAE_NAME} <= have:
        txt_o, p_o = per_rho("dci", VSC_NAME, OURS)
        _, p_v = per_rho("dci", VSC_NAME, VAE_NAME)
        ok = all(a < b for a, b in p_o) and all(a < b for a, b in p_v)
        lines.append(
            f"| VSC recovers the factors worse than the sparse VAE and the VAE (VSC vs SparseVAE DCI) "
            f"| {txt_o} | {verdict(ok)} |"
        )
    sv = df[df["method"] == OURS]
    low = sorted(r for r in rhos if r <= 0.4 + 1e-12)
    if len(sv) and len(low) >= 2:
        d = sv.groupby("rho")["dci"].mean()
        drop = float(d.loc[low[0]] - d.loc[low].min())
        lines.append(
            f"| sparse VAE robust to factor correlation up to rho = 0.4 | mean DCI falls by {drop:.3f} from "
            f"rho={low[0]:g} to the worst rho <= 0.4 (criterion <= 0.1) | {verdict(drop <= 0.1)} |"
        )
    else:
        lines.append(
            "| sparse VAE robust to factor correlation up to rho = 0.4 | needs two rho <= 0.4 | not assessed |"
        )
    if len(sv):
        exact = sv.groupby("rho", sort=True)["n_active"].apply(lambda s: int((s == TARGET_ACTIVE).sum()))
        total = sv.groupby("rho", sort=True)["n_active"].size()
        ours = "; ".join(f"rho={r:g}: {exact[r]}/{total[r]}" for r in exact.index)
        ok = int(exact.sum()) == int(total.sum())
        lines.append(
            f"| sparse VAE finds {TARGET_ACTIVE} active factors (§2.2) | datasets with exactly "
            f"{TARGET_ACTIVE}: {ours} | {verdict(ok)} |"
        )
    return lines


def _write_summary(
    out_dir: Path,
    df: pd.DataFrame,
    prov: dict[str, Any],
    *,
    rhos: Sequence[float],
    seeds: int,
    first_seed: int,
    quick: bool,
    n_obs: int,
    n_latent: int,
    epochs: int,
    methods: Sequence[str],
    betas: Sequence[float],
    n_validation: int,
    selection: pd.DataFrame,
    total_seconds: float,
) -> Path:
    n_test = int(round(TEST_FRACTION * n_obs))
    s = SYNTHETIC_SETTINGS
    shown = df.copy()
    shown["method"] = [
        _beta_label(df, r) if m == BETA_NAME else m for m, r in zip(df["method"], df["rho"], strict=True)
    ]
    metrics = ["n_active", "active_units", "w_fscore", "dci", "heldout_nll", "heldout_mse", "fit_seconds"]
    table = markdown_table(
        shown, ["method", "rho"], metrics, digits={"fit_seconds": 1, "n_active": 2, "active_units": 2}
    )
    mode = (
        "quick smoke run"
        if quick
        else ("full (paper) setting" if seeds >= PAPER_SEEDS and epochs >= 200 else "reduced setting")
    )
    lines = [
        "# Synthetic benchmark: recovering the ground-truth factors (Moran et al. 2022, Eq. 9, Figure 3)",
        "",
        "## Provenance",
        "",
        provenance_markdown(prov),
        f"- total wall-clock: {total_seconds / 60:.1f} min ({mode})",
        "",
        "## What ran",
        "",
        f"- Data: Eq. 9, `simulate_eq9(n_obs={n_obs}, rho, seed=s)`: G = 7 features, 2 true factors with "
        "correlation rho, x = (z1, 2 z1, 3 z1^2, 4 z2, 5 z2, 6 sin z2, 7 z1 z2) + N(0, 0.5) noise; each feature "
        "standardised with the training cells' mean and sd (so `heldout_nll` and `heldout_mse` are on that "
        "scale). Simulated here, as in the paper (no external data).",
        f"- Settings: rho in {list(rhos)}; datasets (seeds) {first_seed}..{first_seed + seeds - 1} per rho (the "
        f"paper: rho in {list(PAPER_RHOS)}, {PAPER_SEEDS} datasets each); {epochs} epochs (the paper: 200). "
        f"Mode: {mode}.",
        f"- Split: a fixed {n_test}-cell test set per seed ({TEST_FRACTION:.0%}, drawn independently of the models; "
        f"same split at every rho); every method is fitted on the other {n_obs - n_test} cells of the same dataset "
        "with the same seed.",
        f"- Methods: {', '.join(methods)}; all with K = {n_latent} codes, Gaussian likelihood, MLPs of "
        f"{s['n_layers']} hidden layers x {s['n_hidden']} {PAPER_DEPTH_NOTE}, no dropout, "
        f"Adam lr {s['lr']:g}, batch {s['batch_size']} (Table 6). "
        f"SparseVAE: `scsparse.model.SparseVAE` (scvi-tools) with the paper's decoder (first layer "
        f"{'with' if s['first_bias'] else 'without'} a bias), lambda0 = {s['lambda0']:g}, lambda1 = "
        f"{s['lambda1']:g}, a = 1, b = G, best of {s['n_restarts']} fits (seeds s, s + {RESTART_SEED_STEP}, "
        "...) by the training objective (`scsparse.model.select_best`, no true factor used; `fit_seconds` "
        f"covers every fit); `{OURS_SINGLE}` is restart 0 alone, the paper's single fit; `{OURS_CORRELATED}` is "
        "the same model and restarts with z ~ N(0, Sigma_z), a learned correlation matrix (the paper's "
        "Appendix B.2; `latent_prior='correlated'`). VAE and beta-VAE: "
        "`scsparse.generic.models.VAE` with learned "
        f"per-feature variances and the sparse VAE's KL warm-up (weight 0 -> beta over the first "
        f"{s['kl_warmup_fraction']:.0%} of the epochs; SparseVAE: 0 -> 1 over the same span). "
        f"VSC: `scsparse.generic.models.VSC`, alpha = {s['vsc_alpha']:g}, 20 pseudo-inputs. "
        f"oi-VAE: `scsparse.generic.models.OIVAE`, every feature its own group (as the sparse VAE paper does), "
        f"lambda = {s['oivae_lambda']:g}, p = {s['oivae_p']}, proximal step lr x lambda. VSC keeps its own "
        "spike warm-up and oi-VAE its paper objective (no KL warm-up). Every method, not only the sparse VAE, "
        f"is the best of {s['n_restarts']} fits by its own training objective on the training cells "
        "(`training_objective` of the generic models), so no method gets more tries than another.",
        f"- beta-VAE's beta (rule fixed before seeing any test result): for each rho, a beta-VAE is fitted for "
        f"every beta in {[float(b) for b in betas]} on {n_validation} separate validation dataset(s) "
        f"(seeds {VALIDATION_SEED}..{VALIDATION_SEED + n_validation - 1}, never a test seed), and the beta with the "
        "highest mean validation DCI is used on all test datasets of that rho (ties: the smaller beta). The "
        "paper shows its best beta without saying how it was chosen.",
        "- Metrics: `n_active` = factors the model itself keeps on: SparseVAE, factors with at least one "
        "feature with p* > 0.5; oi-VAE, factors with a non-zero group column; n/a for VAE, beta-VAE and VSC, "
        "which have no factor switch. `active_units` = codes whose posterior mean varies across cells "
        f"(variance > {ACTIVE_UNIT_THRESHOLD:g}, Burda et al. 2016), the same count for every method. "
        "`w_fscore` = F-score of the support of W against the true support (|W| >= 0.01, and p* >= 0.5 where "
        "the model has p*), estimated columns matched to true factors by |correlation| of the training cells' "
        "codes (Hungarian), columns that select any feature first (a switched-off code only fills in for a true "
        "factor left over; it can still track one, `match_factors(among=...)`), selected entries of unmatched columns "
        "counted as false positives; SparseVAE's W and "
        "oi-VAE's per-feature column norms ||W^(j)[:, k]||; n/a for VAE, beta-VAE and VSC (no feature x factor "
        "loading). `dci` = DCI disentanglement (Eastwood & Williams 2018; gradient-boosted trees on all "
        f"{n_obs} cells' posterior means of all K codes, fixed seed {DCI_SEED}; VSC: gamma * mu). `heldout_nll` = "
        f"-log p(x) per test cell, importance-sampled with q(z|x) ({N_MC_SAMPLES} samples), Gaussian constants "
        "included; for VSC the importance-weighted bound with exact spike-and-slab samples (an upper bound). "
        "`heldout_mse` = mean over test cells and features of (x - decoder mean at the posterior mean)^2. "
        "`fit_seconds` = set-up plus training wall-clock.",
        "",
        "## Results (mean ± sd over datasets)",
        "",
        table,
        "",
        "n/a: the method has no such quantity (see Metrics).",
        "",
        "## beta-VAE: validation DCI per beta (the chosen beta in bold)",
        "",
        *_selection_table(selection),
        "",
        *_targets_section(df, rhos, quick=quick, seeds=seeds),
        "",
        *_claims_section(df, rhos, quick=quick),
        "",
        *_collapse_section(df),
        "",
        "## Files",
        "",
        "- `results.csv`: one row per method, rho and dataset; `beta_selection.csv`: the validation fits.",
        "- `figure3.png`: the paper's Figure 3 (held-out MSE and DCI against rho, every method, spread over datasets).",
        "- `synthetic.png`: DCI and W support F-score per rho, and the sparse VAE's W of dataset 0 per rho with "
        "p* in each cell.",
        "",
    ]
    path = out_dir / "summary.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _collapse_section(df: pd.DataFrame) -> list[str]:
    """Datasets in which a method's codes all collapsed onto the prior (no active unit): its DCI is then noise."""
    lines = ["## Posterior collapse", ""]
    dead = df[df["active_units"] == 0]
    if dead.empty:
        return [*lines, "Every fit kept at least one active unit (a code whose posterior mean varies across cells)."]
    lines.append(
        "Fits with no active unit (every code's posterior mean constant across cells: the model explains the "
        "data as noise, and its DCI only reflects the regressors fitting noise):"
    )
    lines.append("")
    total = df.groupby(["method", "rho"], sort=False).size()
    for (m, r), g in dead.groupby(["method", "rho"], sort=False):
        seeds = ", ".join(str(int(s)) for s in g["seed"])
        lines.append(f"- {m}, rho={r:g}: {len(g)}/{int(total[(m, r)])} datasets (seeds {seeds})")
    return lines


def _selection_table(selection: pd.DataFrame) -> list[str]:
    if selection.empty:
        return ["No beta-VAE in this run (or a single beta given, so nothing to choose)."]
    betas = sorted(selection["beta"].unique())
    lines = ["| rho | " + " | ".join(f"beta={b:g}" for b in betas) + " |", "|---|" + "---|" * len(betas)]
    for r, g in selection.groupby("rho", sort=True):
        mean = g.groupby("beta")["dci"].mean()
        chosen = set(g.loc[g["chosen"], "beta"])
        cells = [f"**{mean[b]:.3f}**" if b in chosen else f"{mean[b]:.3f}" for b in betas]
        lines.append(f"| {r:g} | " + " | ".join(cells) + " |")
    return lines


# ---------------------------------------------------------------------------------------------- figures
_COLOURS = {
    OURS: "tab:blue",
    VAE_NAME: "tab:orange",
    BETA_NAME: "tab:green",
    VSC_NAME: "tab:red",
    OIVAE_NAME: "tab:purple",
}
_EXTRA_COLOURS = ["tab:brown", "tab:pink", "tab:gray", "tab:olive", "tab:cyan"]


def _colour(method: str, i: int) -> str:
    return _COLOURS.get(method, _EXTRA_COLOURS[i % len(_EXTRA_COLOURS)])


def _box_strip(ax: Any, df: pd.DataFrame, metric: str, rhos: Sequence[float], methods: Sequence[str]) -> None:
    """Box plot with the datasets as points, per rho and method (side by side)."""
    rng = np.random.default_rng(0)
    width = 0.8 / max(len(methods), 1)
    for m_i, method in enumerate(methods):
        pos, vals = [], []
        for r_i, rho in enumerate(rhos):
            v = df[(df["method"] == method) & np.isclose(df["rho"], rho)][metric].to_numpy(dtype=np.float64)
            v = v[np.isfinite(v)]
            if v.size:
                pos.append(r_i + (m_i - (len(methods) - 1) / 2) * width)
                vals.append(v)
        if not vals:
            continue
        c = _colour(method, m_i)
        ax.boxplot(
            vals,
            positions=pos,
            widths=width * 0.8,
            patch_artist=True,
            boxprops={"facecolor": c, "alpha": 0.3},
            medianprops={"color": c},
            showfliers=False,
            manage_ticks=False,
        )
        for p_i, (p, v) in enumerate(zip(pos, vals, strict=True)):
            ax.scatter(
                p + rng.uniform(-width / 5, width / 5, v.size),
                v,
                color=c,
                s=16,
                zorder=3,
                label=method if p_i == 0 else None,
            )
    ax.set_xticks(range(len(rhos)), [f"{r:g}" for r in rhos])
    ax.set_xlim(-0.6, len(rhos) - 0.4)
    ax.set_xlabel("factor correlation rho")


def _write_figure3(out_dir: Path, df: pd.DataFrame) -> Path:
    """The paper's Figure 3: held-out MSE (a) and DCI (b) against rho for every method."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rhos = sorted(df["rho"].unique())
    methods = list(dict.fromkeys(df["method"]))
    fig = Figure(figsize=(max(11.0, 2.4 * len(rhos) * 2), 4.8), layout="constrained")
    FigureCanvasAgg(fig)
    ax_mse, ax_dci = fig.subplots(1, 2)
    _box_strip(ax_mse, df, "heldout_mse", rhos, methods)
    mse = df["heldout_mse"].to_numpy(dtype=np.float64)
    mse = mse[np.isfinite(mse) & (mse > 0)]
    if mse.size and mse.max() / mse.min() > 20:
        ax_mse.set_yscale("log")
    ax_mse.set_ylabel("held-out MSE (standardised features)")
    ax_mse.set_title("(a) Held-out mean squared error (lower is better)")
    _box_strip(ax_dci, df, "dci", rhos, methods)
    ax_dci.set_ylim(-0.02, 1.02)
    ax_dci.set_ylabel("DCI disentanglement")
    ax_dci.set_title("(b) Ground-truth factor recovery (higher is better)")
    n = df.groupby(["method", "rho"]).size()
    per_box = f"{int(n.min())}" if n.min() == n.max() else f"{int(n.min())}-{int(n.max())}"
    # below both panels: inside one, the legend covered boxes once seven methods ran
    handles, labels = ax_dci.get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="outside lower center",
        ncol=min(len(labels), 4),
        fontsize=9,
        title=f"{per_box} dataset(s) per box",
    )
    fig.suptitle("Synthetic data (Eq. 9), as Figure 3 of Moran et al. (2022)")
    path = out_dir / "figure3.png"
    fig.savefig(path, dpi=120)
    return path


def _write_figure(out_dir: Path, df: pd.DataFrame, heatmaps: dict[float, dict[str, Any]]) -> Path:
    """Box/strip plots of DCI and F-score per rho, and heat maps of seed 0's W with p* annotations."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rhos = sorted(df["rho"].unique())
    methods = list(dict.fromkeys(df["method"]))
    n_heat = max(len(heatmaps), 1)
    n_cols = max(2, n_heat)
    fig = Figure(figsize=(max(10.0, 4.2 * n_cols), 9.0), layout="constrained")
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(2, n_cols)
    half = n_cols // 2
    for i, (metric, title) in enumerate([("dci", "DCI disentanglement"), ("w_fscore", "F-score of W support")]):
        ax = fig.add_subplot(grid[0, i * half : (i + 1) * half] if n_cols > 2 else grid[0, i])
        _box_strip(ax, df, metric, rhos, methods)
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel(title)
        ax.set_title(f"{title} (higher is better)")
        if metric == "w_fscore":
            ax.axhline(TARGET_FSCORE, color="grey", ls="--", lw=1)
            ax.text(len(rhos) - 0.45, TARGET_FSCORE, f"target {TARGET_FSCORE}", ha="right", va="bottom", fontsize=8)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="lower left", fontsize=9)
    for h_i, (rho, hm) in enumerate(sorted(heatmaps.items())):
        ax = fig.add_subplot(grid[1, h_i])
        W, pip = hm["W"], hm["pip"]
        vmax = float(np.max(np.abs(W))) or 1.0
        im = ax.imshow(W, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto")
        for j in range(W.shape[0]):
            for k in range(W.shape[1]):
                ax.text(
                    k,
                    j,
                    f"{W[j, k]:.2f}\np*={pip[j, k]:.2f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="black" if abs(W[j, k]) < 0.6 * vmax else "white",
                )
        xlabels = []
        match = hm.get("column_match")
        for k in range(W.shape[1]):
            lab = f"factor_{k}"
            if match is not None and k in set(np.asarray(match).tolist()):
                lab += f"\n(= z{int(np.flatnonzero(np.asarray(match) == k)[0]) + 1})"
            if f"factor_{k}" in hm.get("active", []):
                lab += "\nactive"
            xlabels.append(lab)
        ax.set_xticks(range(W.shape[1]), xlabels, fontsize=8)
        ax.set_yticks(range(W.shape[0]), list(EQ9_FEATURE_NAMES), fontsize=8)
        ax.set_title(f"{hm['method']} W, seed {hm['seed']}, rho={rho:g}", fontsize=10)
        fig.colorbar(im, ax=ax, shrink=0.8, label="w_jk")
    fig.suptitle("Synthetic data (Eq. 9): factor recovery")
    path = out_dir / "synthetic.png"
    fig.savefig(path, dpi=120)
    return path


# ---------------------------------------------------------------------------------------------- runner
def run_synthetic(
    out: str | os.PathLike[str],
    *,
    rho: Sequence[float] | None = None,
    seeds: int | None = None,
    first_seed: int = 0,
    quick: bool = False,
    max_epochs: int | None = None,
    n_obs: int = 1000,
    n_latent: int = 5,
    methods: Sequence[tuple[str, FitFn]] | None = None,
    betas: Sequence[float] = BETA_GRID,
    n_validation: int = 1,
    n_threads: int | None = 1,
    verbose: bool = True,
) -> pd.DataFrame:
    """Recover the ground-truth factors of the synthetic data of Moran et al. (2022), Eq. 9 (Figure 3).

    For every ``rho`` and seed ``s``: simulate ``simulate_eq9(n_obs, rho, seed=s)``, hold out a fixed 20%
    of the cells (drawn from the seed alone), fit every method on the other cells and score it. The
    beta-VAE's ``beta`` is chosen per ``rho`` on separate validation datasets (:func:`select_beta`).

    Parameters
    ----------
    out
        Output folder; receives ``results.csv``, ``beta_selection.csv``, ``summary.md``, ``figure3.png``
        and ``synthetic.png``. ``results.csv`` is rewritten after every dataset, so a long run can be
        followed.
    rho
        Correlations of the two true factors; ``None``: the paper's 0, 0.2, 0.4, 0.6, 0.8 (``quick``: 0.4).
    seeds
        Number of datasets per ``rho``: seeds ``first_seed .. first_seed + seeds - 1``; ``None``: the paper's 25
        (``quick``: 1).
    first_seed
        The first dataset's seed: a long run can be split over processes or machines (e.g. ``seeds=10`` and
        ``seeds=15, first_seed=10`` make up the paper's 25), and their ``results.csv`` concatenated.
    quick
        A smoke run: 4 epochs, and unless given, one ``rho`` and one seed; every method still runs.
    max_epochs
        Epochs, overriding both ``quick`` and the paper's 200.
    n_obs
        Cells per dataset (the paper: 1000).
    n_latent
        Number of latent factors fitted (the paper: 5, an overestimate of the true 2).
    methods
        ``(name, fit_fn)`` pairs; default :data:`METHODS` (SparseVAE, VAE, beta-VAE, VSC, oi-VAE).
        ``fit_fn(split, max_epochs, n_latent)`` returns a :class:`MethodOutput`; the entry whose
        ``fit_fn`` is :func:`fit_beta_vae` gets the ``beta`` chosen per ``rho``.
    betas
        beta-VAE candidates (the paper: 2, 4, 6, 8, 16); one value is used as is, without selection.
    n_validation
        Validation datasets per ``rho`` for the choice of ``beta``.
    n_threads
        Torch intra-op threads while fitting (restored afterwards); ``None`` leaves the setting alone. The
        default 1 is the fastest for these tiny networks and avoids oversubscribing shared cores.
    verbose
        Print progress and the final table to stdout.

    Returns
    -------
    pandas.DataFrame
        One row per method, ``rho`` and seed with the columns of :data:`RESULT_COLUMNS`: ``beta`` (the
        beta-VAE's), ``n_active`` (factors the model keeps on; ``nan`` without a switch), ``active_units``
        (codes whose posterior mean varies, every method), ``w_fscore``, ``w_precision``, ``w_recall``
        (support of ``W``; ``nan`` without a feature x factor loading), ``dci`` (DCI disentanglement on all
        cells), ``heldout_nll`` (per test cell), ``heldout_mse`` (test reconstruction) and ``fit_seconds``.

    Raises
    ------
    ValueError
        For an empty ``rho``, a non-positive ``seeds``, ``max_epochs`` or ``n_validation``, ``n_latent < 2``,
        a ``rho`` outside ``[-1, 1]`` or an empty ``methods``.

    Examples
    --------
    >>> from scsparse.generic.benchmarks._synthetic import run_synthetic
    >>> df = run_synthetic("bench_syn", rho=[0.0, 0.4], seeds=5)  # doctest: +SKIP
    """
    start = time.perf_counter()
    rhos = [float(r) for r in (rho if rho is not None else ((QUICK_RHO,) if quick else PAPER_RHOS))]
    if not rhos:
        raise ValueError("rho must contain at least one value, e.g. rho=[0.0, 0.4]")
    if any(not -1.0 <= r <= 1.0 for r in rhos):
        raise ValueError(f"every rho must lie in [-1, 1] (a correlation), got {rhos}")
    seeds = (1 if quick else PAPER_SEEDS) if seeds is None else seeds
    check_positive_int("seeds", seeds)
    if isinstance(first_seed, bool) or not isinstance(first_seed, int) or first_seed < 0:
        raise ValueError(f"first_seed must be a non-negative integer, got {first_seed!r}")
    if first_seed + int(seeds) > VALIDATION_SEED:
        raise ValueError(
            f"test seeds must stay below {VALIDATION_SEED}, where beta's validation datasets start; got first_seed="
            f"{first_seed} and seeds={seeds}"
        )
    check_positive_int("max_epochs", max_epochs, optional=True)
    if n_latent < 2:
        raise ValueError(f"n_latent must be at least the 2 true factors, got {n_latent}")
    seeds = int(seeds)
    if max_epochs is not None:
        epochs = int(max_epochs)
    else:
        epochs = QUICK_EPOCHS if quick else int(SYNTHETIC_SETTINGS["max_epochs"])
    methods = list(METHODS if methods is None else methods)
    if not methods:
        raise ValueError("methods must contain at least one (name, fit_fn) pair")
    betas = [float(b) for b in betas]
    if not betas:
        raise ValueError("betas must contain at least one value, e.g. betas=[2, 4, 6, 8, 16]")
    check_positive_int("n_validation", n_validation)
    has_beta = any(fn is fit_beta_vae for _, fn in methods)
    out_dir = make_output_dir(out)
    options = {
        "out": str(out_dir),
        "rho": rhos,
        "seeds": seeds,
        "first_seed": first_seed,
        "quick": bool(quick),
        "max_epochs": max_epochs,
        "epochs_used": epochs,
        "n_obs": n_obs,
        "n_latent": n_latent,
        "methods": [name for name, _ in methods],
        "betas": betas,
        "n_validation": int(n_validation),
        "n_threads": n_threads,
    }

    rows: list[dict[str, Any]] = []
    selections: list[pd.DataFrame] = []
    heatmaps: dict[float, dict[str, Any]] = {}
    with torch_threads(n_threads), quiet_training_logs():
        prov = provenance("synthetic", options)
        for r in rhos:
            fits: list[tuple[str, FitFn]] = []
            for name, fit_fn in methods:
                if fit_fn is fit_beta_vae:
                    if len(betas) > 1:
                        beta, table = select_beta(
                            r,
                            betas=betas,
                            n_validation=int(n_validation),
                            n_obs=n_obs,
                            max_epochs=epochs,
                            n_latent=n_latent,
                            verbose=verbose,
                        )
                        selections.append(table)
                    else:
                        beta = betas[0]
                    fit_fn = functools.partial(fit_beta_vae, beta=beta)
                fits.append((name, fit_fn))
            for s in range(first_seed, first_seed + seeds):
                data, split = _make_split(n_obs, r, s)
                for name, fit_fn in fits:
                    res = fit_fn(split, epochs, n_latent)
                    scores = _score(data, split, res)
                    rows.append({"method": name, "seed": s, "rho": r, **scores})
                    if verbose:
                        print(
                            f"[synthetic] {name} rho={r:g} seed={s}: n_active={scores['n_active']:g} "
                            f"units={scores['active_units']:g} F={scores['w_fscore']:.3f} DCI={scores['dci']:.3f} "
                            f"NLL={scores['heldout_nll']:.3f} MSE={scores['heldout_mse']:.3f} "
                            f"({scores['fit_seconds']:.1f} s)",
                            flush=True,
                        )
                    if s == first_seed and res.W is not None and r not in heatmaps:
                        heatmaps[r] = {
                            "method": name,
                            "seed": s,
                            "W": np.asarray(res.W),
                            "pip": np.asarray(res.pip) if res.pip is not None else np.full_like(res.W, np.nan),
                            "active": list(res.extra.get("active_factors", [])),
                            "column_match": res.extra.get("column_match"),
                        }
                write_results(pd.DataFrame(rows, columns=list(RESULT_COLUMNS)), out_dir, RESULT_COLUMNS)

    df = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    write_results(df, out_dir, RESULT_COLUMNS)
    selection = (
        pd.concat(selections, ignore_index=True)
        if selections
        else pd.DataFrame(columns=["rho", "validation_seed", "beta", "dci", "heldout_nll", "chosen"])
    )
    selection.to_csv(out_dir / "beta_selection.csv", index=False)
    _write_summary(
        out_dir,
        df,
        prov,
        rhos=rhos,
        seeds=seeds,
        first_seed=first_seed,
        quick=quick,
        n_obs=n_obs,
        n_latent=n_latent,
        epochs=epochs,
        methods=[name for name, _ in methods],
        betas=betas if has_beta else [],
        n_validation=int(n_validation),
        selection=selection,
        total_seconds=time.perf_counter() - start,
    )
    _write_figure3(out_dir, df)
    _write_figure(out_dir, df, heatmaps)
    if verbose:
        print(markdown_table(df, ["method", "rho"], ["n_active", "w_fscore", "dci", "heldout_mse"]), flush=True)
        print(f"[synthetic] wrote results.csv, beta_selection.csv, summary.md, figure3.png, synthetic.png to {out_dir}")
    df.attrs["out_dir"] = str(out_dir)
    return df
