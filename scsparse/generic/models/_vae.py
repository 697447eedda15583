"""VAE and beta-VAE on plain arrays (the dense baselines of Moran et al. 2022)."""

from __future__ import annotations

from typing import Any, Self

import numpy as np
import torch
from torch.utils.data import DataLoader

from ._base import TorchArrayModel, check_option
from ._modules import ARRAY_LIKELIHOODS, DenseVAEModule, LatentVariableModule, check_likelihood_data

__all__ = ["VAE", "BetaVAE"]


class LatentVariableArrayModel(TorchArrayModel):
    """What :class:`VAE` and :class:`~scsparse.generic.models.ArraySparseVAE` share: a
    :class:`~scsparse.generic.models.LatentVariableModule` (encoder, decoder, observation model) fitted on
    arrays checked against the likelihood, and a seeded importance-sampled held-out likelihood.
    """

    module: LatentVariableModule

    def _set_network(self, n_latent: int, n_hidden: int, n_layers: int, likelihood: str, dropout_rate: float) -> None:
        check_option("likelihood", likelihood, ARRAY_LIKELIHOODS)
        self.n_latent, self.n_hidden, self.n_layers = int(n_latent), int(n_hidden), int(n_layers)
        self.likelihood = likelihood
        self.dropout_rate = float(dropout_rate)

    def _module_kwargs(self) -> dict[str, Any]:
        """The :class:`~scsparse.generic.models.LatentVariableModule` arguments besides the decoder's own."""
        return {
            "likelihood": self.likelihood,
            "n_hidden": self.n_hidden,
            "n_layers": self.n_layers,
            "dropout_rate": self.dropout_rate,
        }

    def fit(self, X: np.ndarray | DataLoader, *, max_epochs: int | None = None, verbose: bool = False) -> Self:
        """Fit on the rows of ``X`` (or a DataLoader of ``(x,)`` batches) and return the model.

        Arrays are checked against the likelihood (counts for ``"multinomial"``, 0/1 for ``"bernoulli"``).
        """
        if not isinstance(X, DataLoader):
            check_likelihood_data(X, self.likelihood)
        return super().fit(X, max_epochs=max_epochs, verbose=verbose)

    def heldout_nll(self, X: np.ndarray, n_samples: int = 100, **kwargs: Any) -> float:
        """Mean ``-log p(x)`` per row of ``X``, importance-sampled with ``q(z | x)`` as proposal.

        ``log p(x) ~= logsumexp_s[log p(x | z_s) + log N(z_s; 0, I) - log q(z_s | x)] - log S`` with
        ``S = n_samples`` draws from the encoder, at the fitted weights (the MAP ``W``, network and variances
        of the sparse VAE). This estimates the model's own marginal likelihood whatever KL weight (``beta``)
        was used in training, and it keeps every normalising constant (``log 2 pi`` and ``log sigma``; the
        multinomial coefficient). The draws are made with the torch RNG seeded with ``seed`` inside
        ``torch.random.fork_rng`` (the caller's RNG state is restored), so the estimate is reproducible.
        """
        with torch.random.fork_rng():
            torch.manual_seed(self.seed)
            return super().heldout_nll(X, n_samples=n_samples)


class VAE(LatentVariableArrayModel):
    """Variational autoencoder with a dense decoder (Kingma & Welling 2014; beta-VAE: Higgins et al. 2017).

    Model: ``z_i ~ N(0, I_K)``, ``x_i ~ p(x | f_theta(z_i))`` with ``f_theta`` an MLP
    (:class:`~scsparse.nn.MLP`), encoder ``q(z | x) = N(mu(x), diag sigma^2(x))``
    (:class:`~scsparse.nn.GaussianEncoder`; it sees ``log1p(x)`` for counts) and observation model
    :class:`~scsparse.nn.ObservationModel`:

    - ``"normal"``: ``x_ij ~ N(f_j(z_i), sigma_j^2)`` with a learned per-feature variance (no prior);
    - ``"multinomial"``: ``x_i ~ Mult(n_i, softmax(f(z_i)))`` with ``n_i`` the observed total;
    - ``"bernoulli"``: ``x_ij ~ Bern(sigmoid(f_j(z_i)))``.

    Training minimises, per minibatch, ``mean_i[-log p(x_i | z_i) + beta * KL(q(z_i | x_i) || N(0, I))]``
    with one reparameterised sample ``z_i`` (Adam, see :func:`~scsparse.generic.models.train_module`).

    Parameters
    ----------
    n_latent
        Number of latent factors ``K``.
    n_hidden, n_layers
        Width and number of hidden layers of the encoder and of the decoder.
    likelihood
        ``"normal"``, ``"multinomial"`` or ``"bernoulli"``.
    beta
        Weight of the KL term (1: the VAE; > 1: a beta-VAE).
    lr, max_epochs, batch_size, seed
        Optimisation settings; ``seed`` fixes initialisation, minibatch order and sampling.
    dropout_rate
        Encoder dropout.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(200, 8)).astype("float32")
    >>> model = VAE(n_latent=2, n_hidden=16, max_epochs=2).fit(X)
    >>> model.transform(X).shape
    (200, 2)
    >>> bool(np.isfinite(model.heldout_nll(X[:50], n_samples=10)))
    True
    """

    def __init__(
        self,
        n_latent: int = 10,
        n_hidden: int = 128,
        n_layers: int = 2,
        likelihood: str = "normal",
        beta: float = 1.0,
        lr: float = 1e-3,
        max_epochs: int = 100,
        batch_size: int = 128,
        seed: int = 0,
        dropout_rate: float = 0.1,
    ) -> None:
        super().__init__(seed=seed, lr=lr, max_epochs=max_epochs, batch_size=batch_size)
        self._set_network(n_latent, n_hidden, n_layers, likelihood, dropout_rate)
        if beta < 0:
            raise ValueError(f"beta must be non-negative, got {beta}.")
        self.beta = float(beta)

    def build(self, n_features: int, data: torch.Tensor | None) -> DenseVAEModule:
        """The torch module for ``n_features`` features."""
        return DenseVAEModule(n_features, self.n_latent, beta=self.beta, **self._module_kwargs())


class BetaVAE(VAE):
    """beta-VAE (Higgins et al. 2017): the :class:`VAE` with ``beta = 4`` by default.

    Everything else, including :meth:`heldout_nll` (an estimate of ``-log p(x)`` of the fitted model,
    not of the beta-weighted bound), is the VAE's.

    Examples
    --------
    >>> BetaVAE().beta
    4.0
    """

    def __init__(
        self,
        n_latent: int = 10,
        n_hidden: int = 128,
        n_layers: int = 2,
        likelihood: str = "normal",
        beta: float = 4.0,
        lr: float = 1e-3,
        max_epochs: int = 100,
        batch_size: int = 128,
        seed: int = 0,
        dropout_rate: float = 0.1,
    ) -> None:
        super().__init__(
            n_latent=n_latent,
            n_hidden=n_hidden,
            n_layers=n_layers,
            likelihood=likelihood,
            beta=beta,
            lr=lr,
            max_epochs=max_epochs,
            batch_size=batch_size,
            seed=seed,
            dropout_rate=dropout_rate,
        )
