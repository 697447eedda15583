"""Settings, simulated train/test splits and the fitted methods of the synthetic benchmark (Moran et al. 2022)."""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from scsparse.data import simulate_eq9
from scsparse.generic.datasets import split_rows

from .._fits import paper_model_kwargs, train_fixed_epochs
from .._paper import PAPER_HIDDEN_LAYERS
from .._restarts import best_of_restarts

if TYPE_CHECKING:  # pragma: no cover
    from anndata import AnnData

    from scsparse.generic.models import ArrayModel

__all__ = [
    "BETA_GRID",
    "METHODS",
    "OURS_CORRELATED",
    "OURS_SINGLE",
    "SYNTHETIC_SETTINGS",
    "MethodOutput",
    "SyntheticSplit",
    "fit_beta_vae",
    "fit_oivae",
    "fit_sparsevae",
    "fit_vae",
    "fit_vsc",
    "split_indices",
]

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
    return split_rows(n_obs, seed, test_fraction, unit="cells", seed_offset=_SPLIT_SEED_OFFSET)


def make_split(n_obs: int, rho: float, seed: int) -> tuple[Any, SyntheticSplit]:
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
    (:func:`._restarts.best_of_restarts`) the one with the lowest training objective is kept
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
    >>> from scsparse.generic.benchmarks._synthetic._methods import make_split, fit_sparsevae
    >>> data, split = make_split(200, rho=0.4, seed=0)
    >>> fit_sparsevae(split, max_epochs=2).W.shape  # doctest: +SKIP
    (7, 5)
    """
    from scsparse.model import SparseVAE

    s = SYNTHETIC_SETTINGS
    adata_train = split.adata_train.copy()
    SparseVAE.setup_anndata(adata_train)

    def fit(seed: int) -> SparseVAE:
        model = SparseVAE(adata_train, n_latent=n_latent, latent_prior=latent_prior, seed=seed, **paper_model_kwargs(s))
        train_fixed_epochs(model, {**s, "max_epochs": max_epochs})
        return model

    t0 = time.perf_counter()
    model = best_of_restarts(fit, split.seed, s["n_restarts"] if n_restarts is None else n_restarts)
    fit_seconds = time.perf_counter() - t0
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
    >>> from scsparse.generic.benchmarks._synthetic._methods import make_split, fit_beta_vae
    >>> data, split = make_split(200, rho=0.4, seed=0)
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
    >>> from scsparse.generic.benchmarks._synthetic._methods import make_split, fit_vae
    >>> data, split = make_split(200, rho=0.0, seed=0)
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
    >>> from scsparse.generic.benchmarks._synthetic._methods import make_split, fit_vsc
    >>> data, split = make_split(200, rho=0.0, seed=0)
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
    >>> from scsparse.generic.benchmarks._synthetic._methods import make_split, fit_oivae
    >>> data, split = make_split(200, rho=0.0, seed=0)
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
