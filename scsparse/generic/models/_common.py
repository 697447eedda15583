"""Pieces the torch modules of the generic models share.

The layout of decoder outputs, the observation log-likelihood of sampled decoder outputs, the start of a
``"normal"`` likelihood's variances, memory-bounded importance sampling, and :class:`SampledCodeModule`, the
common evaluation side (decoder mean, importance-sampled ``log p(x)``) of the oi-VAE, VSC and thresholded VSC
modules.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import torch
from torch import nn

from scsparse.nn import ObservationModel

__all__ = [
    "SampledCodeModule",
    "chunked_logmeanexp",
    "init_observation_variance",
    "observation_log_prob",
    "sample_chunks",
    "split_heads",
]

#: Floats per chunk of importance samples in held-out likelihoods (bounds memory, ~64 MB).
_CHUNK_FLOATS = 2**24


def split_heads(out: torch.Tensor, n_heads: int, n_features: int) -> torch.Tensor:
    """Reshape decoder outputs ``(..., n_heads * G)`` to the ``(n_heads, ..., G)`` layout of the likelihoods.

    Examples
    --------
    >>> import torch
    >>> split_heads(torch.zeros(5, 4, 2 * 3), n_heads=2, n_features=3).shape
    torch.Size([2, 5, 4, 3])
    """
    return out.unflatten(-1, (n_heads, n_features)).movedim(-2, 0)


def observation_log_prob(obs: ObservationModel, x: torch.Tensor, heads: torch.Tensor) -> torch.Tensor:
    """``log p(x | heads)`` per row, for decoder outputs with leading sample axes ``(n_heads, S, B, G)``.

    ``x`` (``(B, G)``) is expanded to the sample shape first (some likelihoods do not broadcast).

    Examples
    --------
    >>> import torch
    >>> from scsparse.nn import ObservationModel
    >>> obs = ObservationModel("bernoulli", 3)
    >>> observation_log_prob(obs, torch.ones(4, 3), torch.zeros(1, 2, 4, 3)).shape  # (S, B)
    torch.Size([2, 4])
    """
    return obs.log_prob(x.expand(heads.shape[1:]), heads)


def init_observation_variance(obs: ObservationModel, data: torch.Tensor | None) -> None:
    """Start a ``"normal"`` likelihood at the per-feature sample variances of the training data.

    Without it the variances start at 1 and, on data with small variances, the first epochs only learn
    the noise level while the KL term pulls the posterior onto the prior.

    Examples
    --------
    >>> import torch
    >>> from scsparse.nn import ObservationModel
    >>> obs = ObservationModel("normal", 2)
    >>> init_observation_variance(obs, torch.tensor([[0.0, 0.0], [2.0, 4.0]]))
    >>> obs.log_var.exp().tolist()
    [2.0, 8.0]
    """
    if obs.likelihood != "normal" or data is None or data.shape[0] < 2:
        return
    with torch.no_grad():
        obs.log_var.copy_(torch.log(data.float().var(dim=0).clamp_min(1e-6)))


def sample_chunks(n_samples: int, floats_per_sample: int, budget: int = _CHUNK_FLOATS) -> Iterator[int]:
    """Sizes of the chunks in which to draw ``n_samples`` samples so that a chunk holds about ``budget`` floats.

    Every chunk has ``max(1, min(n_samples, budget // floats_per_sample))`` samples but the last, which has
    what is left.

    Examples
    --------
    >>> list(sample_chunks(10, floats_per_sample=4, budget=12))
    [3, 3, 3, 1]
    """
    chunk = max(1, min(n_samples, budget // max(int(floats_per_sample), 1)))
    done = 0
    while done < n_samples:
        s = min(chunk, n_samples - done)
        yield s
        done += s


def chunked_logmeanexp(
    log_weight_fn: Callable[[int], torch.Tensor], n_samples: int, floats_per_sample: int
) -> torch.Tensor:
    """``log mean_s exp(w_s)`` over ``n_samples`` importance samples drawn in memory-bounded chunks.

    ``log_weight_fn(s)`` draws ``s`` fresh samples and returns their log-weights, shape ``(s, B)``; the chunks
    are those of :func:`sample_chunks`.

    Examples
    --------
    >>> import torch
    >>> chunked_logmeanexp(lambda s: torch.zeros(s, 3), n_samples=5, floats_per_sample=10)
    tensor([0., 0., 0.])
    """
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}.")
    parts = [log_weight_fn(s) for s in sample_chunks(n_samples, floats_per_sample)]
    return torch.logsumexp(torch.cat(parts, dim=0), dim=0) - math.log(n_samples)


class SampledCodeModule(nn.Module):
    """Evaluation side shared by the oi-VAE, VSC and thresholded VSC modules.

    A subclass sets ``obs`` (its :class:`~scsparse.nn.ObservationModel`, with :meth:`set_observation`),
    ``n_input`` and ``decoder`` (or overrides :meth:`decode`), and implements ``encode(x)`` (posterior mean
    of the code first), ``log_weights(x, n_samples)`` and ``floats_per_sample(n_rows)`` (or overrides
    :meth:`marginal_ll`).

    Examples
    --------
    >>> import torch
    >>> from scsparse.generic.models._vsc import VSCModule
    >>> m = VSCModule(n_input=6, n_latent=2, n_pseudo_inputs=0, n_hidden=8).eval()
    >>> m.predict_mean(torch.randn(4, 6)).shape, m.marginal_ll(torch.randn(4, 6), n_samples=5).shape
    (torch.Size([4, 6]), torch.Size([4]))
    """

    obs: ObservationModel
    n_input: int
    n_heads: int
    decoder: nn.Module

    def set_observation(self, likelihood: str, n_features: int) -> None:
        """Create the observation model ``obs`` (and ``n_heads``, its number of decoder outputs per feature)."""
        self.obs = ObservationModel(likelihood, n_features)
        self.n_heads = self.obs.n_heads

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """Decoder outputs ``(n_heads, ..., G)``."""
        return split_heads(self.decoder(z), self.n_heads, self.n_input)

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Posterior summaries of the codes, the posterior mean first."""
        raise NotImplementedError

    @torch.no_grad()
    def predict_mean(self, x: torch.Tensor) -> torch.Tensor:
        """Decoder mean (proportions, probabilities or means) at the posterior mean of the code."""
        return self.obs.mean(self.decode(self.encode(x)[0]))

    def log_weights(self, x: torch.Tensor, n_samples: int) -> torch.Tensor:
        """Importance log-weights ``log p(x | z_s) + log p(z_s) - log q(z_s | x)``, shape ``(n_samples, B)``."""
        raise NotImplementedError

    def floats_per_sample(self, n_rows: int) -> int:
        """About how many floats one importance sample of ``n_rows`` rows holds (sets the chunk size)."""
        raise NotImplementedError

    @torch.no_grad()
    def marginal_ll(self, x: torch.Tensor, n_samples: int = 100) -> torch.Tensor:
        """Importance-sampled ``log p(x)`` per row, ``log mean_s exp(log_weights_s)`` (shape ``(B,)``)."""
        return chunked_logmeanexp(lambda s: self.log_weights(x, s), n_samples, self.floats_per_sample(x.shape[0]))
