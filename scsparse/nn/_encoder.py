"""Amortised Gaussian encoder q(z | x) = N(mu(x), diag sigma^2(x))."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.distributions import Normal

from ._mlp import MLP

__all__ = ["GaussianEncoder", "StackedEncoder"]


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


class StackedEncoder(nn.Module):
    """Two encoders side by side: the factors of ``first``, then those of ``second``, from the same input.

    Used to add factors to a trained model (query mapping): ``first`` is the reference's encoder, kept fixed,
    and ``second`` a new encoder for the new factors, so the reference's factors stay exactly the function of
    the data they were, while the new factors can read features the reference's encoder never learned.

    Parameters
    ----------
    first, second
        Encoders returning ``(q(z | x), z)`` with attributes ``n_latent`` (e.g. :class:`GaussianEncoder`).

    Examples
    --------
    >>> enc = StackedEncoder(GaussianEncoder(10, 3, n_hidden=8), GaussianEncoder(10, 2, n_hidden=8))
    >>> qz, z = enc(torch.randn(4, 10))
    >>> enc.n_latent, tuple(qz.loc.shape)
    (5, (4, 5))
    """

    def __init__(self, first: nn.Module, second: nn.Module) -> None:
        super().__init__()
        self.first, self.second = first, second
        self.n_latent = int(first.n_latent) + int(second.n_latent)

    def forward(self, x: torch.Tensor, *cat_list: torch.Tensor | None) -> tuple[Normal, torch.Tensor]:
        """Return ``(q(z | x), z)`` with the two encoders' factors concatenated."""
        q1, _ = self.first(x, *cat_list)
        q2, _ = self.second(x, *cat_list)
        qz = Normal(torch.cat([q1.loc, q2.loc], dim=-1), torch.cat([q1.scale, q2.scale], dim=-1))
        return qz, qz.rsample()

    @torch.no_grad()
    def flip_(self, signs: torch.Tensor) -> None:
        """Flip the posterior means of the factors with ``signs[k] == -1`` (see :meth:`GaussianEncoder.flip_`)."""
        k = int(self.first.n_latent)
        self.first.flip_(signs[:k])
        self.second.flip_(signs[k:])
