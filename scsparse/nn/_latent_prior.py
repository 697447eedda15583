"""A Gaussian prior on the factors with a learned correlation matrix, ``z ~ N(0, Sigma_z)``.

Moran et al. (2022) write the sparse DGM with a general prior covariance ``Sigma_z`` (their Eq. 1 and
Appendix B.2) and fit ``Sigma_z = I``. Under ``N(0, I)`` the encoder pays a KL price for codes that are as
correlated as the true factors, and on correlated factors the model can prefer decorrelated codes with a dense
mask (:doc:`/benchmarks/index`, synthetic data). With ``Sigma_z`` learned, correlated codes cost nothing extra.
The factors' scale stays fixed: ``Sigma_z`` is a correlation matrix (unit diagonal), so ``|w_jk|`` keeps its meaning.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.distributions import Normal

__all__ = ["CorrelatedGaussianPrior"]


class CorrelatedGaussianPrior(nn.Module):
    """``N(0, Sigma_z)`` with ``Sigma_z`` a learned ``K x K`` correlation matrix (MAP, a flat prior on it).

    ``Sigma_z = L L^T`` with ``L`` lower triangular, positive diagonal and unit-norm rows, from an unconstrained
    ``K x K`` parameter (zero at the start: ``Sigma_z = I``, where the KL equals
    :func:`~scsparse.nn.gaussian_kl`).

    Parameters
    ----------
    n_latent
        Number of factors ``K``.

    Examples
    --------
    >>> import torch
    >>> from torch.distributions import Normal
    >>> prior = CorrelatedGaussianPrior(2)
    >>> prior.correlation()
    tensor([[1., 0.],
            [0., 1.]], grad_fn=<MmBackward0>)
    >>> prior.kl(Normal(torch.tensor([[0.0, 1.0]]), torch.ones(1, 2)))  # as N(0, I): 0.5 * 1^2
    tensor([0.5000], grad_fn=<MulBackward0>)
    """

    def __init__(self, n_latent: int) -> None:
        super().__init__()
        if int(n_latent) < 1:
            raise ValueError(f"n_latent must be a positive integer, got {n_latent}.")
        self.n_latent = int(n_latent)
        self.raw = nn.Parameter(torch.zeros(self.n_latent, self.n_latent))

    def cholesky(self) -> torch.Tensor:
        """Lower-triangular ``L`` with positive diagonal and unit-norm rows, ``Sigma_z = L L^T``."""
        lower = torch.tril(self.raw, -1) + torch.diag(torch.exp(torch.diagonal(self.raw)))
        return lower / lower.norm(dim=1, keepdim=True)

    def correlation(self) -> torch.Tensor:
        """``Sigma_z``, ``(K, K)``, unit diagonal."""
        lower = self.cholesky()
        return lower @ lower.T

    @torch.no_grad()
    def flip_(self, signs: torch.Tensor) -> None:
        """Replace ``Sigma_z`` by ``D Sigma_z D`` with ``D = diag(signs)`` (``+1`` or ``-1``), in place.

        The prior of the factors with ``z_k`` replaced by ``signs[k] z_k``: the Cholesky factor becomes
        ``D L D`` (still lower triangular with a positive diagonal), so the unconstrained parameter's off-diagonal
        entries ``(i, j)`` change sign where ``signs[i] signs[j] = -1``.

        Examples
        --------
        >>> prior = CorrelatedGaussianPrior(2)
        >>> with torch.no_grad():
        ...     prior.raw[1, 0] = 1.0
        >>> prior.flip_(torch.tensor([1.0, -1.0]))
        >>> round(float(prior.correlation().detach()[0, 1]), 3)
        -0.707
        """
        signs = signs.to(self.raw)
        self.raw.mul_(signs[:, None] * signs[None, :])

    def _whiten(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``L^{-1}`` and ``log det Sigma_z``."""
        lower = self.cholesky()
        eye = torch.eye(self.n_latent, dtype=lower.dtype, device=lower.device)
        inv = torch.linalg.solve_triangular(lower, eye, upper=False)
        return inv, 2.0 * torch.log(torch.diagonal(lower)).sum()

    def kl(self, qz: Normal) -> torch.Tensor:
        """``KL(N(mu, diag s^2) || N(0, Sigma_z))`` per row.

        ``0.5 * [sum_k s_k^2 (Sigma^-1)_kk + mu^T Sigma^-1 mu - K + log det Sigma - sum_k log s_k^2]``.

        Parameters
        ----------
        qz
            Diagonal Gaussian with ``loc`` and ``scale`` of shape ``(..., K)``.

        Returns
        -------
        torch.Tensor
            Shape ``(...)``.
        """
        inv, logdet = self._whiten()
        var = qz.scale**2
        white = qz.loc @ inv.T
        trace = (var * (inv**2).sum(0)).sum(-1)
        return 0.5 * (trace + (white**2).sum(-1) - self.n_latent + logdet - torch.log(var).sum(-1))

    def log_prob(self, z: torch.Tensor) -> torch.Tensor:
        """``log N(z; 0, Sigma_z)`` summed over the factors, shape ``z.shape[:-1]``."""
        inv, logdet = self._whiten()
        white = z @ inv.T
        return -0.5 * ((white**2).sum(-1) + logdet + self.n_latent * math.log(2.0 * math.pi))
