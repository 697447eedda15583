"""Observation models: how decoder outputs become a likelihood for each kind of data."""

from __future__ import annotations

import torch
from torch import nn

from scsparse._options import COUNT_LIKELIHOODS

from ._likelihoods import log_bernoulli, log_multinomial, log_nb, log_normal, log_poisson, log_zinb

__all__ = ["COUNT_LIKELIHOODS", "LIKELIHOODS", "ObservationModel"]

#: Likelihoods whose mean is ``library * softmax(logits)``.
#: Every supported likelihood.
LIKELIHOODS: tuple[str, ...] = (*COUNT_LIKELIHOODS, "normal", "bernoulli")


class ObservationModel(nn.Module):
    """``log p(x | decoder output)`` per row, with the per-feature parameters the likelihood needs.

    - ``"nb"``, ``"zinb"``: mean ``library * softmax(logits)``, per-feature inverse dispersion ``theta``;
      ZINB takes the zero-inflation logits as a second decoder head;
    - ``"poisson"``: mean ``library * softmax(logits)``;
    - ``"multinomial"``: probabilities ``softmax(logits)``, total count fixed to the observed one;
    - ``"normal"``: mean ``logits``, per-feature variance (parameter ``log_var``);
    - ``"bernoulli"``: probabilities ``sigmoid(logits)``.

    Parameters
    ----------
    likelihood
        One of :data:`LIKELIHOODS`.
    n_features
        Number of features.

    Examples
    --------
    >>> import torch
    >>> obs = ObservationModel("normal", n_features=3)
    >>> obs.log_prob(torch.zeros(2, 3), torch.zeros(1, 2, 3)).shape
    torch.Size([2])
    """

    def __init__(self, likelihood: str, n_features: int) -> None:
        super().__init__()
        if likelihood not in LIKELIHOODS:
            raise ValueError(f"likelihood must be one of {LIKELIHOODS}, got {likelihood!r}.")
        self.likelihood = likelihood
        self.n_features = int(n_features)
        if likelihood in ("nb", "zinb"):
            self.log_theta = nn.Parameter(torch.zeros(n_features))
        if likelihood == "normal":
            self.log_var = nn.Parameter(torch.zeros(n_features))

    @property
    def n_heads(self) -> int:
        """Decoder outputs per feature this likelihood needs."""
        return 2 if self.likelihood == "zinb" else 1

    @property
    def is_count(self) -> bool:
        """Whether the mean is ``library * softmax(logits)``."""
        return self.likelihood in COUNT_LIKELIHOODS

    def mean(self, heads: torch.Tensor, library: torch.Tensor | None = None) -> torch.Tensor:
        """Expected value of ``x``: ``library * softmax`` for counts (proportions without library),
        the mean for ``"normal"``, probabilities for ``"bernoulli"``.
        """
        logits = heads[0]
        if self.is_count:
            rho = torch.softmax(logits, dim=-1)
            return rho if library is None else library * rho
        if self.likelihood == "bernoulli":
            return torch.sigmoid(logits)
        return logits

    def log_prob(self, x: torch.Tensor, heads: torch.Tensor, library: torch.Tensor | None = None) -> torch.Tensor:
        """``log p(x | heads)`` summed over features: shape ``x.shape[:-1]``.

        Parameters
        ----------
        x
            Observations ``(..., G)``.
        heads
            Decoder outputs ``(n_heads, ..., G)``.
        library
            Library sizes ``(..., 1)`` for ``"nb"``, ``"zinb"`` and ``"poisson"`` (default: the row sums of ``x``).
        """
        lik, logits = self.likelihood, heads[0]
        if lik == "normal":
            return log_normal(x, logits, self.log_var).sum(-1)
        if lik == "bernoulli":
            return log_bernoulli(x, logits).sum(-1)
        if lik == "multinomial":
            return log_multinomial(x, logits)
        if library is None:
            library = x.sum(-1, keepdim=True)
        mu = library * torch.softmax(logits, dim=-1)
        if lik == "poisson":
            return log_poisson(x, mu).sum(-1)
        theta = torch.exp(self.log_theta)
        if lik == "nb":
            return log_nb(x, mu, theta).sum(-1)
        return log_zinb(x, mu, theta, heads[1]).sum(-1)
