"""Scores of the array VAEs that the image benchmarks share: held-out ELBO and the share of active code entries."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from scsparse.generic.models import VSC, as_loader

__all__ = ["active_fraction", "heldout_elbo"]


@torch.no_grad()
def heldout_elbo(model: Any, X: np.ndarray, n_samples: int = 20) -> float:
    """Mean Monte Carlo ELBO per row of ``X`` (nats) for a fitted :class:`VAE` or :class:`VSC`.

    VSC: ``-model.heldout_nll(X)`` (exact spike-and-slab samples, its documented ELBO). VAE: the mean over
    ``n_samples`` draws ``z ~ q(z | x)`` of ``log p(x | z)`` minus the analytic ``KL(q(z | x) || N(0, I))``.

    Examples
    --------
    >>> import numpy as np
    >>> from scsparse.generic.models import VAE
    >>> X = np.random.default_rng(0).normal(size=(100, 5)).astype("float32")
    >>> m = VAE(n_latent=2, n_hidden=8, max_epochs=1).fit(X)
    >>> bool(np.isfinite(heldout_elbo(m, X, n_samples=3)))
    True
    """
    if isinstance(model, VSC):
        return -model.heldout_nll(X, n_samples=n_samples)
    module = model.module.eval()
    total, rows = 0.0, 0
    with torch.random.fork_rng():
        torch.manual_seed(model.seed)
        for (x,) in as_loader(X, 512, shuffle=False):
            acc = torch.zeros(x.shape[0])
            for _ in range(n_samples):
                terms = module.loss_terms(x)
                acc += -(terms["rec"] + terms["kl"])
            total += float(acc.sum()) / n_samples
            rows += x.shape[0]
    return total / rows


@torch.no_grad()
def active_fraction(model: Any, X: np.ndarray, eps: float = 1e-2) -> float:
    """Fraction of code entries that are active: ``gamma > 0.5`` (VSC) or ``|E_q z| > eps`` (VAE).

    Examples
    --------
    >>> import numpy as np
    >>> from scsparse.generic.models import VAE
    >>> X = np.random.default_rng(0).normal(size=(50, 4)).astype("float32")
    >>> 0.0 <= active_fraction(VAE(n_latent=2, n_hidden=8, max_epochs=1).fit(X), X) <= 1.0
    True
    """
    if isinstance(model, VSC):
        return float((model.spike_probabilities(X) > 0.5).mean())
    return float((np.abs(model.transform(X)) > eps).mean())
