"""Log-likelihoods with all their normalising constants.

Every function returns the log-density of each entry (same shape as ``x``), so callers sum over the
axes they need. Constants are kept (``lgamma`` terms, ``log 2 pi``) so that the values are true
log-likelihoods that can be compared across models and reported as held-out negative log-likelihoods.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

_EPS = 1e-8

__all__ = [
    "log_bernoulli",
    "log_multinomial",
    "log_nb",
    "log_normal",
    "log_poisson",
    "log_zinb",
]


def log_normal(x: torch.Tensor, mean: torch.Tensor, log_var: torch.Tensor) -> torch.Tensor:
    """Gaussian log-density ``log N(x; mean, exp(log_var))``.

    Parameters
    ----------
    x, mean
        Observations and means, broadcastable.
    log_var
        Log-variance, broadcastable to ``x`` (per feature in the sparse VAE).

    Returns
    -------
    Element-wise log-density, ``-0.5 * (log 2 pi + log_var + (x - mean)^2 / var)``.

    Examples
    --------
    >>> import torch
    >>> float(log_normal(torch.tensor(0.0), torch.tensor(0.0), torch.tensor(0.0)))  # doctest: +ELLIPSIS
    -0.9189...
    """
    return -0.5 * (math.log(2 * math.pi) + log_var + (x - mean) ** 2 * torch.exp(-log_var))


def log_poisson(x: torch.Tensor, rate: torch.Tensor) -> torch.Tensor:
    """Poisson log-mass ``x log(rate) - rate - log(x!)``.

    Examples
    --------
    >>> import torch
    >>> round(float(log_poisson(torch.tensor(2.0), torch.tensor(3.0))), 4)
    -1.4959
    """
    return torch.xlogy(x, rate + _EPS) - rate - torch.lgamma(x + 1.0)


def log_nb(x: torch.Tensor, mu: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Negative binomial log-mass in the mean/inverse-dispersion parametrisation.

    ``NB(x; mu, theta)`` has mean ``mu`` and variance ``mu + mu^2 / theta``:

    ``log Gamma(x + theta) - log Gamma(theta) - log x! + theta log(theta / (theta + mu))
    + x log(mu / (theta + mu))``.

    The values and gradients of :class:`scvi.distributions.NegativeBinomial`'s ``log_prob`` up to rounding, written
    here because :mod:`scsparse.nn` imports no scvi-tools (the array models of :mod:`scsparse.generic` build on it).

    Examples
    --------
    >>> import torch
    >>> from scipy.stats import nbinom
    >>> mu, theta, x = 2.0, 3.0, 4.0
    >>> val = float(log_nb(torch.tensor(x), torch.tensor(mu), torch.tensor(theta)))
    >>> bool(abs(val - nbinom.logpmf(x, theta, theta / (theta + mu))) < 1e-5)
    True
    """
    log_theta_mu = torch.log(theta + mu + _EPS)
    return (
        torch.lgamma(x + theta)
        - torch.lgamma(theta)
        - torch.lgamma(x + 1.0)
        + theta * (torch.log(theta + _EPS) - log_theta_mu)
        + x * (torch.log(mu + _EPS) - log_theta_mu)
    )


def log_zinb(x: torch.Tensor, mu: torch.Tensor, theta: torch.Tensor, zi_logits: torch.Tensor) -> torch.Tensor:
    """Zero-inflated negative binomial log-mass.

    With ``pi = sigmoid(zi_logits)`` the probability of a structural zero:
    ``p(0) = pi + (1 - pi) NB(0)`` and ``p(x > 0) = (1 - pi) NB(x)``, evaluated stably in log space.

    The values and gradients of :class:`scvi.distributions.ZeroInflatedNegativeBinomial`'s ``log_prob`` on counts
    up to rounding, written here because :mod:`scsparse.nn` imports no scvi-tools (see :func:`log_nb`).

    Examples
    --------
    >>> import torch
    >>> x, mu, theta = torch.tensor([0.0, 3.0]), torch.tensor(2.0), torch.tensor(1.5)
    >>> big = torch.tensor(-30.0)  # almost no zero inflation: ZINB equals NB
    >>> torch.allclose(log_zinb(x, mu, theta, big), log_nb(x, mu, theta), atol=1e-6)
    True
    """
    log_nb_x = log_nb(x, mu, theta)
    log_pi = -F.softplus(-zi_logits)  # log sigmoid(logits)
    log_one_minus_pi = -F.softplus(zi_logits)  # log(1 - sigmoid(logits))
    zero_case = torch.logaddexp(log_pi, log_one_minus_pi + log_nb_x)
    non_zero_case = log_one_minus_pi + log_nb_x
    return torch.where(x < 0.5, zero_case, non_zero_case)


def log_multinomial(x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """Multinomial log-mass of count rows with the total count fixed to the observed one.

    ``log n! - sum_j log x_j! + sum_j x_j log p_j`` with ``p = softmax(logits)`` along the last axis.
    Returned per row (shape ``x.shape[:-1]``), unlike the element-wise likelihoods, because the
    normaliser does not split over features.

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[1.0, 1.0]])
    >>> round(float(log_multinomial(x, torch.zeros(1, 2))[0]), 4)  # 2 * 0.5 * 0.5
    -0.6931
    """
    n = x.sum(-1)
    log_p = torch.log_softmax(logits, dim=-1)
    return torch.lgamma(n + 1.0) - torch.lgamma(x + 1.0).sum(-1) + (x * log_p).sum(-1)


def log_bernoulli(x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """Bernoulli log-mass ``x log p + (1 - x) log(1 - p)`` with ``p = sigmoid(logits)``, computed stably.

    Examples
    --------
    >>> import torch
    >>> round(float(log_bernoulli(torch.tensor(1.0), torch.tensor(0.0))), 4)  # log 0.5
    -0.6931
    """
    return -F.binary_cross_entropy_with_logits(logits, x, reduction="none")
