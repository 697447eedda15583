"""The Spike-and-Slab Lasso prior on a mask matrix W (Rockova & George 2018; Moran et al. 2022).

Each entry ``w_jk`` is drawn from a mixture of two Laplace densities,
``psi_s(w) = lambda_s / 2 * exp(-lambda_s |w|)``: a spike (``lambda0``, large) and a slab (``lambda1``,
small). The indicator ``gamma_jk ~ Bernoulli(eta_k)`` picks the component, ``eta_k ~ Beta(a, b)``.

Inference is EM: the E-step computes the posterior inclusion probabilities
``p*_jk = P(gamma_jk = 1 | w_jk, eta_k)`` in closed form; the eta update is the closed-form maximiser;
the M-step takes gradient steps on the data term plus :meth:`SpikeSlabLasso.penalty`. The E-step and
the eta update run without gradients and their results live in module buffers, so they are saved with
the model and moved across devices with it.

A guided prior (gene sets, :mod:`scsparse.model`) gives some entries a prior inclusion of their own: ``members``
marks them and ``member_prior`` is their ``P(gamma_jk = 1)``, in place of ``eta_k``. In log-odds,
``logit theta_jk = logit eta_k + beta_jk`` with ``beta_jk = member_jk (logit member_prior - logit eta_k)``: membership
raises the prior odds by whatever brings a member to ``member_prior``. ``eta_k`` is then the prior inclusion of
the column's other entries, and its update the closed-form maximiser over them (the members' Bernoulli terms do not
depend on ``eta_k``). Without ``members`` the prior is the plain Spike-and-Slab Lasso, computed as before.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from scsparse._options import DEFAULT_LAMBDA0, DEFAULT_LAMBDA1

__all__ = ["SpikeSlabLasso", "slab_threshold", "ssl_inclusion_logits"]


def ssl_inclusion_logits(w: torch.Tensor, eta: torch.Tensor, lambda0: float, lambda1: float) -> torch.Tensor:
    """Log-odds of slab membership, ``logit p*``, with the Laplace normalisers kept.

    ``logit p*_jk = logit eta_k + log(lambda1 / lambda0) - (lambda1 - lambda0) |w_jk|``

    (The reference implementation drops the ``lambda / 2`` normalisers, which biases ``p*`` upward.)

    Parameters
    ----------
    w
        Mask matrix, shape ``(G, K)``.
    eta
        Slab probabilities per column, shape ``(K,)``, strictly inside (0, 1).
    lambda0, lambda1
        Spike and slab Laplace rates.

    Returns
    -------
    Tensor of shape ``(G, K)``.

    Examples
    --------
    >>> import torch
    >>> w, eta = torch.tensor([[0.0, 1.0]]), torch.tensor([0.5, 0.5])
    >>> ssl_inclusion_logits(w, eta, lambda0=10.0, lambda1=1.0)
    tensor([[-2.3026,  6.6974]])
    """
    return torch.logit(eta) + math.log(lambda1 / lambda0) - (lambda1 - lambda0) * w.abs()


def slab_threshold(lambda0: float, lambda1: float, eta: float = 0.5) -> float:
    """Smallest ``|w|`` with ``p* > 0.5``: where :func:`ssl_inclusion_logits` crosses zero.

    ``(log(lambda0 / lambda1) - logit eta) / (lambda0 - lambda1)``. A small slab rate next to a large spike
    rate puts this far out: with ``lambda0 = 5`` it is 0.40 at ``lambda1 = 1`` but 1.70 at ``lambda1 = 0.001``
    (at ``eta = 0.5``, and further out as ``eta`` falls), which a weight-normalised decoder's ``|w|`` may never
    reach. (The reference implementation drops the normalisers, so its threshold is ``-logit eta /
    (lambda0 - lambda1)``, zero at ``eta = 0.5``: hyper-parameters tuned with it do not carry over.)

    Parameters
    ----------
    lambda0, lambda1
        Spike and slab Laplace rates (``lambda0 > lambda1 > 0``).
    eta
        Slab probability of the column, in (0, 1).

    Examples
    --------
    >>> round(slab_threshold(5.0, 1.0), 2), round(slab_threshold(5.0, 0.001), 2)
    (0.4, 1.7)
    """
    return (math.log(lambda0 / lambda1) - math.log(eta / (1.0 - eta))) / (lambda0 - lambda1)


class SpikeSlabLasso(nn.Module):
    """Spike-and-Slab Lasso prior with EM state for a ``(n_rows, n_cols)`` mask.

    Parameters
    ----------
    n_rows
        Number of rows of the mask (genes/features ``G``).
    n_cols
        Number of columns (latent factors ``K``).
    lambda0
        Spike rate (large: entries in the spike are shrunk hard towards zero).
    lambda1
        Slab rate (small: entries in the slab are barely shrunk).
    a, b
        Beta hyper-prior on each column's slab probability ``eta_k``. ``b=None`` means ``b = n_rows``,
        the paper's default, which switches unused columns off.
    eta_init
        Initial ``eta_k``.
    eps
        ``eta`` is clipped into ``(eps, 1 - eps)``.
    members
        Optional boolean ``(n_rows, n_cols)``: entries whose prior inclusion is ``member_prior`` rather than their
        column's ``eta_k`` (saved with the module as the buffer ``members``). ``None``: none.
    member_prior
        The prior inclusion ``P(gamma_jk = 1)`` of the ``members``, in (0, 1). At 0.5 a member enters the slab at
        ``|w| = slab_threshold(lambda0, lambda1, 0.5)`` and a member at ``w = 0`` has ``p* = lambda1 / (lambda0 +
        lambda1)``: below one half whenever ``lambda0 > lambda1``, so a member the data do not support leaves.

    Examples
    --------
    >>> import torch
    >>> prior = SpikeSlabLasso(n_rows=4, n_cols=2)
    >>> w = torch.tensor([[2.0, 0.0], [1.5, 0.0], [0.0, 0.0], [0.0, 3.0]])
    >>> prior.em_update(w)
    >>> (prior.p_star > 0.5).int().tolist()
    [[1, 0], [1, 0], [0, 0], [0, 1]]
    """

    p_star: torch.Tensor
    eta: torch.Tensor
    members: torch.Tensor | None

    def __init__(
        self,
        n_rows: int,
        n_cols: int,
        lambda0: float = DEFAULT_LAMBDA0,
        lambda1: float = DEFAULT_LAMBDA1,
        a: float = 1.0,
        b: float | None = None,
        eta_init: float = 0.5,
        eps: float = 1e-6,
        members: torch.Tensor | None = None,
        member_prior: float = 0.5,
    ) -> None:
        super().__init__()
        if not lambda0 > lambda1 > 0:
            raise ValueError(
                f"The spike must be narrower than the slab: need lambda0 > lambda1 > 0, got "
                f"lambda0={lambda0}, lambda1={lambda1}."
            )
        if a <= 0 or (b is not None and b <= 0):
            raise ValueError(f"Beta hyper-parameters must be positive, got a={a}, b={b}.")
        self.n_rows, self.n_cols = int(n_rows), int(n_cols)
        self.lambda0, self.lambda1 = float(lambda0), float(lambda1)
        self.a = float(a)
        self.b = float(n_rows if b is None else b)
        self.eps = float(eps)
        self.register_buffer("eta", torch.full((n_cols,), float(eta_init)))
        self.register_buffer("p_star", torch.full((n_rows, n_cols), float(eta_init)))
        if not 0.0 < member_prior < 1.0:
            raise ValueError(f"member_prior must lie strictly inside (0, 1), got {member_prior}.")
        self.member_prior = float(member_prior)
        if members is None:
            self.members = None
        else:
            members = torch.as_tensor(members, dtype=torch.bool)
            if tuple(members.shape) != (self.n_rows, self.n_cols):
                raise ValueError(
                    f"members must have the mask's shape ({self.n_rows}, {self.n_cols}), got {tuple(members.shape)}."
                )
            self.register_buffer("members", members.clone())

    def prior_logits(self) -> torch.Tensor:
        """``logit theta``: each entry's prior log-odds of slab membership (``(K,)`` without ``members``, else
        ``(G, K)`` with ``logit member_prior`` at the members).
        """
        logit_eta = torch.logit(self.eta)
        if self.members is None:
            return logit_eta
        return torch.where(self.members, math.log(self.member_prior / (1.0 - self.member_prior)), logit_eta)

    @torch.no_grad()
    def e_step(self, w: torch.Tensor) -> torch.Tensor:
        """Posterior inclusion probabilities ``p*`` of ``w`` under the current ``eta`` (not stored)."""
        if self.members is None:
            return torch.sigmoid(ssl_inclusion_logits(w.detach(), self.eta, self.lambda0, self.lambda1))
        logits = self.prior_logits() + math.log(self.lambda1 / self.lambda0) - (self.lambda1 - self.lambda0) * w.abs()
        return torch.sigmoid(logits.detach())

    @torch.no_grad()
    def eta_update(self, p_star: torch.Tensor) -> torch.Tensor:
        """Closed-form ``eta_k = (sum_j p*_jk + a - 1) / (a + b + G - 2)``, clipped into (eps, 1-eps).

        With ``members`` the sums run over each column's other entries (``G`` becomes their number): the maximiser
        of the Bernoulli and Beta terms that involve ``eta_k``.
        """
        if self.members is None:
            eta = (p_star.sum(0) + self.a - 1.0) / (self.a + self.b + self.n_rows - 2.0)
        else:
            others = ~self.members
            n_others = others.sum(0).to(p_star.dtype)
            eta = ((p_star * others).sum(0) + self.a - 1.0) / (self.a + self.b + n_others - 2.0)
        return eta.clamp(self.eps, 1.0 - self.eps)

    @torch.no_grad()
    def em_update(self, w: torch.Tensor) -> None:
        """One E-step then one eta update, written into the buffers ``p_star`` and ``eta``."""
        p_star = self.e_step(w)
        self.p_star.copy_(p_star)
        self.eta.copy_(self.eta_update(p_star))

    def active_mask(self, pip_threshold: float = 0.5, min_rows: int = 1) -> torch.Tensor:
        """Columns the prior kept: at least ``min_rows`` rows with ``p* > pip_threshold`` (bool, ``(K,)``)."""
        return (self.p_star > pip_threshold).sum(0) >= min_rows

    def penalty(self, w: torch.Tensor) -> torch.Tensor:
        """The M-step penalty ``sum_jk [lambda1 p*_jk + lambda0 (1 - p*_jk)] |w_jk|`` (a scalar).

        This is the part of ``-E_gamma[log p(W | gamma)]`` that depends on ``W``; ``p*`` is held fixed.
        """
        return (self.rates() * w.abs()).sum()

    def rates(self) -> torch.Tensor:
        """The Laplace rate of each entry in the M-step, ``lambda1 p*_jk + lambda0 (1 - p*_jk)`` (``(G, K)``)."""
        return self.lambda1 * self.p_star + self.lambda0 * (1.0 - self.p_star)

    def negative_log_prior(self, w: torch.Tensor) -> torch.Tensor:
        """Full ``-E_{gamma | W, eta}[log p(W | gamma) p(gamma | eta) p(eta)]`` (the paper's Eq. 56, negated).

        Includes the Laplace normalisers, the Bernoulli terms and the Beta(a, b) log-density of ``eta``
        (up to its normalising constant). Used for reporting; its gradient in ``w`` equals that of
        :meth:`penalty`.
        """
        p, eta = self.p_star, self.eta
        log_laplace = p * math.log(self.lambda1 / 2) + (1 - p) * math.log(self.lambda0 / 2)
        theta = eta if self.members is None else torch.sigmoid(self.prior_logits())
        bernoulli = p * torch.log(theta) + (1 - p) * torch.log1p(-theta)
        beta = (self.a - 1) * torch.log(eta) + (self.b - 1) * torch.log1p(-eta)
        return self.penalty(w) - log_laplace.sum() - bernoulli.sum() - beta.sum()

    def extra_repr(self) -> str:
        return (
            f"n_rows={self.n_rows}, n_cols={self.n_cols}, lambda0={self.lambda0}, lambda1={self.lambda1}, "
            f"a={self.a}, b={self.b}"
            + ("" if self.members is None else f", members={int(self.members.sum())}, member_prior={self.member_prior}")
        )
