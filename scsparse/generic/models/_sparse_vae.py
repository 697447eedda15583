"""The sparse VAE (Moran et al. 2022) on plain arrays, with the prior and decoder of the scvi-tools model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Self

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

from scsparse.nn import DEFAULT_LAMBDA0, DEFAULT_LAMBDA1, calibrate_inverse_gamma, warn_no_active_factor
from scsparse.utils import column_variances

from ._modules import SparseVAEArrayModule
from ._vae import LatentVariableArrayModel

__all__ = ["ArraySparseVAE", "feature_variances"]


def feature_variances(X: np.ndarray | DataLoader) -> np.ndarray:
    """Per-feature sample variances (``ddof=1``) of an array or of a DataLoader of ``(x,)`` batches.

    Examples
    --------
    >>> import numpy as np
    >>> feature_variances(np.array([[0.0, 1.0], [2.0, 1.0]]))
    array([2., 0.])
    """
    if not isinstance(X, DataLoader):
        return np.asarray(X, dtype=np.float64).var(axis=0, ddof=1)
    return column_variances(x for (x,) in X)


def _em_after_step(module: nn.Module, optimizer: torch.optim.Optimizer) -> None:
    module.em_update()


class ArraySparseVAE(LatentVariableArrayModel):
    """Sparse VAE (Moran et al. 2022) on a rows x features array.

    The model of :class:`scsparse.model.SparseVAE` (``z_i ~ N(0, I_K)``, ``x_ij ~ p(f_theta(w_j ⊙ z_i)_j)`` with
    the masked decoder :class:`~scsparse.nn.MaskedDecoder`, a Spike-and-Slab Lasso prior on ``W``
    (:class:`~scsparse.nn.SpikeSlabLasso`) and the encoder :class:`~scsparse.nn.GaussianEncoder`), but for two
    things:

    - the decoder's first layer has no bias (the paper's network), where :class:`scsparse.model.SparseVAE` has one
      by default; ``decoder_kwargs={"first_bias": True}`` gives that network;
    - the prior on ``W`` is weighed against every training row, as in :class:`scsparse.model.SparseVAE` with
      ``max_prior_cells=None``: this model has no ``max_prior_cells``, whose default in the scvi-tools model
      tempers the likelihood once there are more training cells than it.

    Of the scvi-tools model's options it leaves out batches and covariates, ``latent_prior="correlated"``,
    ``mask_init="nmf"`` and the count likelihoods other than ``"multinomial"``, and some defaults differ
    (``n_latent=10``, ``n_layers=2``, ``likelihood="normal"``).

    Training minimises, per minibatch of rows drawn from ``N`` training rows,

    ``mean_i[-log p(x_i | z_i) + KL(q(z_i | x_i) || N(0, I))] + penalty / N``

    with ``penalty = sum_jk [lambda1 p*_jk + lambda0 (1 - p*_jk)] |w_jk|`` (plus, for ``"normal"``, the
    inverse-gamma prior on the per-feature variances), and runs the EM update of ``p*`` and ``eta``
    after every optimiser step.

    Why a second class beside the scvi-tools model: the papers' benchmarks run it on arrays that are not cells x
    genes (ratings, words, images, motion capture) with a ``"bernoulli"`` likelihood that
    :class:`scsparse.model.SparseVAE` does not offer, and train it in the same small loop as every baseline they
    compare with (:class:`~scsparse.generic.models.TorchArrayModel`). The model itself is not written twice: the
    decoder, prior, encoder and ELBO terms are the :mod:`scsparse.nn` blocks the scvi-tools module uses, so only
    the training loop and the data handling differ.

    Likelihoods: ``"normal"`` (per-feature variance ``sigma_j^2 ~ InvGamma(nu / 2, nu * xi / 2)``, with
    ``xi`` calibrated on the training data by :func:`~scsparse.nn.calibrate_inverse_gamma`: the 5%
    quantile of the per-feature sample variances is the prior's 90% quantile, as the scvi-tools model
    does), ``"multinomial"`` (softmax over features; the encoder sees ``log1p(x)``) and ``"bernoulli"``.

    Parameters
    ----------
    n_latent
        Number of factors ``K`` (an upper bound: the prior switches unused factors off).
    n_hidden, n_layers
        Width and number of hidden layers of the encoder and of the masked decoder.
    likelihood
        ``"normal"``, ``"multinomial"`` or ``"bernoulli"``.
    lambda0, lambda1
        Spike and slab Laplace rates (``lambda0 > lambda1``); the slab starts at ``|w| =``
        :func:`scsparse.nn.slab_threshold` (0.26 for the defaults at ``eta = 0.5``).
    a, b
        Beta hyper-prior on each column's slab probability (``b=None``: ``b = n_features``).
    sigma_prior_nu
        Degrees of freedom of the variance prior (``"normal"``).
    lr, max_epochs, batch_size, seed
        Optimisation settings.
    dropout_rate
        Encoder dropout.
    decoder_kwargs
        Passed to :class:`~scsparse.nn.MaskedDecoder` (``chunk_size``, ``w_init`` ...).
    kl_warmup_fraction
        The KL weight grows linearly from 0 to 1 over this fraction of the training epochs, as in
        :meth:`scsparse.model.SparseVAE.train` (the mask starts near the spike/slab boundary; the warm-up
        keeps the posterior from collapsing before the needed entries of ``W`` grow).

    Attributes
    ----------
    sigma_prior_xi_
        The calibrated scale ``xi`` of the variance prior (1.0 unless ``"normal"``), set by :meth:`fit`.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(200, 2))
    >>> X = np.hstack([z[:, [0]] * [1, 2, 3], z[:, [1]] * [1, 2, 3]]) + 0.1 * rng.normal(size=(200, 6))
    >>> model = ArraySparseVAE(n_latent=4, n_hidden=16, max_epochs=2).fit(X.astype("float32"))
    >>> model.loadings().shape, model.inclusion_probabilities().shape
    ((6, 4), (6, 4))
    """

    module: SparseVAEArrayModule

    def __init__(
        self,
        n_latent: int = 10,
        n_hidden: int = 128,
        n_layers: int = 2,
        likelihood: str = "normal",
        lambda0: float = DEFAULT_LAMBDA0,
        lambda1: float = DEFAULT_LAMBDA1,
        a: float = 1.0,
        b: float | None = None,
        sigma_prior_nu: float = 3.0,
        lr: float = 1e-3,
        max_epochs: int = 100,
        batch_size: int = 128,
        seed: int = 0,
        dropout_rate: float = 0.1,
        decoder_kwargs: dict | None = None,
        kl_warmup_fraction: float = 0.25,
    ) -> None:
        super().__init__(seed=seed, lr=lr, max_epochs=max_epochs, batch_size=batch_size)
        self.kl_warmup_fraction = float(kl_warmup_fraction)
        self._set_network(n_latent, n_hidden, n_layers, likelihood, dropout_rate)
        if not lambda0 > lambda1 > 0:
            raise ValueError(f"Need lambda0 > lambda1 > 0, got lambda0={lambda0}, lambda1={lambda1}.")
        self.lambda0, self.lambda1, self.a, self.b = float(lambda0), float(lambda1), float(a), b
        self.sigma_prior_nu = float(sigma_prior_nu)
        self.decoder_kwargs = dict(decoder_kwargs or {})
        self.sigma_prior_xi_ = 1.0

    def fit(self, X: np.ndarray | DataLoader, *, max_epochs: int | None = None, verbose: bool = False) -> Self:
        """Fit on the rows of ``X`` (or a DataLoader of ``(x,)`` batches) and return the model.

        For ``"normal"`` the variance prior is calibrated on the per-feature sample variances of ``X``
        first. Arrays are checked against the likelihood.

        Warns
        -----
        NoActiveFactorWarning
            When training ends with every entry of ``W`` in the spike (no active factor).
        """
        self.sigma_prior_xi_ = (  # the data check (count or binary likelihoods) comes in super().fit
            calibrate_inverse_gamma(feature_variances(X), nu=self.sigma_prior_nu)
            if self.likelihood == "normal"
            else 1.0
        )
        super().fit(X, max_epochs=max_epochs, verbose=verbose)
        if len(self.active_factors()) == 0:
            n_rows = len(X.dataset) if isinstance(X, DataLoader) else len(X)
            steps_per_epoch = len(X) if isinstance(X, DataLoader) else -(-n_rows // self.batch_size)
            warn_no_active_factor(
                n_rows,
                self._fit_epochs * steps_per_epoch,
                rows="training rows",
                lambda0=self.module.prior.lambda0,
                lambda1=self.module.prior.lambda1,
            )
        return self

    def build(self, n_features: int, data: torch.Tensor | None) -> SparseVAEArrayModule:
        """The torch module for ``n_features`` features (``xi`` from :meth:`fit`)."""
        return SparseVAEArrayModule(
            n_features,
            self.n_latent,
            lambda0=self.lambda0,
            lambda1=self.lambda1,
            a=self.a,
            b=self.b,
            sigma_prior_nu=self.sigma_prior_nu,
            sigma_prior_xi=self.sigma_prior_xi_,
            decoder_kwargs=self.decoder_kwargs,
            kl_warmup_epochs=round(self.kl_warmup_fraction * self._fit_epochs),
            **self._module_kwargs(),
        )

    def _hooks(self) -> dict[str, Callable | None]:
        return {"after_step": _em_after_step, "after_epoch": None}

    # ---------------------------------------------------------------- results
    def loadings(self) -> np.ndarray:
        """The mask ``W`` (features x factors)."""
        self._check_fitted()
        return self.module.decoder.masked_W().detach().cpu().numpy().copy()

    def inclusion_probabilities(self) -> np.ndarray:
        """Posterior inclusion probabilities ``p*`` (features x factors) from the last EM update."""
        self._check_fitted()
        return self.module.prior.p_star.detach().cpu().numpy().copy()

    def slab_probabilities(self) -> np.ndarray:
        """Per-factor slab probabilities ``eta`` (length ``K``) from the last EM update."""
        self._check_fitted()
        return self.module.prior.eta.detach().cpu().numpy().copy()

    def active_factors(self, pip_threshold: float = 0.5, min_features: int = 1) -> np.ndarray:
        """Indices of the factors with at least ``min_features`` features with ``p* > pip_threshold``."""
        self._check_fitted()
        mask = self.module.prior.active_mask(pip_threshold, min_features)
        return np.flatnonzero(mask.cpu().numpy())
