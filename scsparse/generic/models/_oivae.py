"""oi-VAE (Ainsworth et al., 2018): group-specific generators behind group-sparse latent-to-group maps."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from scsparse.generic.nn import group_column_norms, group_lasso_penalty, group_lasso_prox
from scsparse.nn import LIKELIHOODS, GaussianEncoder, gaussian_kl, make_activation

from ._base import TorchArrayModel, check_option
from ._common import SampledCodeModule, chunked_logmeanexp, init_observation_variance, observation_log_prob

__all__ = ["OIVAE", "OIVAEModule", "observation_log_prob"]

_LOG_2PI = math.log(2.0 * math.pi)


class OIVAEModule(SampledCodeModule):
    """The oi-VAE network: Gaussian encoder, per-group latent-to-group maps ``W^(g)`` and generators ``f_g``.

    Feature group ``g`` (features ``j`` with ``group_index[j] == g``) is generated from
    ``h_g = W^(g) z`` (``W^(g)``: ``p x K``) by its own network ``f_g`` (``n_layers`` hidden layers of
    ``n_hidden`` units, then one output unit per feature of the group; ``n_layers = 0`` makes ``f_g``
    affine in ``h_g``, a group-sparse linear factor model). All groups are evaluated together: the
    weights of the ``n_groups`` generators are stacked and applied with batched einsums, and the output
    layers are padded to the largest group.

    Parameters
    ----------
    group_index
        Group of every feature, integers ``0 .. n_groups - 1``, shape ``(G,)``.
    n_latent
        Number of latent factors ``K``.
    p
        Width of every latent-to-group map (rows of ``W^(g)``).
    n_hidden, n_layers, activation
        Architecture of each group generator and of the encoder.
    likelihood
        Observation model, see :class:`~scsparse.nn.ObservationModel`.
    w_init_scale
        Standard deviation of the initial entries of ``W``.
    lambda_
        Group-lasso weight; only used to report the full objective in :meth:`loss` (the penalty itself
        is applied by the proximal step, see :func:`~scsparse.generic.nn.group_lasso_prox`).
    theta_prior_weight
        Weight of ``0.5 ||theta||^2`` in the per-row loss; ``None``: ``1 / n_obs`` (the prior counted once
        for the data set).
    """

    def __init__(
        self,
        group_index: np.ndarray | torch.Tensor,
        n_latent: int,
        p: int = 5,
        n_hidden: int = 128,
        n_layers: int = 1,
        activation: str = "relu",
        likelihood: str = "normal",
        w_init_scale: float = 0.5,
        lambda_: float = 0.0,
        theta_prior_weight: float | None = None,
    ) -> None:
        super().__init__()
        self.lambda_ = float(lambda_)
        self.theta_prior_weight = None if theta_prior_weight is None else float(theta_prior_weight)
        group_index = torch.as_tensor(np.asarray(group_index), dtype=torch.long)
        n_features = int(group_index.numel())
        n_groups = int(group_index.max()) + 1
        sizes = torch.bincount(group_index, minlength=n_groups)
        if (sizes == 0).any():
            raise ValueError("group_index must use every group id 0 .. n_groups - 1.")
        max_size = int(sizes.max())
        # rank of each feature inside its group -> position in the padded (n_groups, max_size) output
        order = torch.argsort(group_index, stable=True)
        starts = torch.cumsum(sizes, 0) - sizes
        rank = torch.empty_like(group_index)
        rank[order] = torch.arange(n_features) - starts[group_index[order]]
        self.register_buffer("group_index", group_index)
        self.register_buffer("flat_position", group_index * max_size + rank)

        self.n_features, self.n_groups, self.n_latent, self.p = n_features, n_groups, int(n_latent), int(p)
        self.max_size = max_size
        self.set_observation(likelihood, n_features)
        self.encoder = GaussianEncoder(
            n_features,
            n_latent,
            n_hidden=n_hidden,
            n_layers=max(n_layers, 1),
            activation=activation,
            dropout_rate=0.0,
            norm=None,
        )
        self.W = nn.Parameter(w_init_scale * torch.randn(n_groups, p, n_latent))
        widths = [p] + [n_hidden] * n_layers
        self.gen_weights = nn.ParameterList()
        self.gen_biases = nn.ParameterList()
        for w_in, w_out in zip(widths[:-1], widths[1:], strict=True):
            bound = 1.0 / math.sqrt(w_in)
            self.gen_weights.append(nn.Parameter(torch.empty(n_groups, w_out, w_in).uniform_(-bound, bound)))
            self.gen_biases.append(nn.Parameter(torch.empty(n_groups, w_out).uniform_(-bound, bound)))
        self.activation = make_activation(activation)
        h_last = widths[-1]
        bound = 1.0 / math.sqrt(h_last)
        head = torch.empty(self.n_heads, n_groups, max_size, h_last).uniform_(-bound, bound)
        valid = torch.arange(max_size)[None, :] < sizes[:, None]  # (n_groups, max_size)
        head = head * valid[None, :, :, None]  # padded outputs start (and stay) at zero
        self.head_weight = nn.Parameter(head)
        self.head_bias = nn.Parameter(torch.zeros(self.n_heads, n_groups, max_size))

    def generator_parameters(self) -> list[nn.Parameter]:
        """The parameters ``theta`` of the group generators (they carry the ``N(0, I)`` prior; ``W`` does not)."""
        return [*self.gen_weights, *self.gen_biases, self.head_weight, self.head_bias]

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """Decoder outputs ``(n_heads, ..., G)`` for latent codes ``z`` of shape ``(..., K)``."""
        h = torch.einsum("...k,gpk->...gp", z, self.W)
        for weight, bias in zip(self.gen_weights, self.gen_biases, strict=True):
            h = self.activation(torch.einsum("...gi,goi->...go", h, weight) + bias)
        out = torch.einsum("...gh,cgmh->c...gm", h, self.head_weight)
        bias = self.head_bias.reshape(self.n_heads, *([1] * (z.dim() - 1)), self.n_groups, self.max_size)
        out = (out + bias).flatten(-2)
        return out[..., self.flat_position]

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior mean and standard deviation of the factors."""
        qz, _ = self.encoder(x)
        return qz.loc, qz.scale

    def weight_prior(self) -> torch.Tensor:
        """``-log N(theta; 0, I)`` up to a constant: ``0.5 * ||theta||^2`` over the generator parameters."""
        return 0.5 * sum((p**2).sum() for p in self.generator_parameters())

    def loss(self, x: torch.Tensor, n_obs: int, epoch: int = 0) -> torch.Tensor:
        """Per-row collapsed objective without the group lasso (that part is the proximal step).

        ``mean_i [-log p(x_i | z_i) + KL(q(z_i | x_i) || N(0, I))] + c * 0.5 ||theta||^2`` with
        ``c = theta_prior_weight`` (default ``1 / n_obs``), one sample
        ``z_i ~ q(z | x_i)``. The value returned adds ``lambda * sum_{g,k} ||W[g, :, k]||`` *detached*, so the
        training history shows the whole collapsed objective while the gradient leaves ``W``'s penalty to
        the proximal step.
        """
        qz, z = self.encoder(x)
        rec = -observation_log_prob(self.obs, x, self.decode(z))
        kl = gaussian_kl(qz)
        c = 1.0 / max(int(n_obs), 1) if self.theta_prior_weight is None else self.theta_prior_weight
        loss = torch.mean(rec + kl) + c * self.weight_prior()
        if self.lambda_ > 0:
            loss = loss + group_lasso_penalty(self.W.detach(), self.lambda_)
        return loss

    @torch.no_grad()
    def marginal_ll(self, x: torch.Tensor, n_samples: int = 100) -> torch.Tensor:
        """Importance-sampled ``log p(x)`` per row, proposal ``q(z | x)``, prior ``N(0, I)``.

        ``log p(x) ~= log mean_s [p(x | z_s) N(z_s; 0, I) / q(z_s | x)]``, ``z_s ~ q(z | x)``.
        """
        qz, _ = self.encoder(x)

        def log_weights(s: int) -> torch.Tensor:
            z = qz.sample((s,))
            log_px = observation_log_prob(self.obs, x, self.decode(z))
            log_pz = (-0.5 * (z**2 + _LOG_2PI)).sum(-1)
            return log_px + log_pz - qz.log_prob(z).sum(-1)

        width = max(self.n_groups * (self.gen_weights[0].shape[1] if len(self.gen_weights) else self.p), 1)
        return chunked_logmeanexp(log_weights, n_samples, x.shape[0] * (width + self.n_features))


class OIVAE(TorchArrayModel):
    r"""Output-interpretable VAE for grouped features (Ainsworth et al., ICML 2018).

    Generative model, features split into groups ``g = 1..n_groups``:

    .. math::

        z \sim N(0, I_K), \qquad x^{(g)} \sim p\big(f_g(W^{(g)} z)\big), \qquad W^{(g)} \in R^{p \times K},

    with one generator network ``f_g`` per group and ``p(.)`` the likelihood (``"normal"``: per-feature
    variances, the paper's ``N(f_g(.), D_g)``). The columns of the latent-to-group matrices get the
    group-sparse prior ``gamma_gk^2 ~ Gamma((p + 1) / 2, lambda^2 / 2)``, ``W^(g)[:, k] ~ N(0, gamma_gk^2 I)``;
    integrating ``gamma`` out gives the *collapsed* objective (paper, Sec. 5.1), maximised by proximal
    gradient steps:

    .. math::

        \mathcal{L} = E_q[\log p(x | z)] - KL(q(z | x) \| N(0, I)) + \log p(\theta)
                      - \lambda \sum_{g, k} \| W^{(g)}_{:, k} \|_2 .

    How each term enters the per-row training loss (``train_module`` minimises a mean over rows):

    - data term and KL: mean over the minibatch rows (one reparameterised sample per row);
    - ``log p(theta)``, a ``N(0, I)`` prior on all weights and biases of the group generators (it stops
      the generators from undoing the shrinkage of ``W`` by growing their first layer): a global term,
      so ``0.5 ||theta||^2 / n_obs`` by default; ``theta_prior_weight=1`` puts it on the footing of the group
      lasso instead, both at full weight beside one row's data term, as the paper's bound for one
      observation writes them (Sec. 5.1). Only then is the scale of ``W`` pinned: with the prior divided by
      ``N`` the generators can grow at almost no cost while ``W`` shrinks, and the group lasso then hardly
      separates the groups (on the bars data, ``theta_prior_weight=1`` gives one factor per row);
    - group lasso: *not* differentiated. After every optimiser step the trainer's ``after_step`` hook
      applies the proximal operator ``W^(g)[:, k] <- W^(g)[:, k] / ||W^(g)[:, k]|| max(0, ||W^(g)[:, k]|| - lr lambda)``
      with ``lr`` read from the optimiser. ``lambda`` is relative to the per-row objective, the paper's
      convention ("lambda = 1 with the reconstruction loss normalized by the dataset size"): on the
      summed-over-rows objective the penalty is ``N lambda``. The reported training loss includes
      ``lambda sum ||W^(g)[:, k]||`` (as a constant) so ``history_.loss`` tracks the full objective.

    The shared trainer updates ``W`` with Adam, not the plain gradient step of the paper's Algorithm 1,
    before the proximal step. With Adam the step per coordinate is about ``lr`` whatever the gradient's
    size, so with the threshold ``lr * lambda`` (``prox_scaling="lr"``, the default) ``lambda`` acts on
    how consistently the data pull a column away from zero rather than on the size of that pull; with
    ``p = 1`` and ``lambda >= 1`` hardly any column can outgrow the threshold. ``prox_scaling="adam"`` uses the
    proximal step in Adam's metric instead: the threshold of column ``(g, k)`` is
    ``lr * lambda / mean_p(sqrt(v_hat) + eps)`` (``v_hat``: Adam's bias-corrected second moment of that
    column), so a zero column stays at zero exactly when the gradient of the smooth part there is
    smaller than ``lambda`` in norm, the stationarity condition of the collapsed objective. ``w_lr``
    follows Algorithm 1 (and the paper's experiments, "proximal gradient descent on W with learning rate
    1e-4", Adam on the other parameters): ``W`` takes a plain gradient step of size ``w_lr`` followed by the
    proximal step with threshold ``w_lr * lambda``; Adam's update of ``W`` is discarded.

    Parameters
    ----------
    groups
        Group label of every feature (length ``G``; any hashable labels). Groups are ordered as
        ``np.unique(groups)``; see ``group_names_``.
    n_latent
        Number of latent factors ``K`` (an upper bound: unneeded factors are switched off).
    p
        Rows of every ``W^(g)`` (the sparse VAE paper's Table 6 uses ``p = 5``).
    lambda_
        Group-lasso weight ``lambda`` (paper default 1).
    n_hidden, n_layers, activation
        Each group generator has ``n_layers`` hidden layers of ``n_hidden`` units (``n_layers = 0``:
        affine generators); the encoder is an MLP of the same width and depth (at least one layer).
    likelihood
        ``"normal"`` (learned per-feature variance), ``"multinomial"``, ``"bernoulli"`` or another of
        :data:`~scsparse.nn.LIKELIHOODS`.
    w_init_scale
        Standard deviation of the initial entries of ``W``.
    prox_scaling
        ``"lr"``: proximal threshold ``lr * lambda`` (Algorithm 1 with the optimiser's learning rate);
        ``"adam"``: the same step in Adam's diagonal metric (see above). Ignored when ``w_lr`` is set.
    w_lr
        Step of plain proximal stochastic gradient descent on ``W`` (Algorithm 1); ``None``: ``W`` is
        updated by Adam with the other parameters, then thresholded as ``prox_scaling`` says.
    theta_prior_weight
        Weight of the ``N(0, I)`` prior term ``0.5 ||theta||^2`` on the generator parameters in the per-row
        loss; ``None``: ``1 / N`` (``N`` training rows); ``1.0``: the paper's per-observation bound.
    lr, max_epochs, batch_size, seed
        Training settings (Adam, see :func:`~scsparse.generic.models._base.train_module`).

    Attributes
    ----------
    group_names_
        The group labels, in the row order of :meth:`loadings`.
    nll_is_bound
        ``False``: :meth:`heldout_nll` is an importance-sampled estimate of ``-log p(x)``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(200, 2))
    >>> X = np.hstack([z[:, [0]] * np.ones((1, 3)), z[:, [1]] * np.ones((1, 3))]) + 0.1 * rng.normal(size=(200, 6))
    >>> model = OIVAE(groups=[0, 0, 0, 1, 1, 1], n_latent=3, n_hidden=16, max_epochs=2).fit(X)
    >>> model.loadings().shape  # (n_groups, K): ||W^(g)[:, k]||
    (2, 3)
    >>> model.transform(X).shape
    (200, 3)
    """

    nll_is_bound: bool = False

    def __init__(
        self,
        groups: Sequence[Any] | np.ndarray,
        n_latent: int = 10,
        *,
        p: int = 5,
        lambda_: float = 1.0,
        n_hidden: int = 128,
        n_layers: int = 1,
        activation: str = "relu",
        likelihood: str = "normal",
        w_init_scale: float = 0.5,
        prox_scaling: str = "lr",
        w_lr: float | None = None,
        theta_prior_weight: float | None = None,
        lr: float = 1e-3,
        max_epochs: int = 100,
        batch_size: int = 128,
        seed: int = 0,
    ) -> None:
        super().__init__(seed=seed, lr=lr, max_epochs=max_epochs, batch_size=batch_size)
        check_option("likelihood", likelihood, LIKELIHOODS)
        if lambda_ < 0:
            raise ValueError(f"lambda_ must be non-negative, got {lambda_}.")
        if p < 1 or n_latent < 1 or n_layers < 0:
            raise ValueError("p and n_latent must be >= 1 and n_layers >= 0.")
        if prox_scaling not in ("lr", "adam"):
            raise ValueError(f"prox_scaling must be 'lr' or 'adam', got {prox_scaling!r}.")
        if w_lr is not None and not w_lr > 0:
            raise ValueError(f"w_lr must be positive (or None to update W with Adam), got {w_lr}.")
        if theta_prior_weight is not None and theta_prior_weight < 0:
            raise ValueError(f"theta_prior_weight must be non-negative (or None for 1/N), got {theta_prior_weight}.")
        names, index = np.unique(np.asarray(groups), return_inverse=True)
        self.groups = np.asarray(groups)
        self.group_names_ = names
        self._group_index = index.reshape(-1)
        self.n_latent, self.p, self.lambda_ = int(n_latent), int(p), float(lambda_)
        self.n_hidden, self.n_layers, self.activation = int(n_hidden), int(n_layers), activation
        self.likelihood = likelihood
        self.w_init_scale = float(w_init_scale)
        self.prox_scaling = prox_scaling
        self.w_lr = None if w_lr is None else float(w_lr)
        self.theta_prior_weight = None if theta_prior_weight is None else float(theta_prior_weight)

    def build(self, n_features: int, data: torch.Tensor | None) -> OIVAEModule:
        """The :class:`OIVAEModule` for ``n_features`` features (must match ``len(groups)``)."""
        if n_features != self._group_index.size:
            raise ValueError(f"groups has {self._group_index.size} labels but the data have {n_features} features.")
        module = OIVAEModule(
            self._group_index,
            self.n_latent,
            p=self.p,
            n_hidden=self.n_hidden,
            n_layers=self.n_layers,
            activation=self.activation,
            likelihood=self.likelihood,
            w_init_scale=self.w_init_scale,
            lambda_=self.lambda_,
            theta_prior_weight=self.theta_prior_weight,
        )
        init_observation_variance(module.obs, data)
        if self.w_lr is not None:  # W after the last proximal step (Adam's own update of W is discarded)
            module.register_buffer("w_prox_state", module.W.detach().clone())
        return module

    def _hooks(self) -> dict[str, Callable | None]:
        lambda_ = self.lambda_

        scaling = self.prox_scaling
        w_lr = self.w_lr

        def proximal_sgd_step(module: OIVAEModule, optimizer: torch.optim.Optimizer) -> None:
            w = module.w_prox_state - w_lr * module.W.grad
            if lambda_ > 0:
                w = group_lasso_prox(w, w_lr * lambda_)
            module.W.copy_(w)
            module.w_prox_state.copy_(w)

        if w_lr is not None:
            return {"after_step": proximal_sgd_step, "after_epoch": None}

        def proximal_step(module: OIVAEModule, optimizer: torch.optim.Optimizer) -> None:
            group = next(g for g in optimizer.param_groups if any(p is module.W for p in g["params"]))
            threshold = group["lr"] * lambda_
            state = optimizer.state.get(module.W, {})
            if scaling == "adam" and "exp_avg_sq" in state:
                step = float(state["step"])
                v_hat = state["exp_avg_sq"] / (1.0 - group["betas"][1] ** step)
                denom = (v_hat.sqrt() + group["eps"]).mean(dim=-2, keepdim=True)
                threshold = threshold / denom
            module.W.copy_(group_lasso_prox(module.W, threshold))

        return {"after_step": proximal_step if lambda_ > 0 else None, "after_epoch": None}

    def loadings(self) -> np.ndarray:
        """Group x factor matrix of column norms ``||W^(g)[:, k]||_2`` (exact zeros where pruned)."""
        self._check_fitted()
        with torch.no_grad():
            return group_column_norms(self.module.W).cpu().numpy()

    def active_factors(self, tol: float = 0.0) -> np.ndarray:
        """Boolean mask of the factors that reach at least one group (some column norm ``> tol``)."""
        return (self.loadings() > tol).any(axis=0)
