"""Linear sparse-coding VAE (Fallah & Rozell 2022): an inference network for a linear generator ``x ~ A z``.

Priors Gaussian, Laplace, spike-and-slab (Tonolini et al.) and thresholded Gaussian / Laplace (straight-through
shifted soft-threshold); the dictionary ``A`` is a buffer learned outside the encoder's gradient by
:func:`~scsparse.generic.models.dictionary_step`.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from scsparse.generic.nn import (
    base_kl,
    relaxed_spike_slab_sample,
    sample_base,
    shifted_soft_threshold,
    spike_slab_kl,
    straight_through_spike_slab_sample,
    straight_through_threshold,
)
from scsparse.nn import MLP

from ._base import check_option
from ._sparse_coding import init_dictionary

__all__ = [
    "SPARSE_CODING_PRIORS",
    "SPARSE_CODING_THRESHOLDS",
    "SPIKE_TAU_DECAY",
    "SPIKE_TAU_MIN",
    "LinearSparseCodingVAE",
]

#: Priors of :class:`LinearSparseCodingVAE`, in the order of Fallah & Rozell's (2022) Table 1.
SPARSE_CODING_PRIORS: tuple[str, ...] = (
    "gaussian",
    "laplace",
    "spike_slab",
    "thresholded_gaussian",
    "thresholded_laplace",
)
#: Default thresholds of the thresholded priors, per base distribution (about 10% of a prior sample non-zero).
SPARSE_CODING_THRESHOLDS: dict[str, float] = {"gaussian": 0.52, "laplace": 0.25}
#: The spike-and-slab's Gumbel-softmax temperature: x SPIKE_TAU_DECAY per step of the paper's run, floor SPIKE_TAU_MIN.
SPIKE_TAU_DECAY, SPIKE_TAU_MIN = 0.9995, 0.5


class LinearSparseCodingVAE(nn.Module):
    """Inference network for a linear generator ``x ~ A z`` with the objective of Fallah & Rozell (Eq. 11-12).

    Per row: ``min_j mean_pixels (x - A z_j)^2 + beta KL(q || p)`` (max-ELBO sampling over ``J`` samples; the
    KL, summed over the codes, does not depend on the sample). The reconstruction error is the per-pixel
    mean, the scaling of the paper's experiments: there ``beta = 0.01`` and the prior scale hold the
    posterior scales near the prior's, so the thresholds leave about 10% of the codes non-zero; against the
    sum over pixels the same ``beta`` lets the reconstruction shrink every scale below the threshold (all
    codes exactly zero). The dictionary ``A`` is a buffer, learned outside the encoder's gradient by
    :func:`dictionary_step` on the selected sample.

    Parameters
    ----------
    n_input
        Pixels per patch.
    n_atoms
        Dictionary size ``K``.
    prior
        ``"gaussian"``, ``"laplace"``, ``"spike_slab"``, ``"thresholded_gaussian"`` or ``"thresholded_laplace"``.
    n_hidden, n_layers
        Inference network (an MLP with ReLU).
    prior_scale
        Laplace scale ``b0``, or the Gaussian prior *variance* (0.1: the reading under which the threshold
        0.52 leaves 10% of a prior sample non-zero).
    threshold
        Threshold of the thresholded priors.
    spike_prior
        Prior non-zero probability of the spike-and-slab.
    kl_weight
        ``beta``.
    generator
        Random generator of the initial dictionary (unit-norm Gaussian atoms).

    Examples
    --------
    >>> import torch
    >>> m = LinearSparseCodingVAE(16, 8, "thresholded_laplace", n_hidden=16)
    >>> loss, z = m.loss(torch.randn(4, 16), n_samples=3)
    >>> float(loss.detach()) > 0, tuple(z.shape)
    (True, (4, 8))
    """

    def __init__(
        self,
        n_input: int,
        n_atoms: int,
        prior: str,
        n_hidden: int = 512,
        n_layers: int = 3,
        prior_scale: float = 0.1,
        threshold: float | None = None,
        spike_prior: float = 0.1,
        kl_weight: float = 1e-2,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        check_option("prior", prior, SPARSE_CODING_PRIORS)
        self.prior, self.n_atoms = prior, int(n_atoms)
        self.base = "laplace" if prior.endswith("laplace") else "gaussian"
        self.thresholded = prior.startswith("thresholded")
        # Gaussian base: prior_scale is a variance; sd = sqrt(prior_scale). Laplace: scale b0 = prior_scale.
        self.prior_sd = math.sqrt(prior_scale) if self.base == "gaussian" else float(prior_scale)
        default_thr = SPARSE_CODING_THRESHOLDS[self.base]
        self.threshold = float(default_thr if threshold is None else threshold)
        self.spike_prior, self.kl_weight = float(spike_prior), float(kl_weight)
        n_params = 3 if prior == "spike_slab" else 2
        self.encoder = MLP(n_input, n_params * n_atoms, n_hidden=n_hidden, n_layers=n_layers)
        self.register_buffer("A", init_dictionary(n_input, n_atoms, generator))
        self.omega = 1.0  # scale (or slab) warm-up factor, set by the trainer
        self.tau = SPIKE_TAU_MIN  # temperature of the spike-and-slab's Gumbel-softmax gradient, set by the trainer

    def posterior(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """Parameters of ``q(z | x)``: ``loc``, ``scale`` (base) or ``mu``, ``log_var``, ``gamma`` (spike-and-slab)."""
        out = self.encoder(x)
        k = self.n_atoms
        if self.prior == "spike_slab":
            mu, log_var = out[..., :k], out[..., k : 2 * k].clamp(-15.0, 15.0)
            gamma = torch.sigmoid(out[..., 2 * k :]).clamp(1e-6, 1.0 - 1e-6)
            lam = self.omega  # slab warm-up: the slab is pulled onto the prior's N(0, prior var) while lam < 1
            return {"mu": lam * mu, "log_var": lam * log_var + 2.0 * math.log(self.prior_sd), "gamma": gamma}
        return {"loc": out[..., :k], "scale": self.prior_sd * torch.exp(out[..., k : 2 * k].clamp(-13.8, 13.8))}

    def kl_per_dim(self, q: dict[str, torch.Tensor]) -> torch.Tensor:
        """``KL(q(z_k | x) || p(z_k))`` per row and atom (base distribution only when thresholded)."""
        if self.prior == "spike_slab":
            return spike_slab_kl(
                q["mu"], q["log_var"], q["gamma"], 0.0, 2.0 * math.log(self.prior_sd), self.spike_prior
            )
        return base_kl(self.base, q["loc"], q["scale"], self.prior_sd)

    def sample(self, q: dict[str, torch.Tensor], n_samples: int, train: bool) -> torch.Tensor:
        """``n_samples`` codes ``(J, B, K)``: straight-through thresholded in training, exact otherwise.

        The base noise is scaled by the warm-up factor ``omega`` (the KL sees the posterior's own scale).
        """
        if self.prior == "spike_slab":  # exact Bernoulli selectors; in training a Gumbel-softmax gradient
            if train:
                return straight_through_spike_slab_sample(
                    q["mu"], q["log_var"], q["gamma"], tau=self.tau, sample_shape=(n_samples,)
                )
            return relaxed_spike_slab_sample(q["mu"], q["log_var"], q["gamma"], c=math.inf, sample_shape=(n_samples,))
        s = sample_base(self.base, q["loc"], self.omega * q["scale"], (n_samples,))
        if not self.thresholded:
            return s
        if train:
            return straight_through_threshold(s, q["loc"], self.threshold)
        return shifted_soft_threshold(s, q["loc"], self.threshold)

    def _best_sample(self, x: torch.Tensor, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Max-ELBO selection: per row, the sample ``(B, K)`` of ``z`` ``(J, B, K)`` with the lowest per-pixel
        mean squared error, and that error ``(B,)`` (the KL does not depend on the sample).
        """
        rec = (x - z @ self.A.T).pow(2).mean(-1)  # (J, B)
        best = rec.argmin(dim=0)
        rows = torch.arange(x.shape[0], device=x.device)
        return z[best, rows], rec[best, rows]

    def loss(self, x: torch.Tensor, n_samples: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The encoder's minibatch objective and the selected codes ``(B, K)`` (detached) for the dictionary.

        Mean over rows of the best (lowest) per-pixel mean squared error among ``n_samples`` straight-through
        samples plus ``beta`` times the KL; ``A`` is held fixed.
        """
        q = self.posterior(x)
        z, rec = self._best_sample(x, self.sample(q, n_samples, train=True))
        kl = self.kl_per_dim(q).sum(-1)
        return (rec + self.kl_weight * kl).mean(), z.detach()

    @torch.no_grad()
    def codes(self, x: torch.Tensor, n_samples: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Exact codes (best of ``n_samples`` reconstructions per row) and the per-dimension KL."""
        q = self.posterior(x)
        return self._best_sample(x, self.sample(q, n_samples, train=False))[0], self.kl_per_dim(q)
