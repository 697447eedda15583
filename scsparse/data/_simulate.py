"""Synthetic data of Moran et al. (2022), section 2.2, Eq. 9."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import anndata

__all__ = ["EQ9_FEATURE_NAMES", "EQ9_SUPPORT", "SyntheticData", "simulate_eq9"]

#: Names of the seven features of Eq. 9, as functions of the true factors.
EQ9_FEATURE_NAMES: tuple[str, ...] = (
    "z1",
    "2*z1",
    "3*z1^2",
    "4*z2",
    "5*z2",
    "6*sin(z2)",
    "7*z1*z2",
)

#: True support of Eq. 9, shape (7 features, 2 factors): features 0-2 use factor 0, 3-5 factor 1, 6 both.
EQ9_SUPPORT: np.ndarray = np.array(
    [
        [True, False],
        [True, False],
        [True, False],
        [False, True],
        [False, True],
        [False, True],
        [True, True],
    ]
)
EQ9_SUPPORT.flags.writeable = False


@dataclass(frozen=True, eq=False)
class SyntheticData:
    """A simulated dataset with known factors and known factor-to-feature support.

    Attributes
    ----------
    X
        Observed data, shape ``(n_obs, n_features)``, ``float32``.
    Z
        True factors, shape ``(n_obs, n_factors)``, ``float64``.
    W_support
        True support of the factor-to-feature map, boolean of shape ``(n_features, n_factors)``;
        ``W_support[j, k]`` is True iff feature ``j`` depends on factor ``k``.
    feature_names
        One name per feature.
    rho
        Correlation between the true factors.
    seed
        Seed given to :func:`numpy.random.default_rng`.
    noise_sd
        Standard deviation of the additive Gaussian noise.
    """

    X: np.ndarray
    Z: np.ndarray
    W_support: np.ndarray
    feature_names: tuple[str, ...]
    rho: float
    seed: int | None
    noise_sd: float

    @property
    def n_obs(self) -> int:
        """Number of observations."""
        return int(self.X.shape[0])

    def to_anndata(self) -> anndata.AnnData:
        """Wrap the data in an :class:`anndata.AnnData`.

        Returns
        -------
        anndata.AnnData
            ``X`` the data, ``obsm["Z_true"]`` the true factors, ``varm["W_support"]`` the true support,
            ``var_names`` the feature names, and ``uns["simulation"]`` the settings
            (``rho``, ``seed``, ``noise_sd``).
        """
        import anndata as ad
        import pandas as pd

        adata = ad.AnnData(
            X=self.X.copy(),
            obs=pd.DataFrame(index=[f"cell_{i}" for i in range(self.n_obs)]),
            var=pd.DataFrame(index=list(self.feature_names)),
        )
        adata.obsm["Z_true"] = self.Z.copy()
        adata.varm["W_support"] = self.W_support.copy()
        adata.uns["simulation"] = {"rho": self.rho, "seed": self.seed, "noise_sd": self.noise_sd}
        return adata


def simulate_eq9(
    n_obs: int = 1000,
    rho: float = 0.0,
    noise_sd: float = math.sqrt(0.5),
    seed: int | None = 0,
) -> SyntheticData:
    """Simulate the synthetic example of the sparse VAE paper (Moran et al., 2022, section 2.2, Eq. 9).

    Parameters
    ----------
    n_obs
        Number of observations ``N`` (the paper uses 1000).
    rho
        Correlation between the two true factors, in ``[-1, 1]`` (the paper sweeps 0, 0.2, ..., 0.8).
    noise_sd
        Standard deviation of the Gaussian noise; the paper's ``sigma^2 = 0.5`` is the default.
        ``0`` gives the noise-free features.
    seed
        Seed of :func:`numpy.random.default_rng`; the same seed gives the same data (``None``: fresh
        entropy, not reproducible).

    Returns
    -------
    SyntheticData
        ``X`` ``(n_obs, 7)`` float32, ``Z`` ``(n_obs, 2)``, ``W_support`` ``(7, 2)`` bool, feature names and
        the settings.

    Notes
    -----
    Exactly as simulated, with ``rng = numpy.random.default_rng(seed)``:

    1. ``z_i ~ N(0, C)`` with ``C_kk = 1`` and ``C_12 = C_21 = rho``, drawn as ``e = rng.standard_normal
       ((n_obs, 2))``, ``z1 = e1``, ``z2 = rho e1 + sqrt(1 - rho^2) e2``.
    2. ``f(z) = (z1, 2 z1, 3 z1^2, 4 z2, 5 z2, 6 sin z2, 7 z1 z2)``.
    3. ``x_i = f(z_i) + noise_sd * rng.standard_normal(7)``, i.e. ``x_i ~ N_7(f(z_i), noise_sd^2 I)``
       (the noise is drawn after all the factors).

    The true support: features 0-2 depend on factor 0 only, features 3-5 on factor 1 only, feature 6 on
    both. Every factor has (at least) two anchor features, features 0-1 and 3-4, with identical mappings up
    to scale, so the model is identifiable for ``|rho| < 1`` (Theorems 1-2 of the paper).

    Examples
    --------
    >>> from scsparse.data._simulate import simulate_eq9
    >>> data = simulate_eq9(n_obs=500, rho=0.4, seed=1)
    >>> data.X.shape, data.Z.shape, data.W_support.shape
    ((500, 7), (500, 2), (7, 2))
    >>> data.X.dtype
    dtype('float32')
    """
    if int(n_obs) != n_obs or n_obs < 1:
        raise ValueError(f"n_obs must be a positive integer, got {n_obs}")
    if not -1.0 <= rho <= 1.0:
        raise ValueError(f"rho must lie in [-1, 1], got {rho}")
    if not (noise_sd >= 0.0 and math.isfinite(noise_sd)):
        raise ValueError(f"noise_sd must be finite and non-negative, got {noise_sd}")
    n_obs = int(n_obs)
    rng = np.random.default_rng(seed)
    e = rng.standard_normal((n_obs, 2))
    z1 = e[:, 0]
    z2 = rho * e[:, 0] + math.sqrt(1.0 - rho * rho) * e[:, 1]
    Z = np.column_stack([z1, z2])
    mean = np.column_stack(
        [
            z1,
            2.0 * z1,
            3.0 * z1**2,
            4.0 * z2,
            5.0 * z2,
            6.0 * np.sin(z2),
            7.0 * z1 * z2,
        ]
    )
    noise = rng.standard_normal(mean.shape)
    X = (mean + noise_sd * noise).astype(np.float32)
    return SyntheticData(
        X=X,
        Z=Z,
        W_support=EQ9_SUPPORT.copy(),
        feature_names=EQ9_FEATURE_NAMES,
        rho=float(rho),
        seed=int(seed) if seed is not None else None,
        noise_sd=float(noise_sd),
    )
