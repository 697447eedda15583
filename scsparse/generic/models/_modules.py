"""Torch modules of the generic VAE and sparse VAE, built from the :mod:`scsparse.nn` blocks.

Both modules share one body (:class:`LatentVariableModule`): a :class:`~scsparse.nn.GaussianEncoder`, a
decoder that maps ``z`` to per-feature outputs, and an :class:`~scsparse.nn.ObservationModel`. They differ
only in the decoder (a plain :class:`~scsparse.nn.MLP` or the :class:`~scsparse.nn.MaskedDecoder`) and in
the global penalty (none, or the Spike-and-Slab Lasso and variance priors). The per-row objective is
:func:`scsparse.nn._elbo.sparse_vae_objective`, the one the scvi-tools module uses.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.distributions import Normal

from scsparse.nn import (
    DEFAULT_LAMBDA0,
    DEFAULT_LAMBDA1,
    MLP,
    GaussianEncoder,
    MaskedDecoder,
    ObservationModel,
    SpikeSlabLasso,
    gaussian_kl,
    importance_sampled_log_likelihood,
    sparse_vae_objective,
    sparse_vae_penalty,
)

from ._base import check_option
from ._common import sample_chunks

__all__ = [
    "ARRAY_LIKELIHOODS",
    "DenseVAEModule",
    "LatentVariableModule",
    "SparseVAEArrayModule",
    "check_likelihood_data",
]

#: Likelihoods of the generic autoencoders.
ARRAY_LIKELIHOODS: tuple[str, ...] = ("normal", "multinomial", "bernoulli")

#: Rows (samples x minibatch rows) decoded at once when importance sampling.
_IS_ROWS = 8192


def check_likelihood_data(X: np.ndarray, likelihood: str) -> None:
    """Raise a ``ValueError`` when ``X`` cannot come from ``likelihood``.

    ``"multinomial"`` (and ``"poisson"``) need non-negative integer counts, ``"bernoulli"`` values in
    ``{0, 1}``; ``"normal"`` accepts any finite values.

    Examples
    --------
    >>> import numpy as np
    >>> check_likelihood_data(np.array([[0.0, 1.0]]), "bernoulli")
    >>> check_likelihood_data(np.array([[0.5, 1.0]]), "multinomial")
    Traceback (most recent call last):
    ...
    ValueError: likelihood='multinomial' needs non-negative integer counts.
    """
    x = np.asarray(X)
    if likelihood in ("multinomial", "poisson") and (np.any(x < 0) or np.any(x != np.round(x))):
        raise ValueError(f"likelihood={likelihood!r} needs non-negative integer counts.")
    if likelihood == "bernoulli" and not np.all((x == 0) | (x == 1)):
        raise ValueError("likelihood='bernoulli' needs binary data (0 or 1).")


class LatentVariableModule(nn.Module):
    """Encoder, decoder and observation model with the (sparse) VAE objective.

    Subclasses set ``self.decoder`` and implement :meth:`decode`; they may override
    :meth:`global_penalty`. The trainer of :mod:`scsparse.generic.models` calls :meth:`loss`; the array
    models call :meth:`encode`, :meth:`marginal_ll` and :meth:`predict_mean`.

    Parameters
    ----------
    n_features
        Number of features ``G``.
    n_latent
        Number of latent factors ``K``.
    likelihood
        One of :data:`ARRAY_LIKELIHOODS`.
    n_hidden, n_layers, dropout_rate
        Encoder body (batch norm, ReLU, dropout: the encoder of the scvi-tools sparse VAE).
    kl_weight
        Weight of the local KL term in :meth:`loss` (``beta``).
    """

    decoder: nn.Module

    def __init__(
        self,
        n_features: int,
        n_latent: int,
        likelihood: str = "normal",
        n_hidden: int = 128,
        n_layers: int = 2,
        dropout_rate: float = 0.1,
        kl_weight: float = 1.0,
        kl_warmup_epochs: int = 0,
    ) -> None:
        super().__init__()
        check_option("likelihood", likelihood, ARRAY_LIKELIHOODS)
        self.n_features, self.n_latent = int(n_features), int(n_latent)
        self.likelihood = likelihood
        self.kl_weight = float(kl_weight)
        self.kl_warmup_epochs = int(kl_warmup_epochs)
        self.encoder = GaussianEncoder(
            n_features, n_latent, n_hidden=n_hidden, n_layers=n_layers, dropout_rate=dropout_rate
        )
        self.observation = ObservationModel(likelihood, n_features)

    # ---------------------------------------------------------------- pieces
    def encoder_input(self, x: torch.Tensor) -> torch.Tensor:
        """What the encoder sees: ``log1p(x)`` for counts, ``x`` otherwise."""
        return torch.log1p(x) if self.observation.is_count else x

    def posterior(self, x: torch.Tensor) -> Normal:
        """``q(z | x)``."""
        qz, _ = self.encoder(self.encoder_input(x))
        return qz

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior mean and standard deviation of the factors, each ``(B, K)``."""
        qz = self.posterior(x)
        return qz.loc, qz.scale

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """Decoder outputs ``(n_heads, *z.shape[:-1], G)`` for latent codes ``z`` of shape ``(..., K)``."""
        raise NotImplementedError

    def global_penalty(self) -> torch.Tensor | None:
        """Negative log-prior of the global parameters (``None``: no prior)."""
        return None

    # ---------------------------------------------------------------- objective
    def loss_terms(self, x: torch.Tensor) -> dict[str, torch.Tensor | None]:
        """One-sample terms of the objective for the rows ``x``.

        Returns ``{"rec": -log p(x_i | z_i) (B,), "kl": KL(q(z_i | x_i) || N(0, I)) (B,),
        "penalty": global_penalty() (scalar or None)}`` with ``z_i ~ q(z | x_i)`` reparameterised.
        """
        qz = self.posterior(x)
        z = qz.rsample()
        rec = -self.observation.log_prob(x, self.decode(z))
        return {"rec": rec, "kl": gaussian_kl(qz), "penalty": self.global_penalty()}

    def loss(self, x: torch.Tensor, n_obs: int = 1, epoch: int = 0) -> torch.Tensor:
        """``mean_i(rec_i + kl_weight * kl_i) + penalty / n_obs`` (:func:`~scsparse.nn._elbo.sparse_vae_objective`)."""
        terms = self.loss_terms(x)
        weight = self.kl_weight
        if self.kl_warmup_epochs > 0:  # linear warm-up from 0, as scvi-tools' training plan does
            weight *= min(1.0, epoch / self.kl_warmup_epochs)
        return sparse_vae_objective(terms["rec"], terms["kl"], terms["penalty"], n_obs, weight)

    # ---------------------------------------------------------------- evaluation
    @torch.no_grad()
    def marginal_ll(self, x: torch.Tensor, n_samples: int = 100) -> torch.Tensor:
        """Importance-sampled ``log p(x)`` per row with ``q(z | x)`` as proposal (shape ``(B,)``).

        The samples are decoded in chunks of at most ``8192`` rows (samples times minibatch rows).
        """
        qz = self.posterior(x)
        z_all, log_px_z = [], []
        for s in sample_chunks(n_samples, x.shape[0], budget=_IS_ROWS):
            z = qz.sample((s,))
            heads = self.decode(z)
            log_px_z.append(self.observation.log_prob(x.unsqueeze(0).expand(s, *x.shape), heads))
            z_all.append(z)
        return importance_sampled_log_likelihood(torch.cat(log_px_z), torch.cat(z_all), qz)

    @torch.no_grad()
    def predict_mean(self, x: torch.Tensor) -> torch.Tensor:
        """Decoder mean at the posterior mean: proportions (multinomial), probabilities (Bernoulli), means."""
        return self.observation.mean(self.decode(self.posterior(x).loc))


class DenseVAEModule(LatentVariableModule):
    """VAE / beta-VAE: a plain MLP decoder from ``z`` to the ``G`` features.

    Examples
    --------
    >>> import torch
    >>> m = DenseVAEModule(n_features=6, n_latent=2, n_hidden=8)
    >>> m.loss(torch.randn(4, 6), n_obs=100).shape
    torch.Size([])
    >>> m.eval().marginal_ll(torch.randn(4, 6), n_samples=5).shape
    torch.Size([4])
    """

    def __init__(
        self,
        n_features: int,
        n_latent: int,
        likelihood: str = "normal",
        n_hidden: int = 128,
        n_layers: int = 2,
        dropout_rate: float = 0.1,
        beta: float = 1.0,
    ) -> None:
        super().__init__(n_features, n_latent, likelihood, n_hidden, n_layers, dropout_rate, kl_weight=beta)
        self.decoder = MLP(n_latent, self.observation.n_heads * n_features, n_hidden=n_hidden, n_layers=n_layers)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """Decoder outputs ``(n_heads, *z.shape[:-1], G)``."""
        out = self.decoder(z).reshape(*z.shape[:-1], self.observation.n_heads, self.n_features)
        return out.movedim(-2, 0)


class SparseVAEArrayModule(LatentVariableModule):
    """Sparse VAE (Moran et al. 2022): masked decoder with a Spike-and-Slab Lasso prior on ``W``.

    The prior, decoder, encoder and per-row objective are those of
    :class:`scsparse.module.SparseVAEModule` with ``max_prior_cells=None`` and ``first_bias=False``:
    ``loss = mean_i(rec_i + KL_i) + penalty / n_obs`` with
    ``penalty = sum_jk [lambda1 p*_jk + lambda0 (1 - p*_jk)] |w_jk|`` plus, for ``"normal"``, the
    inverse-gamma prior on the per-feature variances. Call :meth:`em_update` after every optimiser step.

    Parameters
    ----------
    n_features, n_latent, likelihood, n_hidden, n_layers, dropout_rate
        See :class:`LatentVariableModule`; ``n_hidden`` and ``n_layers`` also set the masked decoder.
    lambda0, lambda1, a, b
        Spike-and-Slab Lasso hyper-parameters (``b=None`` means ``b = G``).
    sigma_prior_nu, sigma_prior_xi
        Inverse-gamma prior ``sigma_j^2 ~ InvGamma(nu / 2, nu * xi / 2)`` (``"normal"`` only).
    decoder_kwargs
        Passed to :class:`~scsparse.nn.MaskedDecoder`; the first layer has no bias (the paper's network) unless
        ``first_bias=True`` is given.

    Examples
    --------
    >>> import torch
    >>> m = SparseVAEArrayModule(n_features=6, n_latent=3, n_hidden=8)
    >>> loss = m.loss(torch.randn(4, 6), n_obs=100)
    >>> m.em_update()
    >>> m.prior.p_star.shape
    torch.Size([6, 3])
    """

    def __init__(
        self,
        n_features: int,
        n_latent: int,
        likelihood: str = "normal",
        n_hidden: int = 128,
        n_layers: int = 2,
        dropout_rate: float = 0.1,
        lambda0: float = DEFAULT_LAMBDA0,
        lambda1: float = DEFAULT_LAMBDA1,
        a: float = 1.0,
        b: float | None = None,
        sigma_prior_nu: float = 3.0,
        sigma_prior_xi: float = 1.0,
        decoder_kwargs: dict | None = None,
        kl_warmup_epochs: int = 0,
    ) -> None:
        super().__init__(n_features, n_latent, likelihood, n_hidden, n_layers, dropout_rate, 1.0, kl_warmup_epochs)
        self.decoder = MaskedDecoder(
            n_latent,
            n_features,
            n_hidden=n_hidden,
            n_layers=n_layers,
            n_heads=self.observation.n_heads,
            **{"first_bias": False, **(decoder_kwargs or {})},  # the paper's network: no first-layer bias
        )
        self.prior = SpikeSlabLasso(n_features, n_latent, lambda0=lambda0, lambda1=lambda1, a=a, b=b)
        self.sigma_prior_nu, self.sigma_prior_xi = float(sigma_prior_nu), float(sigma_prior_xi)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """Masked decoder outputs ``(n_heads, *z.shape[:-1], G)``."""
        lead = z.shape[:-1]
        heads = self.decoder(z.reshape(-1, self.n_latent))
        return heads.reshape(self.decoder.n_heads, *lead, self.n_features)

    def global_penalty(self) -> torch.Tensor:
        """SSL penalty on ``W`` plus the inverse-gamma prior on the variances (``"normal"``)."""
        log_var = self.observation.log_var if self.likelihood == "normal" else None
        return sparse_vae_penalty(
            self.prior, self.decoder.masked_W(), log_var, self.sigma_prior_nu, self.sigma_prior_xi
        )

    @torch.no_grad()
    def em_update(self) -> None:
        """E-step (``p*``) then ``eta`` update of the Spike-and-Slab Lasso from the current ``W``."""
        self.prior.em_update(self.decoder.masked_W())
