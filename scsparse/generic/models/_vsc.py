"""Variational sparse coding (Tonolini, Jensen & Murray-Smith, 2020): spike-and-slab latent codes."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from scsparse.generic.nn import kl_bernoulli, relaxed_spike_slab_sample, spike_slab_kl, spike_slab_log_prob
from scsparse.nn import LIKELIHOODS, MLP

from ._base import TorchArrayModel, check_option
from ._common import SampledCodeModule, init_observation_variance, observation_log_prob, sample_chunks

__all__ = ["VSC", "VSCModule", "linear_ramp"]

_PROB_EPS = 1e-6


def linear_ramp(epoch: int, start: float, end: float) -> float:
    """0 before epoch ``start``, 1 from epoch ``end`` on, linear in between (a step at ``start`` if equal).

    Examples
    --------
    >>> [linear_ramp(e, 2, 4) for e in range(6)]
    [0.0, 0.0, 0.0, 0.5, 1.0, 1.0]
    """
    if epoch < start:
        return 0.0
    if epoch >= end:
        return 1.0
    return float(epoch - start) / float(end - start)


class VSCModule(SampledCodeModule):
    """Encoder, decoder, pseudo-inputs and selection network of a VSC model.

    Parameters
    ----------
    n_input
        Number of features ``G``.
    n_latent
        Latent dimensions ``K``.
    alpha
        Prior spike (non-zero) probability.
    n_pseudo_inputs
        Number of learned pseudo-inputs ``U`` of the prior; 0 for the fixed prior
        ``alpha N(0, 1) + (1 - alpha) delta_0``.
    n_hidden, n_layers, activation
        Encoder and decoder MLPs.
    likelihood
        Observation model.
    c_start, c_end
        Inverse temperature of the relaxed spike, warmed up linearly over training.
    warmup_epochs
        ``(start, end)``: the slab warm-up ``lambda`` is 0 before ``start``, 1 after ``end``.
    total_epochs
        Length of training (for the ``c`` schedule).
    selection_a, selection_b
        Sharpening of the selection vector ``u* = sigmoid(a (u - b))`` (supplement A.3: 60 and 0.5).
    pseudo_init
        Initial pseudo-inputs ``(U, G)`` (e.g. random training rows), or ``None`` for ``N(0, 1)`` draws.
    """

    def __init__(
        self,
        n_input: int,
        n_latent: int,
        alpha: float = 0.01,
        n_pseudo_inputs: int = 20,
        n_hidden: int = 128,
        n_layers: int = 1,
        activation: str = "relu",
        likelihood: str = "normal",
        c_start: float = 50.0,
        c_end: float = 200.0,
        warmup_epochs: tuple[float, float] = (0.0, 0.0),
        total_epochs: int = 1,
        selection_a: float = 60.0,
        selection_b: float = 0.5,
        pseudo_init: torch.Tensor | None = None,
    ) -> None:
        super().__init__()
        self.n_input, self.n_latent = int(n_input), int(n_latent)
        self.alpha = float(alpha)
        self.n_pseudo_inputs = int(n_pseudo_inputs)
        self.c_start, self.c_end = float(c_start), float(c_end)
        self.warmup_epochs = (float(warmup_epochs[0]), float(warmup_epochs[1]))
        self.total_epochs = max(int(total_epochs), 1)
        self.selection_a, self.selection_b = float(selection_a), float(selection_b)
        self.set_observation(likelihood, n_input)
        self.encoder = MLP(n_input, 3 * n_latent, n_hidden=n_hidden, n_layers=n_layers, activation=activation)
        self.decoder = MLP(
            n_latent, self.n_heads * n_input, n_hidden=n_hidden, n_layers=n_layers, activation=activation
        )
        if self.n_pseudo_inputs > 0:
            init = pseudo_init if pseudo_init is not None else torch.randn(self.n_pseudo_inputs, n_input)
            self.pseudo_inputs = nn.Parameter(init.clone().float())
            self.selector = nn.Linear(n_input, self.n_pseudo_inputs)

    # -- schedules ---------------------------------------------------------------------------------

    def c_at(self, epoch: int) -> float:
        """``c(epoch) = c_start + (c_end - c_start) * epoch / (total_epochs - 1)`` (``c_end`` when done)."""
        frac = min(max(epoch, 0) / max(self.total_epochs - 1, 1), 1.0)
        return self.c_start + (self.c_end - self.c_start) * frac

    def warmup_at(self, epoch: int) -> float:
        """Slab warm-up ``lambda(epoch)``: 0 (spikes only) up to ``warmup_epochs[0]``, then linear to 1."""
        return linear_ramp(epoch, *self.warmup_epochs)

    # -- networks ----------------------------------------------------------------------------------

    def posterior(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Slab mean, slab log-variance and spike probability ``gamma = sigmoid(v)`` of ``q(z | x)``."""
        out = self.encoder(x)
        k = self.n_latent
        mu, log_var, v = out[..., :k], out[..., k : 2 * k].clamp(-15.0, 15.0), out[..., 2 * k :]
        gamma = torch.sigmoid(v).clamp(_PROB_EPS, 1.0 - _PROB_EPS)
        return mu, log_var, gamma

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(gamma * mu, mu, log_var, gamma)``: the posterior mean ``E_q[z] = gamma mu`` comes first."""
        mu, log_var, gamma = self.posterior(x)
        return gamma * mu, mu, log_var, gamma

    def prior_components(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Slab means, log-variances and spike probabilities of the prior components, each ``(U, K)``.

        The encodings ``q(z | x_u)`` of the pseudo-inputs, or the single fixed component
        ``(0, 0, alpha)`` when there are none.
        """
        if self.n_pseudo_inputs == 0:
            zeros = torch.zeros(1, self.n_latent, device=self.obs_device())
            return zeros, zeros, torch.full_like(zeros, self.alpha)
        return self.posterior(self.pseudo_inputs)

    def obs_device(self) -> torch.device:
        """Device of the parameters."""
        return next(self.parameters()).device

    def selection(self, x: torch.Tensor) -> torch.Tensor:
        """Mixture weights over the pseudo-inputs, ``(B, U)``, summing to 1 per row.

        Supplement A.3: ``u = relu(C x)`` normalised to unit sum, sharpened by ``u* = sigmoid(a (u - b))``
        (``a = 60``, ``b = 0.5``). The KL is the ``u*``-weighted sum of the KLs to the pseudo-input
        encodings; the weights are normalised here by ``sum_u u*_u`` so that they always form a convex
        combination (otherwise uniform ``u`` would make every ``u*`` vanish and switch the KL off).
        """
        u = F.relu(self.selector(x))
        u = u / (u.sum(-1, keepdim=True) + 1e-8)
        return torch.softmax(F.logsigmoid(self.selection_a * (u - self.selection_b)), dim=-1)

    # -- objective ---------------------------------------------------------------------------------

    def kl_terms(
        self, x: torch.Tensor, mu: torch.Tensor, log_var: torch.Tensor, gamma: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-row ``(KL, sparsity penalty)`` of the training objective.

        Fixed prior: ``KL(q || SS(0, 1, alpha))`` and no penalty. Pseudo-input prior:
        ``sum_u w_u KL(q(z | x) || q(z | x_u))`` with the selection weights ``w``, and the sparsity
        penalty ``K * KL(Bern(gamma_bar) || Bern(alpha))`` where ``gamma_bar = sum_u w_u mean_k gamma_uk`` is
        the average spike probability of the selected pseudo-input encoding.
        """
        if self.n_pseudo_inputs == 0:
            kl = spike_slab_kl(mu, log_var, gamma, 0.0, 0.0, self.alpha).sum(-1)
            return kl, torch.zeros_like(kl)
        p_mu, p_log_var, p_gamma = self.prior_components()  # (U, K)
        kl_u = spike_slab_kl(
            mu.unsqueeze(-2), log_var.unsqueeze(-2), gamma.unsqueeze(-2), p_mu, p_log_var, p_gamma
        ).sum(-1)  # (B, U)
        weights = self.selection(x)
        kl = (weights * kl_u).sum(-1)
        gamma_bar = (weights * p_gamma.mean(-1)).sum(-1)
        sparsity = self.n_latent * kl_bernoulli(gamma_bar, self.alpha)
        return kl, sparsity

    def loss(self, x: torch.Tensor, n_obs: int, epoch: int = 0) -> torch.Tensor:
        """Per-row training loss at ``epoch`` (see :class:`VSC` for the formula and the schedules)."""
        mu, log_var, gamma = self.posterior(x)
        lam = self.warmup_at(epoch)
        mu_w, log_var_w = lam * mu, lam * log_var  # slab pulled onto N(0, 1) during the warm-up
        z = relaxed_spike_slab_sample(mu_w, log_var_w, gamma, c=self.c_at(epoch))
        rec = -observation_log_prob(self.obs, x, self.decode(z))
        kl, sparsity = self.kl_terms(x, mu_w, log_var_w, gamma)
        return torch.mean(rec + kl + sparsity)

    # -- evaluation --------------------------------------------------------------------------------

    def log_prior(self, z: torch.Tensor) -> torch.Tensor:
        """``log p(z)`` summed over ``K`` for exact codes ``z`` ``(..., K)``.

        The prior of the generative model: the fixed spike-and-slab, or the uniform mixture of the
        pseudo-input encodings ``(1 / U) sum_u q(z | x_u)``.
        """
        p_mu, p_log_var, p_gamma = self.prior_components()  # (U, K)
        comp = spike_slab_log_prob(z.unsqueeze(-2), p_mu, p_log_var, p_gamma).sum(-1)  # (..., U)
        return torch.logsumexp(comp, dim=-1) - math.log(comp.shape[-1])

    @torch.no_grad()
    def log_weights(self, x: torch.Tensor, n_samples: int) -> torch.Tensor:
        """``log p(x | z_s) + log p(z_s) - log q(z_s | x)``, ``(S, B)``, exact samples ``z_s ~ q(z | x)``."""
        mu, log_var, gamma = self.posterior(x)
        z = relaxed_spike_slab_sample(mu, log_var, gamma, c=math.inf, sample_shape=(n_samples,))
        log_px = observation_log_prob(self.obs, x, self.decode(z))
        log_q = spike_slab_log_prob(z, mu, log_var, gamma).sum(-1)
        return log_px + self.log_prior(z) - log_q

    def floats_per_sample(self, n_rows: int) -> int:
        """Floats held per importance sample of ``n_rows`` rows (decoder outputs, codes, prior components)."""
        return n_rows * (self.n_input * (self.n_heads + 1) + self.n_latent * (self.n_pseudo_inputs + 2))

    @torch.no_grad()
    def elbo(self, x: torch.Tensor, n_samples: int = 100) -> torch.Tensor:
        """Monte Carlo ELBO per row, ``mean_s [log p(x | z_s) + log p(z_s) - log q(z_s | x)]``.

        :meth:`marginal_ll` (inherited) is the importance-weighted bound ``log mean_s [p(x | z_s) p(z_s) /
        q(z_s | x)]`` with the same exact samples.
        """
        total = torch.zeros(x.shape[0], device=x.device)
        for s in sample_chunks(n_samples, self.floats_per_sample(x.shape[0])):
            total = total + self.log_weights(x, s).sum(0)
        return total / n_samples


class VSC(TorchArrayModel):
    r"""Variational sparse coding (Tonolini, Jensen & Murray-Smith, UAI 2019).

    Latent codes are spike-and-slab. The encoder gives, per dimension ``k``, a slab mean ``mu_k``, a
    slab log-variance ``log sigma_k^2`` and a spike probability ``gamma_k = P(z_k != 0)``:

    .. math::

        q(z_k | x) = \gamma_k N(z_k; \mu_k, \sigma_k^2) + (1 - \gamma_k) \delta_0(z_k),
        \qquad x \sim p(f_\theta(z)).

    **Training objective** (per row, minimised):

    .. math::

        -\log p(x | \tilde z) + \sum_k \big[\gamma_k KL(N(\mu_k, \sigma_k^2) \| N(\mu_{pk}, \sigma_{pk}^2))
        + KL(Bern(\gamma_k) \| Bern(\gamma_{pk}))\big] \; [+ \text{sparsity term}],

    with the relaxed sample ``z~ = (mu + sigma eps) * sigmoid(c (u - 1 + gamma))``,
    ``eps ~ N(0, 1)``, ``u ~ U(0, 1)`` (supplement B) and the analytic spike-and-slab KL (supplement C).

    - **Prior.** ``n_pseudo_inputs = 0``: the fixed prior ``alpha N(0, 1) + (1 - alpha) delta_0``.
      ``n_pseudo_inputs = U > 0`` (the paper, ``U = 20``): learned pseudo-inputs ``x_u`` whose encodings
      ``q(z | x_u)`` are the prior components; a selection network
      ``u* = sigmoid(a (relu(C x) / sum relu(C x) - b))`` (``a = 60``, ``b = 0.5``, supplement A.3)
      weights the KLs to the components (weights normalised to sum to 1), and the prior sparsity
      ``alpha`` enters as ``K * KL(Bern(gamma_bar) || Bern(alpha))`` with ``gamma_bar`` the mean spike
      probability of the selected pseudo-input encoding (per row, not divided by ``n_obs``).
    - **c schedule.** ``c`` rises linearly from ``c_range[0] = 50`` at the first epoch to
      ``c_range[1] = 200`` at the last (supplement B.2: "we gradually increase c from 50 to 200").
    - **Spike warm-up.** The slab is interpolated onto ``N(0, 1)``, ``mu -> lambda mu``,
      ``log sigma^2 -> lambda log sigma^2`` (in the sample and in the KL), with ``lambda = 0`` for the
      first ``spike_warmup[0]`` fraction of the epochs, then linear to 1 at ``spike_warmup[1]`` (the
      paper: 15k of 70k iterations at 0, then 5k to reach 1, i.e. about ``(0.2, 0.3)``). While
      ``lambda = 0`` only the spikes carry information, so the model first learns which dimensions to
      switch on.

    The spike probabilities are ``gamma = sigmoid(v)`` of an encoder output ``v`` (clipped into
    ``[1e-6, 1 - 1e-6]``); the supplement's ``log gamma = -relu(-v)`` has no gradient once ``gamma = 1``.

    **Outputs.** :meth:`transform` returns the posterior mean ``E_q[z_k] = gamma_k mu_k`` (not exactly
    sparse; :meth:`spike_probabilities` gives ``gamma``).

    **Held-out likelihood — a bound.** ``nll_is_bound = True``: :meth:`heldout_nll` returns the
    negative ELBO, an *upper bound* on ``-log p(x)``, not an importance-sampled estimate. Importance
    sampling with the relaxed training sample is ill-defined (it has no density against the
    spike-and-slab measure), so the bound is evaluated with exact samples (``c = inf``:
    ``z = (mu + sigma eps) 1[u >= 1 - gamma]``) and densities taken against Lebesgue measure plus a point
    mass at 0. The generative model it bounds has the prior ``SS(0, 1, alpha)`` (no pseudo-inputs) or
    the uniform mixture of the pseudo-input encodings ``(1 / U) sum_u q(z | x_u)``; the training-only
    sparsity term is not part of it. ``heldout_nll(X, importance_weighted=True)`` returns the tighter
    importance-weighted bound (IWAE with the same exact samples), the same kind of estimate as the
    importance-sampled NLL of the other models.

    Parameters
    ----------
    n_latent
        Latent dimensions ``K``.
    alpha
        Prior sparsity: prior probability that a dimension is non-zero (paper: 0.01). ``alpha * K`` is
        the prior number of active dimensions per row; the paper's 0.01 went with ``K`` of about 200.
        With a handful of dimensions (``K = 6``) ``alpha = 0.01`` switched every dimension off in our
        tests (all ``gamma`` near 0, the -ELBO equal to that of independent Gaussians); choose
        ``alpha`` so that ``alpha * K`` is a plausible number of active factors.
    n_pseudo_inputs
        Pseudo-inputs of the prior (paper: 20); 0 for the fixed spike-and-slab prior.
    c_range
        ``(c_start, c_end)`` of the relaxation schedule.
    spike_warmup
        ``(start, end)`` of the slab warm-up as fractions of ``max_epochs``; ``(0, 0)`` disables it.
    selection_a, selection_b
        Sharpening of the selection vector.
    n_hidden, n_layers, activation
        Encoder and decoder MLPs.
    likelihood
        ``"normal"`` (learned per-feature variance), ``"multinomial"``, ``"bernoulli"`` or another of
        :data:`~scsparse.nn.LIKELIHOODS`.
    lr, max_epochs, batch_size, seed
        Training settings.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(200, 6))
    >>> model = VSC(n_latent=4, n_pseudo_inputs=5, n_hidden=16, max_epochs=2).fit(X)
    >>> model.transform(X).shape  # gamma * mu
    (200, 4)
    >>> model.nll_is_bound
    True
    """

    nll_is_bound: bool = True

    def __init__(
        self,
        n_latent: int = 10,
        *,
        alpha: float = 0.01,
        n_pseudo_inputs: int = 20,
        c_range: tuple[float, float] = (50.0, 200.0),
        spike_warmup: tuple[float, float] = (0.2, 0.3),
        selection_a: float = 60.0,
        selection_b: float = 0.5,
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
        check_option("likelihood", likelihood, LIKELIHOODS)
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}.")
        if not 0.0 <= spike_warmup[0] <= spike_warmup[1] <= 1.0:
            raise ValueError(f"spike_warmup must be fractions 0 <= start <= end <= 1, got {spike_warmup}.")
        self.n_latent, self.alpha, self.n_pseudo_inputs = int(n_latent), float(alpha), int(n_pseudo_inputs)
        self.c_range = (float(c_range[0]), float(c_range[1]))
        self.spike_warmup = (float(spike_warmup[0]), float(spike_warmup[1]))
        self.selection_a, self.selection_b = float(selection_a), float(selection_b)
        self.n_hidden, self.n_layers, self.activation = int(n_hidden), int(n_layers), activation
        self.likelihood = likelihood

    def build(self, n_features: int, data: torch.Tensor | None) -> VSCModule:
        """The :class:`VSCModule`; pseudo-inputs start at random training rows when available."""
        pseudo_init = None
        if data is not None and self.n_pseudo_inputs > 0:
            idx = torch.randint(0, data.shape[0], (self.n_pseudo_inputs,))
            pseudo_init = data[idx].float() + 0.01 * torch.randn(self.n_pseudo_inputs, n_features)
        epochs = self._fit_epochs
        module = VSCModule(
            n_features,
            self.n_latent,
            alpha=self.alpha,
            n_pseudo_inputs=self.n_pseudo_inputs,
            n_hidden=self.n_hidden,
            n_layers=self.n_layers,
            activation=self.activation,
            likelihood=self.likelihood,
            c_start=self.c_range[0],
            c_end=self.c_range[1],
            warmup_epochs=(self.spike_warmup[0] * epochs, self.spike_warmup[1] * epochs),
            total_epochs=epochs,
            selection_a=self.selection_a,
            selection_b=self.selection_b,
            pseudo_init=pseudo_init,
        )
        init_observation_variance(module.obs, data)
        return module

    def spike_probabilities(self, X: np.ndarray) -> np.ndarray:
        """Posterior spike (non-zero) probabilities ``gamma``, shape ``(n_rows, K)``."""
        return self._map_rows(X, lambda x: self.module.posterior(x)[2]).cpu().numpy()

    def heldout_nll(self, X: np.ndarray, n_samples: int = 100, importance_weighted: bool = False) -> float:
        """Mean **upper bound** on ``-log p(x)`` per row: the negative ELBO (see ``nll_is_bound``).

        Parameters
        ----------
        X
            Rows to evaluate.
        n_samples
            Exact spike-and-slab samples per row.
        importance_weighted
            Return ``-log mean_s w_s`` (importance-weighted bound, tighter, approaching ``-log p(x)`` as
            ``n_samples`` grows) instead of ``-mean_s log w_s`` (the ELBO).
        """
        if not importance_weighted:
            return -float(self._map_rows(X, lambda x: self.module.elbo(x, n_samples=n_samples), 256).mean())
        return super().heldout_nll(X, n_samples=n_samples)
