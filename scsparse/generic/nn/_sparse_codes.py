"""Sparse latent codes: spike-and-slab posteriors (VSC) and thresholded samples (thresholded VSC).

Two ways to give a VAE exactly sparse latent codes ``z`` (``K`` dimensions per row).

**Variational sparse coding** (Tonolini et al., 2020). Posterior and prior are spike-and-slab,
``q(z_k) = gamma_k N(z_k; mu_k, sigma_k^2) + (1 - gamma_k) delta_0(z_k)``. A sample is

    z = (mu + sigma * eps) * sigmoid(c * (u - 1 + gamma)),   eps ~ N(0, 1),  u ~ U(0, 1),

whose second factor is a relaxed Bernoulli(gamma) (a step function ``1[u >= 1 - gamma]`` for
``c -> inf``). Fallah & Rozell's spike-and-slab baseline draws the exact step instead and passes the gradient
of a Gumbel-softmax relaxation straight through it (:func:`straight_through_spike_slab_sample`). The KL
divergence between two spike-and-slab distributions has a closed form (Tonolini
et al., supplement C): the slab KL weighted by the posterior spike probability plus the KL between the
Bernoulli variables,

    KL = sum_k gamma_k KL(N(mu_k, sigma_k^2) || N(mu_pk, sigma_pk^2))
         + gamma_k log(gamma_k / gamma_pk) + (1 - gamma_k) log((1 - gamma_k) / (1 - gamma_pk)).

**Thresholded samples** (Fallah & Rozell, 2022). A base sample ``s`` (Gaussian or Laplace, location
``mu``, scale ``b``) goes through the shifted soft-threshold

    T(s) = sign(s - mu) max(|s - mu| - lambda, 0) + 1[|s - mu| > lambda] mu,

which sets ``z = 0`` when ``|s - mu| <= lambda`` and moves the rest of the mass towards ``mu`` by
``lambda``. For a Laplace base the result is exactly spike-and-slab with slab ``Laplace(mu, b)`` and
``P(z != 0) = exp(-lambda / b)``; for a Gaussian base ``P(z = 0) = 2 Phi(lambda / sigma) - 1``. Gradients
use the straight-through estimator ``z = s + T(sg[s]) - sg[s]`` (``sg``: stop-gradient), so
``dz / ds = 1``; the KL is taken on the base distribution only. The threshold is a constant or, per
sample and dimension, ``lambda ~ Gamma(alpha, beta)`` with prior ``Gamma(3, 3 / lambda0)``.

All functions work element-wise (broadcasting); callers sum over the latent axis.
"""

from __future__ import annotations

import math

import torch
from torch.distributions import Gamma

from scsparse.nn import kl_normal

__all__ = [
    "BASES",
    "base_kl",
    "gamma_threshold_prior",
    "kl_bernoulli",
    "kl_gamma",
    "kl_laplace",
    "relaxed_spike_slab_sample",
    "straight_through_spike_slab_sample",
    "sample_base",
    "sample_gamma_threshold",
    "shifted_soft_threshold",
    "spike_slab_kl",
    "spike_slab_log_prob",
    "straight_through_threshold",
    "threshold_for_nonzero_fraction",
    "threshold_zero_probability",
    "thresholded_laplace_gamma_log_prob",
    "thresholded_log_prob",
]

#: Base distributions of the thresholded samples.
BASES: tuple[str, ...] = ("gaussian", "laplace")

_LOG_2PI = math.log(2.0 * math.pi)
_PROB_EPS = 1e-6


def _as_tensor(value: float | torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(value, dtype=like.dtype, device=like.device)


def _check_base(base: str) -> None:
    if base not in BASES:
        raise ValueError(f"base must be one of {BASES}, got {base!r}.")


# --------------------------------------------------------------------------------------------------
# Spike-and-slab (VSC)
# --------------------------------------------------------------------------------------------------


def kl_bernoulli(gamma_q: torch.Tensor, gamma_p: float | torch.Tensor) -> torch.Tensor:
    """Element-wise ``KL(Bern(gamma_q) || Bern(gamma_p))``.

    ``gamma_q log(gamma_q / gamma_p) + (1 - gamma_q) log((1 - gamma_q) / (1 - gamma_p))``, both
    probabilities clipped into ``[1e-6, 1 - 1e-6]`` (exactly 0 when they are equal).

    Examples
    --------
    >>> import torch
    >>> kl_bernoulli(torch.tensor([0.5, 1.0]), 0.5)  # equal; (almost) certain vs fair coin: ~log 2
    tensor([0.0000, 0.6931])
    """
    gamma_p = _as_tensor(gamma_p, gamma_q).clamp(_PROB_EPS, 1.0 - _PROB_EPS)
    gamma_q = gamma_q.clamp(_PROB_EPS, 1.0 - _PROB_EPS)
    return gamma_q * (torch.log(gamma_q) - torch.log(gamma_p)) + (1.0 - gamma_q) * (
        torch.log1p(-gamma_q) - torch.log1p(-gamma_p)
    )


def spike_slab_kl(
    mu_q: torch.Tensor,
    log_var_q: torch.Tensor,
    gamma_q: torch.Tensor,
    mu_p: float | torch.Tensor = 0.0,
    log_var_p: float | torch.Tensor = 0.0,
    gamma_p: float | torch.Tensor = 0.5,
) -> torch.Tensor:
    """Element-wise KL between two spike-and-slab distributions with Gaussian slabs (Tonolini et al.).

    For ``q = gamma_q N(mu_q, sigma_q^2) + (1 - gamma_q) delta_0`` and ``p`` of the same form,

    ``KL(q || p) = gamma_q KL(N(mu_q, sigma_q^2) || N(mu_p, sigma_p^2)) + KL(Bern(gamma_q) || Bern(gamma_p))``.

    The densities are taken with respect to Lebesgue measure plus a point mass at 0, on which both
    distributions are absolutely continuous, so this is the exact KL (not a bound).

    Parameters
    ----------
    mu_q, log_var_q, gamma_q
        Slab mean, slab log-variance and spike (non-zero) probability of ``q``.
    mu_p, log_var_p, gamma_p
        The same for ``p`` (the VSC prior: ``0``, ``0``, ``alpha``).

    Returns
    -------
    torch.Tensor
        Element-wise KL (broadcast shape); sum over the latent axis for the KL of a code.

    Examples
    --------
    >>> import torch
    >>> z = torch.zeros(3)
    >>> spike_slab_kl(z, z, torch.full((3,), 0.01), gamma_p=0.01)  # posterior = prior
    tensor([0., 0., 0.])
    >>> bool(spike_slab_kl(z + 1.0, z, torch.full((3,), 0.5), gamma_p=0.01).min() > 0)
    True
    """
    return gamma_q * kl_normal(mu_q, log_var_q, mu_p, log_var_p) + kl_bernoulli(gamma_q, gamma_p)


def relaxed_spike_slab_sample(
    mu: torch.Tensor,
    log_var: torch.Tensor,
    gamma: torch.Tensor,
    c: float = 200.0,
    sample_shape: torch.Size | tuple[int, ...] = (),
) -> torch.Tensor:
    """Reparameterised spike-and-slab sample ``(mu + sigma eps) * sigmoid(c (u - 1 + gamma))``.

    ``eps ~ N(0, 1)`` and ``u ~ U(0, 1)``. The factor ``sigmoid(c (u - 1 + gamma))`` relaxes the
    Bernoulli(gamma) variable ``1[u >= 1 - gamma]``; ``c = inf`` gives that exact step (exact zeros, no
    gradient to ``gamma``), which is what evaluation uses. VSC warms ``c`` up from 50 to 200 in training.

    Parameters
    ----------
    mu, log_var, gamma
        Slab mean and log-variance, spike (non-zero) probability; broadcastable.
    c
        Inverse temperature of the relaxed step (``math.inf`` for the exact one).
    sample_shape
        Leading sample dimensions.

    Returns
    -------
    torch.Tensor
        Shape ``sample_shape + broadcast shape``.

    Examples
    --------
    >>> import torch, math
    >>> _ = torch.manual_seed(0)
    >>> z = relaxed_spike_slab_sample(torch.zeros(1000), torch.zeros(1000), torch.full((1000,), 0.1), math.inf)
    >>> abs(float((z != 0).float().mean()) - 0.1) < 0.03
    True
    """
    slab, u = _slab_and_uniform(mu, log_var, gamma, sample_shape)
    if math.isinf(c):
        spike = (u >= 1.0 - gamma).to(mu.dtype)
    else:
        spike = torch.sigmoid(c * (u - 1.0 + gamma))
    return slab * spike


def straight_through_spike_slab_sample(
    mu: torch.Tensor,
    log_var: torch.Tensor,
    gamma: torch.Tensor,
    tau: float = 1.0,
    sample_shape: torch.Size | tuple[int, ...] = (),
) -> torch.Tensor:
    """Spike-and-slab sample whose selector is a straight-through Gumbel-softmax (binary concrete) variable.

    The selector is ``y = 1[logit(gamma) + L > 0]`` with logistic noise ``L = log u - log(1 - u)``, an exact
    Bernoulli(gamma) draw, so the forward pass has exact zeros; its gradient is that of the relaxed
    ``sigmoid((logit(gamma) + L) / tau)`` (Jang et al., 2017). This is how Fallah & Rozell (2022, sec. 4)
    train the spike-and-slab baseline of their Table 1, with ``tau`` from 1 times 0.9995 per step down to
    0.5 (their app. D). ``z = (mu + sigma eps) y``.

    Parameters
    ----------
    mu, log_var, gamma, sample_shape
        As in :func:`relaxed_spike_slab_sample`.
    tau
        Temperature of the relaxation the gradient follows.

    Returns
    -------
    torch.Tensor
        A sample of the shape :func:`relaxed_spike_slab_sample` returns.

    Examples
    --------
    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> gamma = torch.full((2000,), 0.2, requires_grad=True)
    >>> z = straight_through_spike_slab_sample(torch.ones(2000), torch.full((2000,), -20.0), gamma, tau=0.5)
    >>> sorted(torch.unique(z.detach().round()).tolist()), abs(float((z != 0).float().mean()) - 0.2) < 0.03
    ([0.0, 1.0], True)
    >>> z.sum().backward()
    >>> bool((gamma.grad > 0).all())
    True
    """
    slab, u = _slab_and_uniform(mu, log_var, gamma, sample_shape)
    u = u.clamp(1e-7, 1.0 - 1e-7)
    logits = torch.log(gamma) - torch.log1p(-gamma) + torch.log(u) - torch.log1p(-u)
    soft = torch.sigmoid(logits / tau)
    hard = (logits > 0).to(mu.dtype)
    return slab * (hard + (soft - soft.detach()))  # forward: exactly hard


def _slab_and_uniform(
    mu: torch.Tensor, log_var: torch.Tensor, gamma: torch.Tensor, sample_shape: torch.Size | tuple[int, ...]
) -> tuple[torch.Tensor, torch.Tensor]:
    """A reparameterised slab draw ``mu + sigma eps`` and the uniform noise ``u`` of the selector."""
    shape = torch.Size(sample_shape) + torch.broadcast_shapes(mu.shape, log_var.shape, gamma.shape)
    eps = torch.randn(shape, dtype=mu.dtype, device=mu.device)
    u = torch.rand(shape, dtype=mu.dtype, device=mu.device)
    return mu + torch.exp(0.5 * log_var) * eps, u


def spike_slab_log_prob(z: torch.Tensor, mu: torch.Tensor, log_var: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    """Element-wise log-density of a spike-and-slab distribution at exact samples ``z``.

    With respect to Lebesgue measure plus a unit point mass at 0: ``log(1 - gamma)`` where ``z == 0``,
    ``log gamma + log N(z; mu, sigma^2)`` elsewhere. Ratios of such densities are proper importance
    weights, which makes importance sampling with exact (``c = inf``) samples well defined.

    Examples
    --------
    >>> import torch
    >>> lp = spike_slab_log_prob(torch.tensor([0.0, 1.0]), torch.zeros(2), torch.zeros(2), torch.full((2,), 0.5))
    >>> [round(v, 4) for v in lp.tolist()]  # log 0.5; log 0.5 + log N(1; 0, 1)
    [-0.6931, -2.1121]
    """
    gamma = gamma.clamp(_PROB_EPS, 1.0 - _PROB_EPS)
    log_slab = -0.5 * (_LOG_2PI + log_var + (z - mu) ** 2 * torch.exp(-log_var))
    return torch.where(z == 0, torch.log1p(-gamma), torch.log(gamma) + log_slab)


# --------------------------------------------------------------------------------------------------
# Thresholded samples (thresholded VSC)
# --------------------------------------------------------------------------------------------------


def shifted_soft_threshold(s: torch.Tensor, loc: torch.Tensor | float, threshold: torch.Tensor | float) -> torch.Tensor:
    """Shifted soft-threshold ``T(s) = sign(s - mu) max(|s - mu| - lambda, 0) + 1[|s - mu| > lambda] mu``.

    Values within ``lambda`` of ``mu`` become exact zeros; the others move towards ``mu`` by ``lambda``
    (``T(s) = s - sign(s - mu) lambda``). With ``mu = 0`` it is the ordinary soft-threshold.

    Examples
    --------
    >>> import torch
    >>> shifted_soft_threshold(torch.tensor([0.9, 1.1, 1.5, -0.5]), 1.0, 0.25)
    tensor([ 0.0000,  0.0000,  1.2500, -0.2500])
    """
    loc = torch.as_tensor(loc, dtype=s.dtype, device=s.device)
    d = s - loc
    active = torch.abs(d) > threshold
    return torch.sign(d) * torch.clamp(torch.abs(d) - threshold, min=0.0) + active.to(s.dtype) * loc


def straight_through_threshold(
    s: torch.Tensor, loc: torch.Tensor | float, threshold: torch.Tensor | float
) -> torch.Tensor:
    """Thresholded sample with the straight-through gradient: ``z = s + T(sg[s]) - sg[s]``.

    The forward value is ``T(s)`` (exactly sparse); the backward pass treats the threshold as the
    identity in ``s`` (``dz / ds = 1``), so the generator's gradient reaches the base distribution even
    for the coordinates set to zero. A learned threshold still receives the gradient of ``T`` in
    ``lambda`` (``-sign(s - mu)`` where ``z != 0``).

    Examples
    --------
    >>> import torch
    >>> s = torch.tensor([0.1, 2.0], requires_grad=True)
    >>> z = straight_through_threshold(s, 0.0, 0.5)
    >>> z.detach()
    tensor([0.0000, 1.5000])
    >>> z.sum().backward(); s.grad
    tensor([1., 1.])
    """
    s_stop = s.detach()
    return s + (shifted_soft_threshold(s_stop, loc, threshold) - s_stop)


def sample_base(
    base: str,
    loc: torch.Tensor,
    scale: torch.Tensor,
    sample_shape: torch.Size | tuple[int, ...] = (),
) -> torch.Tensor:
    """Reparameterised sample of the base distribution of a thresholded code.

    - ``"gaussian"``: ``s = mu + sigma eps``, ``eps ~ N(0, 1)``;
    - ``"laplace"``: ``s = mu - b sign(u) log(1 - 2|u|)``, ``u ~ U(-1/2, 1/2)``, the log argument clipped
      at ``1e-6`` (Fallah & Rozell, app. B).

    Parameters
    ----------
    base
        ``"gaussian"`` or ``"laplace"``.
    loc, scale
        Location ``mu`` and scale (standard deviation ``sigma`` or Laplace scale ``b``).
    sample_shape
        Leading sample dimensions.

    Examples
    --------
    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> s = sample_base("laplace", torch.zeros(1), torch.ones(1), (20000,))
    >>> abs(float(s.abs().mean()) - 1.0) < 0.05  # E|s| = b
    True
    """
    _check_base(base)
    shape = torch.Size(sample_shape) + torch.broadcast_shapes(loc.shape, scale.shape)
    if base == "gaussian":
        return loc + scale * torch.randn(shape, dtype=loc.dtype, device=loc.device)
    u = torch.rand(shape, dtype=loc.dtype, device=loc.device) - 0.5
    return loc - scale * torch.sign(u) * torch.log(torch.clamp(1.0 - 2.0 * torch.abs(u), min=1e-6))


def kl_laplace(
    loc_q: torch.Tensor,
    scale_q: torch.Tensor,
    loc_p: float | torch.Tensor = 0.0,
    scale_p: float | torch.Tensor = 1.0,
) -> torch.Tensor:
    """Element-wise ``KL(Laplace(mu, b) || Laplace(mu0, b0))`` (Meyer, 2021; Fallah & Rozell, app. B).

    ``|mu - mu0| / b0 + b exp(-|mu - mu0| / b) / b0 + log(b0 / b) - 1``.

    Examples
    --------
    >>> import torch
    >>> kl_laplace(torch.tensor([0.0, 1.0]), torch.ones(2))
    tensor([0.0000, 0.3679])
    """
    loc_p = _as_tensor(loc_p, loc_q)
    scale_p = _as_tensor(scale_p, loc_q)
    dist = torch.abs(loc_q - loc_p)
    return dist / scale_p + scale_q * torch.exp(-dist / scale_q) / scale_p + torch.log(scale_p / scale_q) - 1.0


def base_kl(
    base: str,
    loc_q: torch.Tensor,
    scale_q: torch.Tensor,
    scale_p: float | torch.Tensor,
    loc_p: float | torch.Tensor = 0.0,
) -> torch.Tensor:
    """Element-wise KL of the base distributions: Gaussian (``scale`` = standard deviation) or Laplace.

    Examples
    --------
    >>> import torch
    >>> base_kl("gaussian", torch.zeros(1), torch.ones(1), 1.0), base_kl("laplace", torch.zeros(1), torch.ones(1), 1.0)
    (tensor([0.]), tensor([0.]))
    """
    _check_base(base)
    if base == "laplace":
        return kl_laplace(loc_q, scale_q, loc_p, scale_p)
    scale_p = _as_tensor(scale_p, loc_q)
    return kl_normal(loc_q, 2.0 * torch.log(scale_q), loc_p, 2.0 * torch.log(scale_p))


def threshold_zero_probability(base: str, scale: float | torch.Tensor, threshold: float | torch.Tensor) -> torch.Tensor:
    """``P(T(s) = 0) = P(|s - mu| <= lambda)``, whatever the location ``mu``.

    ``1 - exp(-lambda / b)`` for a Laplace base, ``2 Phi(lambda / sigma) - 1 = erf(lambda / (sigma sqrt 2))``
    for a Gaussian base.

    Examples
    --------
    >>> round(float(threshold_zero_probability("laplace", 0.1, 0.25)), 4)  # the paper's Laplace default
    0.9179
    >>> round(float(threshold_zero_probability("gaussian", 0.1**0.5, 0.52)), 4)  # and its Gaussian default
    0.8999
    """
    _check_base(base)
    scale = torch.as_tensor(scale, dtype=torch.get_default_dtype())
    threshold = torch.as_tensor(threshold, dtype=scale.dtype)
    if base == "laplace":
        return -torch.expm1(-threshold / scale)
    return torch.special.erf(threshold / (scale * math.sqrt(2.0)))


def threshold_for_nonzero_fraction(base: str, scale: float, fraction_nonzero: float) -> float:
    """The threshold ``lambda`` that leaves a fraction ``fraction_nonzero`` of a base sample non-zero.

    Inverse of :func:`threshold_zero_probability`: ``-b log(f)`` (Laplace), ``sigma Phi^-1(1 - f / 2)``
    (Gaussian). With the prior scales ``b0 = 0.1`` and ``sigma0^2 = 0.1`` and ``f = 0.1`` this gives the
    paper's thresholds ~0.23 and ~0.52.

    Examples
    --------
    >>> round(threshold_for_nonzero_fraction("gaussian", 0.1**0.5, 0.1), 2)
    0.52
    """
    _check_base(base)
    if not 0.0 < fraction_nonzero <= 1.0:
        raise ValueError(f"fraction_nonzero must be in (0, 1], got {fraction_nonzero}.")
    if base == "laplace":
        return float(-scale * math.log(fraction_nonzero))
    return float(
        scale * math.sqrt(2.0) * torch.special.erfinv(torch.tensor(1.0 - fraction_nonzero, dtype=torch.float64))
    )


def thresholded_log_prob(
    z: torch.Tensor,
    base: str,
    loc: torch.Tensor | float,
    scale: torch.Tensor | float,
    threshold: torch.Tensor | float,
) -> torch.Tensor:
    """Element-wise log-density of ``z = T(s)``, ``s`` from the base distribution, at exact samples ``z``.

    With respect to Lebesgue measure plus a unit point mass at 0:

    - ``z == 0``: ``log P(|s - mu| <= lambda)`` (see :func:`threshold_zero_probability`);
    - ``z != 0``: ``T`` is a bijection from ``{|s - mu| > lambda}`` onto the non-zero values with unit
      Jacobian and inverse ``s = z + sign(z - mu) lambda``, so the density is the base density at
      distance ``|z - mu| + lambda`` from ``mu``: ``-log(2b) - (|z - mu| + lambda) / b`` (Laplace: the
      slab ``exp(-lambda / b) Laplace(z; mu, b)`` of Fallah & Rozell's Proposition 3.1) or
      ``log N(|z - mu| + lambda; 0, sigma^2)`` (Gaussian).

    With ``lambda = 0`` it is the base log-density. Used for importance-sampled held-out likelihoods.

    Examples
    --------
    >>> import torch
    >>> lp = thresholded_log_prob(torch.tensor([0.0, 0.5]), "laplace", 0.0, 1.0, 0.25)
    >>> [round(v, 4) for v in lp.tolist()]  # log(1 - e^-0.25); -log 2 - 0.75
    [-1.5087, -1.4431]
    """
    _check_base(base)
    loc = torch.as_tensor(loc, dtype=z.dtype, device=z.device)
    scale = torch.as_tensor(scale, dtype=z.dtype, device=z.device)
    threshold = torch.as_tensor(threshold, dtype=z.dtype, device=z.device)
    dist = torch.abs(z - loc) + threshold
    if base == "laplace":
        log_zero = torch.log(-torch.expm1(-threshold / scale))
        log_cont = -math.log(2.0) - torch.log(scale) - dist / scale
    else:
        log_zero = torch.log(torch.special.erf(threshold / (scale * math.sqrt(2.0))))
        log_cont = -0.5 * _LOG_2PI - torch.log(scale) - 0.5 * (dist / scale) ** 2
    return torch.where(z == 0, log_zero, log_cont)


def thresholded_laplace_gamma_log_prob(
    z: torch.Tensor,
    loc: torch.Tensor | float,
    scale: torch.Tensor | float,
    alpha: torch.Tensor | float,
    beta: torch.Tensor | float,
) -> torch.Tensor:
    """Log-density of a thresholded Laplace code with a Gamma threshold, the threshold integrated out.

    ``z = T_lambda(s)``, ``s ~ Laplace(mu, b)``, ``lambda ~ Gamma(alpha, rate=beta)``.

    Given ``lambda`` the code is spike-and-slab with slab ``Laplace(mu, b)`` and non-zero probability
    ``exp(-lambda / b)`` (Proposition 3.1), so integrating the Gamma threshold only changes that
    probability, to the Gamma moment-generating function ``g = E[exp(-lambda / b)] = (beta / (beta + 1 / b))^alpha``:
    ``log(1 - g)`` where ``z == 0``, ``log g - log(2b) - |z - mu| / b`` elsewhere (same reference measure
    as :func:`thresholded_log_prob`). Importance sampling with it has no variance from the threshold.

    Examples
    --------
    >>> import torch
    >>> z = torch.tensor([0.0, 0.5])
    >>> big = 1e6  # Gamma(alpha, alpha / 0.25) with huge alpha: lambda = 0.25 almost surely
    >>> torch.allclose(thresholded_laplace_gamma_log_prob(z, 0.0, 1.0, big, big / 0.25),
    ...                thresholded_log_prob(z, "laplace", 0.0, 1.0, 0.25), atol=1e-4)
    True
    """
    loc = torch.as_tensor(loc, dtype=z.dtype, device=z.device)
    scale = torch.as_tensor(scale, dtype=z.dtype, device=z.device)
    alpha = torch.as_tensor(alpha, dtype=z.dtype, device=z.device)
    beta = torch.as_tensor(beta, dtype=z.dtype, device=z.device)
    log_g = -alpha * torch.log1p(1.0 / (scale * beta))  # log (beta / (beta + 1 / b))^alpha
    log_zero = torch.log(-torch.expm1(log_g))
    log_cont = log_g - math.log(2.0) - torch.log(scale) - torch.abs(z - loc) / scale
    return torch.where(z == 0, log_zero, log_cont)


def gamma_threshold_prior(lambda0: float, shape: float = 3.0) -> tuple[float, float]:
    """Shape and rate of the threshold prior ``Gamma(alpha0, alpha0 / lambda0)`` (mean ``lambda0``).

    Fallah & Rozell use ``alpha0 = 3``.

    Examples
    --------
    >>> gamma_threshold_prior(0.25)
    (3.0, 12.0)
    """
    if lambda0 <= 0:
        raise ValueError(f"A Gamma threshold prior needs lambda0 > 0, got {lambda0}.")
    return float(shape), float(shape) / float(lambda0)


def sample_gamma_threshold(
    alpha: torch.Tensor, beta: torch.Tensor, sample_shape: torch.Size | tuple[int, ...] = ()
) -> torch.Tensor:
    """Reparameterised (implicit-gradient) sample of thresholds ``lambda ~ Gamma(alpha, rate=beta)``.

    Examples
    --------
    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> lam = sample_gamma_threshold(torch.tensor([3.0]), torch.tensor([12.0]), (20000,))
    >>> abs(float(lam.mean()) - 0.25) < 0.01
    True
    """
    return Gamma(alpha, beta).rsample(torch.Size(sample_shape))


def kl_gamma(
    alpha_q: torch.Tensor,
    beta_q: torch.Tensor,
    alpha_p: float | torch.Tensor,
    beta_p: float | torch.Tensor,
) -> torch.Tensor:
    """Element-wise ``KL(Gamma(alpha_q, rate beta_q) || Gamma(alpha_p, rate beta_p))``.

    ``(a_q - a_p) digamma(a_q) - lgamma(a_q) + lgamma(a_p) + a_p (log b_q - log b_p) + a_q (b_p - b_q) / b_q``.

    Examples
    --------
    >>> import torch
    >>> kl_gamma(torch.tensor([3.0]), torch.tensor([12.0]), 3.0, 12.0)
    tensor([0.])
    """
    alpha_p = _as_tensor(alpha_p, alpha_q)
    beta_p = _as_tensor(beta_p, alpha_q)
    return (
        (alpha_q - alpha_p) * torch.digamma(alpha_q)
        - torch.lgamma(alpha_q)
        + torch.lgamma(alpha_p)
        + alpha_p * (torch.log(beta_q) - torch.log(beta_p))
        + alpha_q * (beta_p - beta_q) / beta_q
    )
