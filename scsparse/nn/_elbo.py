"""The pieces of the (sparse) VAE objective shared by the scvi-tools module and the array models.

Per row ``i`` of a minibatch of ``B`` rows drawn from ``N`` training rows, the sparse VAE minimises

    mean_i [ -log p(x_i | z_i) + kl_weight * KL(q(z_i | x_i) || N(0, I)) ] + penalty / N

where ``penalty`` is the negative log-prior of the global parameters that receive gradients (the
Spike-and-Slab Lasso term on ``W`` and, for Gaussian data, the inverse-gamma prior on the per-feature
variances). The data term of the full objective is a sum over all ``N`` rows, so the global prior
enters the per-row objective divided by ``N`` (not by ``B``), and it is never multiplied by
``kl_weight``. A plain VAE is the same objective without the penalty.
"""

from __future__ import annotations

import math

import torch
from torch.distributions import Normal

from ._latent_prior import CorrelatedGaussianPrior
from ._priors import inverse_gamma_neg_log_prior
from ._spike_slab_lasso import SpikeSlabLasso

__all__ = [
    "gaussian_kl",
    "importance_sampled_log_likelihood",
    "kl_normal",
    "sparse_vae_objective",
    "sparse_vae_penalty",
]


def kl_normal(
    mu_q: torch.Tensor,
    log_var_q: torch.Tensor,
    mu_p: float | torch.Tensor = 0.0,
    log_var_p: float | torch.Tensor = 0.0,
) -> torch.Tensor:
    """Element-wise ``KL(N(mu_q, sigma_q^2) || N(mu_p, sigma_p^2))``.

    ``0.5 * (log sigma_p^2 - log sigma_q^2 + (sigma_q^2 + (mu_q - mu_p)^2) / sigma_p^2 - 1)``.

    Examples
    --------
    >>> import torch
    >>> kl_normal(torch.tensor([0.0, 1.0]), torch.zeros(2))  # N(0, 1) to N(0, 1); N(1, 1) to N(0, 1)
    tensor([0.0000, 0.5000])
    """
    mu_p = torch.as_tensor(mu_p, dtype=mu_q.dtype, device=mu_q.device)
    log_var_p = torch.as_tensor(log_var_p, dtype=mu_q.dtype, device=mu_q.device)
    return 0.5 * (log_var_p - log_var_q + (torch.exp(log_var_q) + (mu_q - mu_p) ** 2) * torch.exp(-log_var_p) - 1.0)


def gaussian_kl(qz: Normal, mask: torch.Tensor | None = None) -> torch.Tensor:
    """``KL(q(z | x) || N(0, I))`` per row, summed over the latent dimensions.

    ``0.5 * sum_k m_k (mu_k^2 + s_k^2 - 1 - log s_k^2)`` for ``q = N(mu, diag s^2)``, with ``m = 1``
    unless a mask is given.

    Parameters
    ----------
    qz
        Diagonal Gaussian with ``loc`` and ``scale`` of shape ``(..., K)``.
    mask
        Optional 0/1 weights broadcastable to ``(..., K)``: only the dimensions a row uses count (the
        zero-padded latent blocks of the multi-study model).

    Returns
    -------
    torch.Tensor
        Shape ``(...)``.

    Examples
    --------
    >>> import torch
    >>> from torch.distributions import Normal
    >>> qz = Normal(torch.tensor([[0.0, 1.0]]), torch.tensor([[1.0, 1.0]]))
    >>> gaussian_kl(qz)  # only the mean of the second dimension is off: 0.5 * 1^2
    tensor([0.5000])
    """
    kl = kl_normal(qz.loc, 2.0 * torch.log(qz.scale))
    return (kl if mask is None else kl * mask).sum(-1)


def sparse_vae_penalty(
    prior: SpikeSlabLasso,
    w: torch.Tensor,
    log_var: torch.Tensor | None = None,
    nu: float = 3.0,
    xi: float = 1.0,
) -> torch.Tensor:
    """Negative log-prior of the global parameters of the sparse VAE that receive gradients (a scalar).

    ``sum_jk [lambda1 p*_jk + lambda0 (1 - p*_jk)] |w_jk|`` (:meth:`SpikeSlabLasso.penalty`, ``p*`` held
    fixed) plus, when ``log_var`` is given (Gaussian likelihood), the inverse-gamma prior
    ``sigma_j^2 ~ InvGamma(nu / 2, nu * xi / 2)`` (:func:`inverse_gamma_neg_log_prior`).

    Parameters
    ----------
    prior
        The Spike-and-Slab Lasso prior holding ``p*``.
    w
        The mask ``W`` (``G x K``).
    log_var
        Per-feature log-variances of a Gaussian likelihood, or ``None``.
    nu, xi
        Inverse-gamma hyper-parameters (see :func:`calibrate_inverse_gamma`).

    Returns
    -------
    torch.Tensor
        Scalar.

    Examples
    --------
    >>> import torch
    >>> from scsparse.nn import SpikeSlabLasso
    >>> prior = SpikeSlabLasso(2, 1, lambda0=10.0, lambda1=1.0)  # p* = 0.5: rate 5.5 everywhere
    >>> float(sparse_vae_penalty(prior, torch.tensor([[1.0], [-1.0]])))
    11.0
    """
    penalty = prior.penalty(w)
    if log_var is not None:
        penalty = penalty + inverse_gamma_neg_log_prior(log_var, nu, xi)
    return penalty


def sparse_vae_objective(
    rec: torch.Tensor,
    kl: torch.Tensor,
    penalty: torch.Tensor | float | None = None,
    n_obs: int = 1,
    kl_weight: float = 1.0,
) -> torch.Tensor:
    """Per-row training objective ``mean(rec + kl_weight * kl) + penalty / n_obs``.

    Parameters
    ----------
    rec
        ``-log p(x_i | z_i)`` per row of the minibatch, shape ``(B,)``.
    kl
        ``KL(q(z_i | x_i) || p(z))`` per row, shape ``(B,)``.
    penalty
        Negative log-prior of the global parameters (scalar), e.g. :func:`sparse_vae_penalty`; ``None``
        or 0 for a plain VAE.
    n_obs
        Number of training rows ``N`` (the global prior is shared by all of them).
    kl_weight
        Weight of the local KL term (``beta`` of a beta-VAE, or a warm-up); it does not scale the penalty.

    Returns
    -------
    torch.Tensor
        Scalar.

    Examples
    --------
    >>> import torch
    >>> rec, kl = torch.tensor([1.0, 3.0]), torch.tensor([0.5, 0.5])
    >>> round(float(sparse_vae_objective(rec, kl, penalty=torch.tensor(10.0), n_obs=100)), 4)  # 2.5 + 0.1
    2.6
    """
    loss = torch.mean(rec + kl_weight * kl)
    if penalty is not None:
        loss = loss + penalty / max(int(n_obs), 1)
    return loss


def importance_sampled_log_likelihood(
    log_px_z: torch.Tensor,
    z: torch.Tensor,
    qz: Normal,
    mask: torch.Tensor | None = None,
    prior: CorrelatedGaussianPrior | None = None,
) -> torch.Tensor:
    """Importance-sampled ``log p(x)`` with proposal ``q(z | x)`` and prior ``N(0, I)`` (or ``prior``).

    ``log p(x) ~= logsumexp_s [log p(x | z_s) + log N(z_s; 0, I) - log q(z_s | x)] - log S``
    for ``S`` samples ``z_s ~ q(z | x)``. The estimate is of the model's marginal likelihood whatever
    KL weight was used in training.

    Parameters
    ----------
    log_px_z
        ``log p(x | z_s)`` per sample and row, shape ``(S, B)``.
    z
        The samples, shape ``(S, B, K)``.
    qz
        The proposal, batch shape ``(B, K)``.
    mask
        Optional 0/1 weights broadcastable to ``(S, B, K)``: the prior and proposal densities are summed
        over the dimensions a row uses only (see :func:`gaussian_kl`).
    prior
        A learned :class:`~scsparse.nn.CorrelatedGaussianPrior` in place of ``N(0, I)`` (not with ``mask``).

    Returns
    -------
    torch.Tensor
        Shape ``(B,)``.

    Examples
    --------
    >>> import torch
    >>> from torch.distributions import Normal
    >>> qz = Normal(torch.zeros(1, 2), torch.ones(1, 2))  # proposal = prior: the weights are p(x | z)
    >>> z = qz.sample((3,))
    >>> out = importance_sampled_log_likelihood(torch.zeros(3, 1), z, qz)
    >>> torch.allclose(out, torch.zeros(1), atol=1e-6)
    True
    """
    if prior is not None and mask is not None:
        raise ValueError("A correlated prior on z is not defined for masked (zero-padded) latent blocks.")
    log_qz = qz.log_prob(z)
    if prior is not None:
        log_pz = prior.log_prob(z)
    else:
        log_pz = -0.5 * (z**2 + math.log(2 * math.pi))
        if mask is not None:
            log_pz, log_qz = log_pz * mask, log_qz * mask
        log_pz = log_pz.sum(-1)
    log_qz = log_qz.sum(-1)
    n_samples = log_px_z.shape[0]
    return torch.logsumexp(log_px_z + log_pz - log_qz, dim=0) - math.log(n_samples)
