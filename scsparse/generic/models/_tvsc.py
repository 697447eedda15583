"""Variational sparse coding with learned thresholding (Fallah & Rozell, ICML 2022)."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.distributions import Gamma

from scsparse.generic.nn import (
    BASES,
    base_kl,
    gamma_threshold_prior,
    kl_gamma,
    sample_base,
    shifted_soft_threshold,
    straight_through_threshold,
    threshold_zero_probability,
    thresholded_laplace_gamma_log_prob,
    thresholded_log_prob,
)
from scsparse.nn import LIKELIHOODS, MLP

from ._base import TorchArrayModel, check_option
from ._common import SampledCodeModule, init_observation_variance, observation_log_prob
from ._vsc import linear_ramp

__all__ = ["DEFAULT_PRIOR_SCALE", "DEFAULT_THRESHOLD", "ThresholdedVSC", "ThresholdedVSCModule"]

#: Thresholds of the paper (app. D) that leave ~10% of a prior sample non-zero.
DEFAULT_THRESHOLD: dict[str, float] = {"gaussian": 0.52, "laplace": 0.25}
#: Prior scales of the paper (app. D, "scale parameter of our prior equal to 0.1"): Laplace ``b0 = 0.1``;
#: Gaussian variance 0.1 (standard deviation ``sqrt(0.1)``), the reading under which 0.52 gives 10% non-zero.
DEFAULT_PRIOR_SCALE: dict[str, float] = {"gaussian": math.sqrt(0.1), "laplace": 0.1}

_LOG_CLAMP = math.log(1e6)


class ThresholdedVSCModule(SampledCodeModule):
    """Encoder, generator and threshold distribution of a thresholded VSC model.

    Parameters
    ----------
    n_input
        Number of features ``G``.
    n_latent
        Latent dimensions ``K``.
    base
        ``"gaussian"`` or ``"laplace"`` base distribution.
    threshold
        ``"fixed"`` (``lambda = lambda0``) or ``"gamma"`` (``lambda ~ Gamma(alpha(x), beta(x))`` per row and
        dimension, prior ``Gamma(gamma_shape, gamma_shape / lambda0)``).
    lambda0
        Fixed threshold, or the prior mean of the Gamma threshold.
    prior_scale
        Scale of the base prior (standard deviation, or Laplace ``b0``); location 0.
    n_samples
        ``J`` of max-ELBO sampling.
    generator
        ``"linear"`` (a dictionary ``A``, ``G x K``, plus a bias) or ``"neural"`` (MLP).
    n_hidden, n_layers, activation
        Encoder MLP, and the generator MLP when ``generator="neural"``.
    likelihood
        Observation model.
    kl_weight, kl_weight_threshold
        ``beta1`` of the base KL and the factor giving ``beta2 = kl_weight * kl_weight_threshold`` of the
        threshold KL.
    gamma_shape
        ``alpha0`` of the Gamma threshold prior (paper: 3).
    scale_warmup
        ``(omega0, n_epochs)``: the encoder's scale is multiplied by ``omega``, rising linearly from
        ``omega0`` to 1 over ``n_epochs`` epochs.
    """

    def __init__(
        self,
        n_input: int,
        n_latent: int,
        base: str = "gaussian",
        threshold: str = "fixed",
        lambda0: float = 0.52,
        prior_scale: float = math.sqrt(0.1),
        n_samples: int = 10,
        generator: str = "neural",
        n_hidden: int = 128,
        n_layers: int = 1,
        activation: str = "relu",
        likelihood: str = "normal",
        kl_weight: float = 1.0,
        kl_weight_threshold: float = 0.1,
        gamma_shape: float = 3.0,
        scale_warmup: tuple[float, float] = (1.0, 0.0),
    ) -> None:
        super().__init__()
        self.n_input, self.n_latent = int(n_input), int(n_latent)
        self.base, self.threshold = base, threshold
        self.lambda0, self.prior_scale = float(lambda0), float(prior_scale)
        self.n_samples = int(n_samples)
        self.generator = generator
        self.kl_weight, self.kl_weight_threshold = float(kl_weight), float(kl_weight_threshold)
        self.scale_warmup = (float(scale_warmup[0]), float(scale_warmup[1]))
        if threshold == "gamma":
            self.alpha0, self.beta0 = gamma_threshold_prior(self.lambda0, gamma_shape)
        self.set_observation(likelihood, n_input)
        n_params = 4 if threshold == "gamma" else 2
        self.encoder = MLP(n_input, n_params * n_latent, n_hidden=n_hidden, n_layers=n_layers, activation=activation)
        if generator == "linear":
            self.decoder: nn.Module = nn.Linear(n_latent, self.n_heads * n_input)
        else:
            self.decoder = MLP(
                n_latent, self.n_heads * n_input, n_hidden=n_hidden, n_layers=n_layers, activation=activation
            )

    # -- distributions -----------------------------------------------------------------------------

    def omega_at(self, epoch: int | None) -> float:
        """Scale warm-up factor ``omega(epoch)`` (1 when ``epoch`` is ``None``, i.e. after training)."""
        omega0, n_epochs = self.scale_warmup
        if epoch is None or n_epochs <= 0:
            return 1.0
        return omega0 + (1.0 - omega0) * linear_ramp(epoch, 0.0, n_epochs)

    def posterior(
        self, x: torch.Tensor, omega: float = 1.0
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """``(loc, scale, alpha, beta)`` of ``q(s | x)`` and, for a Gamma threshold, ``q(lambda | x)``.

        ``scale = omega * prior_scale * exp(raw)`` and ``alpha = alpha0 exp(raw_a)``, ``beta = beta0 exp(raw_b)``
        (raw outputs clamped to ``+-log 1e6``): at initialisation the posterior scales sit near the prior's.
        """
        out = self.encoder(x)
        k = self.n_latent
        loc = out[..., :k]
        scale = omega * self.prior_scale * torch.exp(out[..., k : 2 * k].clamp(-_LOG_CLAMP, _LOG_CLAMP))
        if self.threshold != "gamma":
            return loc, scale, None, None
        alpha = self.alpha0 * torch.exp(out[..., 2 * k : 3 * k].clamp(-_LOG_CLAMP, _LOG_CLAMP))
        beta = self.beta0 * torch.exp(out[..., 3 * k :].clamp(-_LOG_CLAMP, _LOG_CLAMP))
        return loc, scale, alpha, beta

    def sample_thresholds(
        self, alpha: torch.Tensor | None, beta: torch.Tensor | None, n_samples: int
    ) -> torch.Tensor | float:
        """``lambda0``, or ``n_samples`` reparameterised draws from ``q(lambda | x)``."""
        if self.threshold != "gamma":
            return self.lambda0
        return Gamma(alpha, beta).rsample((n_samples,))

    def kl(
        self, loc: torch.Tensor, scale: torch.Tensor, alpha: torch.Tensor | None, beta: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-row ``KL(q(s | x) || p(s))`` (base only) and ``KL(q(lambda | x) || p(lambda))`` (0 if fixed)."""
        kl_base = base_kl(self.base, loc, scale, self.prior_scale).sum(-1)
        if self.threshold != "gamma":
            return kl_base, torch.zeros_like(kl_base)
        return kl_base, kl_gamma(alpha, beta, self.alpha0, self.beta0).sum(-1)

    # -- objective ---------------------------------------------------------------------------------

    def loss(self, x: torch.Tensor, n_obs: int, epoch: int = 0) -> torch.Tensor:
        """Per-row max-ELBO loss (see :class:`ThresholdedVSC`)."""
        loc, scale, alpha, beta = self.posterior(x, omega=self.omega_at(epoch))
        s = sample_base(self.base, loc, scale, (self.n_samples,))
        lam = self.sample_thresholds(alpha, beta, self.n_samples)
        z = straight_through_threshold(s, loc, lam)
        rec = -observation_log_prob(self.obs, x, self.decode(z))  # (J, B)
        kl_base, kl_thr = self.kl(loc, scale, alpha, beta)  # independent of the sample j
        best = rec.min(dim=0).values  # max over j of the per-sample ELBO
        beta1 = self.kl_weight
        return torch.mean(best + beta1 * kl_base + beta1 * self.kl_weight_threshold * kl_thr)

    # -- evaluation --------------------------------------------------------------------------------

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(E_q[z], loc, P_q(z != 0))``: ``E_q[z] = loc * P_q(z != 0)`` (see :meth:`ThresholdedVSC.transform`)."""
        loc, scale, alpha, beta = self.posterior(x)
        if self.threshold != "gamma":
            nonzero = 1.0 - threshold_zero_probability(self.base, scale, self.lambda0)
        elif self.base == "laplace":
            nonzero = torch.exp(-alpha * torch.log1p(1.0 / (scale * beta)))  # E[exp(-lambda / b)], Gamma MGF
        else:
            nonzero = 1.0 - threshold_zero_probability(self.base, scale, alpha / beta)
        return loc * nonzero, loc, nonzero

    @torch.no_grad()
    def max_elbo_codes(self, x: torch.Tensor, n_samples: int) -> torch.Tensor:
        """For every row, the thresholded sample with the highest ``log p(x | z)`` among ``n_samples``."""
        loc, scale, alpha, beta = self.posterior(x)
        s = sample_base(self.base, loc, scale, (n_samples,))
        z = shifted_soft_threshold(s, loc, self.sample_thresholds(alpha, beta, n_samples))
        log_px = observation_log_prob(self.obs, x, self.decode(z))  # (J, B)
        best = log_px.argmax(dim=0)
        return z[best, torch.arange(x.shape[0], device=x.device)]

    @torch.no_grad()
    def log_weights(self, x: torch.Tensor, n_samples: int) -> torch.Tensor:
        """Importance log-weights ``(S, B)`` of the generative model ``z = T_lambda(s)``, ``s ~ p(s)``.

        ``log p(x | z) + log p(z | lambda) - log q(z | lambda, x)`` (plus ``log p(lambda) - log q(lambda | x)``
        for a Gamma threshold), all thresholded densities from
        :func:`~scsparse.generic.nn.thresholded_log_prob` at exact samples. For the Laplace base with a
        Gamma threshold ``lambda`` is integrated out analytically
        (:func:`~scsparse.generic.nn.thresholded_laplace_gamma_log_prob`): weights over ``z`` alone.
        """
        loc, scale, alpha, beta = self.posterior(x)
        s = sample_base(self.base, loc, scale, (n_samples,))
        lam = self.sample_thresholds(alpha, beta, n_samples)
        z = shifted_soft_threshold(s, loc, lam)
        log_px = observation_log_prob(self.obs, x, self.decode(z))
        if self.threshold == "gamma" and self.base == "laplace":  # lambda integrated out analytically
            log_p = thresholded_laplace_gamma_log_prob(z, 0.0, self.prior_scale, self.alpha0, self.beta0)
            log_q = thresholded_laplace_gamma_log_prob(z, loc, scale, alpha, beta)
            return log_px + (log_p - log_q).sum(-1)
        log_p = thresholded_log_prob(z, self.base, 0.0, self.prior_scale, lam)
        log_q = thresholded_log_prob(z, self.base, loc, scale, lam)
        if self.threshold == "gamma":
            log_p = log_p + Gamma(self.alpha0, self.beta0).log_prob(lam)
            log_q = log_q + Gamma(alpha, beta).log_prob(lam)
        return log_px + (log_p - log_q).sum(-1)

    def floats_per_sample(self, n_rows: int) -> int:
        """Floats held per importance sample of ``n_rows`` rows (:meth:`marginal_ll`, proposal ``q(z, lambda | x)``)."""
        return n_rows * (self.n_input * (self.n_heads + 1) + 6 * self.n_latent)


class ThresholdedVSC(TorchArrayModel):
    r"""Variational sparse coding with learned thresholding (Fallah & Rozell, ICML 2022).

    The encoder gives a base distribution ``q(s | x)`` per latent dimension, Gaussian
    ``N(mu, sigma^2)`` or Laplace ``Laplace(mu, b)``; the code is the shifted soft-threshold of a sample,

    .. math::

        z = T_\lambda(s) = \mathrm{sign}(s - \mu) \max(|s - \mu| - \lambda, 0) + 1[|s - \mu| > \lambda] \mu,

    exactly zero when ``|s - mu| <= lambda``. For a Laplace base ``z`` is spike-and-slab with
    ``P(z != 0) = exp(-lambda / b)`` and slab ``Laplace(mu, b)`` (Proposition 3.1); for a Gaussian base
    ``P(z = 0) = 2 Phi(lambda / sigma) - 1``.

    **Training** (per row, minimised; Algorithm 1 and Eq. 5):

    .. math::

        \min_{j = 1..J} \big[-\log p(x | \tilde z_j)\big] + \beta_1 KL(q(s | x) \| p(s))
        + \beta_2 KL(q(\lambda | x) \| p(\lambda)),

    - ``z~_j = s_j + T_lambda_j(sg[s_j]) - sg[s_j]``: straight-through estimator, ``dz / ds = 1``;
    - KL on the base distribution only, prior ``p(s) = N(0, sigma0^2)`` or ``Laplace(0, b0)``
      (Laplace KL: ``|mu| / b0 + b exp(-|mu| / b) / b0 + log(b0 / b) - 1``, app. B);
    - ``threshold="fixed"``: ``lambda = lambda_`` for every dimension; ``threshold="gamma"``: per row and
      dimension ``lambda ~ q(lambda | x) = Gamma(alpha(x), beta(x))`` (rate ``beta``), reparameterised,
      prior ``Gamma(3, 3 / lambda_)`` (mean ``lambda_``), ``beta2 = kl_weight_threshold * beta1``;
    - max-ELBO sampling: of ``J = n_samples_max_elbo`` samples only the one with the largest ELBO enters
      the loss (the KLs do not depend on the sample, so it is the best reconstruction); ``J = 1`` is
      ordinary single-sample training;
    - optional scale warm-up (app. B): the scale is multiplied by ``omega``, from ``scale_warmup[0]`` up
      to 1 over the first ``scale_warmup[1]`` fraction of the epochs (off by default).

    The straight-through gradient is that of the reconstruction of the *un-thresholded* sample, and the
    fraction of zeros is set by the scale of ``q(s | x)`` alone (``P(z = 0)`` does not depend on ``mu``),
    which the base KL holds near the prior's: the training loss, computed with the thresholded sample,
    need not decrease monotonically, and about ``1 - P_prior(z = 0)`` of the codes stay non-zero
    (``lambda_`` sets the sparsity, as in the paper).

    ``lambda_=0`` gives the un-thresholded base model (``z = s``): a VAE with a Gaussian or Laplace
    prior (use it with ``n_samples_max_elbo=1`` for the plain VAE objective).

    **Generators.** ``generator="neural"``: an MLP; ``generator="linear"``: ``x ~ p(A z + c)`` with a
    dictionary ``A`` (``G x K``, returned by :meth:`loadings`) for sparse coding. The paper's
    sparse-coding objective uses ``log p(x | z) = -||x - A z||^2`` with ``beta = 1e-2``; here the
    likelihood is a true one (``"normal"``: learned per-feature variances), so ``kl_weight = 1`` gives
    the ELBO.

    **Held-out likelihood.** :meth:`heldout_nll` is an importance-sampled estimate of ``-log p(x)`` for
    the generative model ``z = T_lambda(s)``, ``s ~ p(s)`` (``lambda ~ p(lambda)`` for a Gamma
    threshold), ``x ~ p(x | z)``: with exact thresholded samples the proposal ``q(z | x)`` and the prior
    have densities against Lebesgue measure plus a point mass at 0 (computed by
    :func:`~scsparse.generic.nn.thresholded_log_prob`), so the importance weights are well defined
    (``nll_is_bound = False``, as for the other models).

    Parameters
    ----------
    n_latent
        Latent dimensions ``K``.
    base
        ``"laplace"`` (default; the best variational method of the paper's linear benchmark) or
        ``"gaussian"``.
    threshold
        ``"fixed"`` or ``"gamma"``.
    lambda_
        Threshold (fixed) or prior mean of the threshold (Gamma). Default: 0.52 (Gaussian), 0.25
        (Laplace), the paper's values that leave ~10% of a prior sample non-zero.
    prior_scale
        Scale of the base prior; default ``sqrt(0.1)`` (Gaussian standard deviation) or 0.1 (Laplace).
    n_samples_max_elbo
        ``J`` (paper: 20 for the linear generator, 10 for the neural one).
    generator
        ``"linear"`` or ``"neural"``.
    kl_weight
        ``beta1``, the weight of the base KL.
    kl_weight_threshold
        ``beta2 / beta1`` (paper: 0.1).
    gamma_shape
        Shape ``alpha0`` of the Gamma threshold prior (paper: 3).
    scale_warmup
        ``(omega0, fraction of max_epochs)``; the paper's linear runs used ``omega0 = 0.1``.
    n_hidden, n_layers, activation
        Encoder MLP (and generator MLP when neural).
    likelihood
        ``"normal"`` (learned per-feature variance), ``"multinomial"``, ``"bernoulli"`` or another of
        :data:`~scsparse.nn.LIKELIHOODS`.
    lr, max_epochs, batch_size, seed
        Training settings.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(200, 8))
    >>> model = ThresholdedVSC(n_latent=6, base="laplace", generator="linear", n_hidden=16, max_epochs=2).fit(X)
    >>> model.loadings().shape  # the dictionary A
    (8, 6)
    >>> codes = model.sparse_codes(X)
    >>> bool((codes == 0).mean() > 0.5)  # exactly sparse
    True
    """

    nll_is_bound: bool = False

    def __init__(
        self,
        n_latent: int = 10,
        *,
        base: str = "laplace",
        threshold: str = "fixed",
        lambda_: float | None = None,
        prior_scale: float | None = None,
        n_samples_max_elbo: int = 10,
        generator: str = "neural",
        kl_weight: float = 1.0,
        kl_weight_threshold: float = 0.1,
        gamma_shape: float = 3.0,
        scale_warmup: tuple[float, float] = (1.0, 0.0),
        n_hidden: int = 128,
        n_layers: int = 1,
        activation: str = "relu",
        likelihood: str = "normal",
        lr: float = 1e-3,
        max_epochs: int = 100,
        batch_size: int = 128,
        seed: int = 0,
    ) -> None:
        super().__init__(seed=seed, lr=lr, max_epochs=max_epochs, batch_size=batch_size)
        check_option("base", base, BASES)
        if threshold not in ("fixed", "gamma"):
            raise ValueError(f"threshold must be 'fixed' or 'gamma', got {threshold!r}.")
        if generator not in ("linear", "neural"):
            raise ValueError(f"generator must be 'linear' or 'neural', got {generator!r}.")
        check_option("likelihood", likelihood, LIKELIHOODS)
        lambda_ = DEFAULT_THRESHOLD[base] if lambda_ is None else float(lambda_)
        if lambda_ < 0 or (threshold == "gamma" and lambda_ <= 0):
            raise ValueError(f"lambda_ must be >= 0 (> 0 for a Gamma threshold), got {lambda_}.")
        if n_samples_max_elbo < 1:
            raise ValueError(f"n_samples_max_elbo must be >= 1, got {n_samples_max_elbo}.")
        self.n_latent, self.base, self.threshold, self.lambda_ = int(n_latent), base, threshold, lambda_
        self.prior_scale = DEFAULT_PRIOR_SCALE[base] if prior_scale is None else float(prior_scale)
        self.n_samples_max_elbo, self.generator = int(n_samples_max_elbo), generator
        self.kl_weight, self.kl_weight_threshold = float(kl_weight), float(kl_weight_threshold)
        self.gamma_shape = float(gamma_shape)
        self.scale_warmup = (float(scale_warmup[0]), float(scale_warmup[1]))
        self.n_hidden, self.n_layers, self.activation = int(n_hidden), int(n_layers), activation
        self.likelihood = likelihood

    def build(self, n_features: int, data: torch.Tensor | None) -> ThresholdedVSCModule:
        """The :class:`ThresholdedVSCModule` for ``n_features`` features."""
        module = ThresholdedVSCModule(
            n_features,
            self.n_latent,
            base=self.base,
            threshold=self.threshold,
            lambda0=self.lambda_,
            prior_scale=self.prior_scale,
            n_samples=self.n_samples_max_elbo,
            generator=self.generator,
            n_hidden=self.n_hidden,
            n_layers=self.n_layers,
            activation=self.activation,
            likelihood=self.likelihood,
            kl_weight=self.kl_weight,
            kl_weight_threshold=self.kl_weight_threshold,
            gamma_shape=self.gamma_shape,
            scale_warmup=(self.scale_warmup[0], self.scale_warmup[1] * self._fit_epochs),
        )
        init_observation_variance(module.obs, data)
        return module

    def transform(self, X: np.ndarray) -> np.ndarray:
        r"""Posterior means ``E_q[z] = mu * P_q(z != 0)``, shape ``(n_rows, K)``.

        Exact for a fixed threshold (both bases: the threshold is symmetric about ``mu``) and for the
        Laplace base with a Gamma threshold (``E[exp(-lambda / b)] = (beta / (beta + 1 / b))^alpha``); for
        the Gaussian base with a Gamma threshold ``P(z != 0)`` is evaluated at the mean threshold
        ``alpha / beta``. Not exactly sparse: see :meth:`sparse_codes`.
        """
        return super().transform(X)

    def sparse_codes(self, X: np.ndarray, n_samples: int | None = None, seed: int = 0) -> np.ndarray:
        """Exactly sparse codes: per row, the best of ``n_samples`` thresholded samples (max-ELBO rule).

        Parameters
        ----------
        X
            Rows to encode.
        n_samples
            ``J`` (default ``n_samples_max_elbo``).
        seed
            Seed of the sampling.
        """
        n = self.n_samples_max_elbo if n_samples is None else int(n_samples)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return self._map_rows(X, lambda x: self.module.max_elbo_codes(x, n)).cpu().numpy()

    def loadings(self) -> np.ndarray | None:
        """The dictionary ``A`` (``G x K``) of a linear generator; ``None`` for a neural one."""
        self._check_fitted()
        if self.generator != "linear":
            return None
        with torch.no_grad():
            return self.module.decoder.weight[: self.module.n_input].cpu().numpy().copy()
