"""Amortised Gaussian encoder q(z | x) = N(mu(x), diag sigma^2(x))."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.distributions import Normal

from ._mlp import MLP

__all__ = ["GaussianEncoder"]


class GaussianEncoder(nn.Module):
    """MLP encoder returning a diagonal Gaussian over the latent factors.

    Parameters
    ----------
    n_input
        Number of input features.
    n_latent
        Number of latent factors ``K``.
    n_hidden, n_layers, activation, dropout_rate, norm
        Body of the encoder, see :class:`~scsparse.nn.MLP`.
    n_cat_list
        Category counts of covariates fed to the encoder.
    var_eps
        Floor added to the variance for numerical stability.

    Examples
    --------
    >>> import torch
    >>> enc = GaussianEncoder(10, 3, n_hidden=16)
    >>> qz, z = enc(torch.randn(4, 10))
    >>> z.shape, qz.loc.shape
    (torch.Size([4, 3]), torch.Size([4, 3]))
    """

    def __init__(
        self,
        n_input: int,
        n_latent: int,
        n_hidden: int = 128,
        n_layers: int = 1,
        n_cat_list: Sequence[int] = (),
        activation: str = "relu",
        dropout_rate: float = 0.1,
        norm: str | None = "batch",
        var_eps: float = 1e-4,
    ) -> None:
        super().__init__()
        self.body = MLP(
            n_input,
            2 * n_latent,
            n_hidden=n_hidden,
            n_layers=n_layers,
            n_cat_list=n_cat_list,
            activation=activation,
            dropout_rate=dropout_rate,
            norm=norm,
        )
        self.n_latent = n_latent
        self.var_eps = var_eps

    def forward(self, x: torch.Tensor, *cat_list: torch.Tensor | None) -> tuple[Normal, torch.Tensor]:
        """Return ``(q(z | x), z)`` with ``z`` a reparameterised sample."""
        out = self.body(x, *cat_list)
        mu, log_var = out[..., : self.n_latent], out[..., self.n_latent :]
        scale = torch.sqrt(torch.exp(log_var.clamp(-15.0, 15.0)) + self.var_eps)
        qz = Normal(mu, scale)
        return qz, qz.rsample()

    @torch.no_grad()
    def flip_(self, signs: torch.Tensor) -> None:
        """Multiply the posterior mean of factor ``k`` by ``signs[k]`` (``+1`` or ``-1``), in place.

        Flips the rows of the output layer that produce the means; the variances do not change.

        Examples
        --------
        >>> enc = GaussianEncoder(10, 3, n_hidden=16).eval()
        >>> x = torch.randn(4, 10)
        >>> before = enc(x)[0].loc
        >>> enc.flip_(torch.tensor([1.0, -1.0, 1.0]))
        >>> torch.allclose(enc(x)[0].loc, before * torch.tensor([1.0, -1.0, 1.0]))
        True
        """
        out = self.body.out
        signs = signs.to(out.weight)
        out.weight[: self.n_latent].mul_(signs[:, None])
        out.bias[: self.n_latent].mul_(signs)
