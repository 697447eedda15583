"""Priors on global parameters other than the mask: the inverse-gamma prior on Gaussian variances."""

from __future__ import annotations

import numpy as np
import torch
from scipy.stats import gamma

__all__ = ["calibrate_inverse_gamma", "inverse_gamma_neg_log_prior"]


def calibrate_inverse_gamma(
    sample_variances: np.ndarray, nu: float = 3.0, data_quantile: float = 0.05, prior_quantile: float = 0.9
) -> float:
    """Scale ``xi`` of the prior ``sigma^2 ~ InvGamma(nu / 2, nu * xi / 2)`` (Moran et al. 2022, App. C.2).

    ``xi`` is set so that the ``data_quantile`` quantile of the per-feature sample variances is the
    ``prior_quantile`` quantile of the prior: the smallest sample variances are taken to be mostly noise.
    If ``1 / sigma^2 ~ Gamma(alpha, rate=beta)`` then ``P(sigma^2 <= q) = P(Gamma >= 1 / q)``, so
    ``q = beta / Gamma.ppf(1 - prior_quantile, alpha)``.

    Parameters
    ----------
    sample_variances
        Per-feature sample variances.
    nu
        Prior degrees of freedom (the paper uses 3).
    data_quantile, prior_quantile
        The quantiles to align.

    Returns
    -------
    The scale ``xi`` (positive).

    Examples
    --------
    >>> import numpy as np
    >>> xi = calibrate_inverse_gamma(np.array([0.5, 1.0, 2.0, 4.0]), nu=3.0)
    >>> from scipy.stats import invgamma
    >>> q = np.quantile([0.5, 1.0, 2.0, 4.0], 0.05)
    >>> bool(np.isclose(invgamma.cdf(q, 1.5, scale=1.5 * xi), 0.9))
    True
    """
    variances = np.asarray(sample_variances, dtype=float)
    variances = variances[np.isfinite(variances) & (variances > 0)]
    if variances.size == 0:
        raise ValueError("Cannot calibrate the variance prior: no feature has a positive, finite variance.")
    target = float(np.quantile(variances, data_quantile))
    alpha = nu / 2.0
    beta = target * gamma.ppf(1.0 - prior_quantile, alpha)
    return float(2.0 * beta / nu)


def inverse_gamma_neg_log_prior(log_var: torch.Tensor, nu: float, xi: float) -> torch.Tensor:
    """``-sum log InvGamma(sigma^2; nu / 2, nu * xi / 2)`` over features, up to a constant.

    ``-log p(sigma^2) = (alpha + 1) log sigma^2 + beta / sigma^2 + const`` with ``alpha = nu / 2`` and
    ``beta = nu * xi / 2``.

    Examples
    --------
    >>> import torch
    >>> float(inverse_gamma_neg_log_prior(torch.zeros(2), nu=2.0, xi=1.0))  # 2 * (0 + 1)
    2.0
    """
    alpha, beta = nu / 2.0, nu * xi / 2.0
    return ((alpha + 1.0) * log_var + beta * torch.exp(-log_var)).sum()
