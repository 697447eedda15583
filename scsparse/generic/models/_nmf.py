"""Non-negative matrix factorisation (scikit-learn) behind the generic array-model interface."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader

from scsparse.nn import log_multinomial, log_normal, log_poisson

from ._base import ArrayModel, check_option, check_rows
from ._modules import check_likelihood_data

__all__ = ["NMF", "NMF_LIKELIHOODS"]

#: Likelihoods under which :class:`NMF` is fitted and evaluated.
NMF_LIKELIHOODS: tuple[str, ...] = ("normal", "multinomial", "poisson")

#: Floor of the probabilities / rates of the count likelihoods in :meth:`NMF.heldout_nll`.
PROB_FLOOR = 1e-10
#: Floor of the per-feature residual variances of the ``"normal"`` likelihood.
VAR_FLOOR = 1e-8


class NMF(ArrayModel):
    """Non-negative matrix factorisation ``X ~= codes @ components`` (scikit-learn), the linear baseline.

    ``codes`` (rows x ``n_components``, scikit-learn's ``W``) are the factors returned by
    :meth:`transform`; ``components`` (``n_components`` x features, scikit-learn's ``H`` /
    ``components_``) are the loadings (:meth:`loadings` returns their transpose). The likelihood picks
    the loss: ``"normal"`` the Frobenius norm (coordinate descent), ``"multinomial"`` and ``"poisson"``
    the generalised Kullback-Leibler divergence (multiplicative updates) -- the Poisson maximum
    likelihood, which for the multinomial is the same fit up to the row totals.

    Held-out likelihood (:meth:`heldout_nll`) of a new row ``x`` with ``r = transform(x) @ components``
    (the codes are fitted to ``x`` itself by scikit-learn's ``transform``, so this is a plug-in
    likelihood at the point estimate of the codes, not a marginal likelihood):

    - ``"multinomial"``: ``p = r / sum(r)`` (uniform if ``sum(r) = 0``), floored at ``1e-10`` and
      renormalised; ``-log Mult(x; n = sum(x), p)`` including ``log n! - sum_j log x_j!``;
    - ``"poisson"``: rates ``max(r, 1e-10)``; ``-sum_j log Poisson(x_j; r_j)`` including ``log x_j!``
      (:func:`~scsparse.nn.log_poisson`, which evaluates ``log(r_j + 1e-8)``);
    - ``"normal"``: ``-sum_j log N(x_j; r_j, s_j^2)`` with ``s_j^2`` the mean squared residual of
      feature ``j`` on the training rows (maximum-likelihood variance, codes from the fit), floored at
      ``1e-8``; ``log 2 pi`` and ``log s_j`` included.

    Parameters
    ----------
    n_components
        Number of components ``K``.
    likelihood
        ``"normal"``, ``"multinomial"`` or ``"poisson"``.
    alpha
        Regularisation strength of both factors (scikit-learn's ``alpha_W``, with ``alpha_H="same"``).
    l1_ratio
        Mix of L1 (1) and L2 (0) regularisation.
    seed
        ``random_state`` of scikit-learn.
    max_iter
        Maximum number of iterations.
    tol
        Tolerance of the stopping condition.
    init
        Initialisation (scikit-learn's ``init``).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).poisson(3.0, size=(100, 6)).astype(float)
    >>> model = NMF(n_components=2, likelihood="multinomial").fit(X)
    >>> model.transform(X).shape, model.loadings().shape
    ((100, 2), (6, 2))
    >>> bool(np.isfinite(model.heldout_nll(X)))
    True
    """

    def __init__(
        self,
        n_components: int = 10,
        likelihood: str = "normal",
        alpha: float = 0.0,
        l1_ratio: float = 0.0,
        seed: int = 0,
        max_iter: int = 500,
        tol: float = 1e-4,
        init: str | None = "nndsvda",
    ) -> None:
        check_option("likelihood", likelihood, NMF_LIKELIHOODS)
        self.n_components, self.likelihood = int(n_components), likelihood
        self.alpha, self.l1_ratio = float(alpha), float(l1_ratio)
        self.seed, self.max_iter, self.tol, self.init = int(seed), int(max_iter), float(tol), init
        self.estimator_: Any = None
        self.residual_var_: np.ndarray | None = None

    def _make_estimator(self) -> Any:
        from sklearn.decomposition import NMF as SklearnNMF

        kl = self.likelihood != "normal"
        return SklearnNMF(
            n_components=self.n_components,
            init=self.init,
            solver="mu" if kl else "cd",
            beta_loss="kullback-leibler" if kl else "frobenius",
            alpha_W=self.alpha,
            alpha_H="same",
            l1_ratio=self.l1_ratio,
            max_iter=self.max_iter,
            tol=self.tol,
            random_state=self.seed,
        )

    @staticmethod
    def _as_array(X: np.ndarray | DataLoader) -> np.ndarray:
        if isinstance(X, DataLoader):
            X = np.concatenate([np.asarray(x) for (x,) in X])
        x = np.asarray(X, dtype=np.float64)
        check_rows(x)
        if np.any(x < 0):
            raise ValueError("NMF needs non-negative data.")
        return x

    def fit(self, X: np.ndarray | DataLoader, **kwargs: Any) -> NMF:
        """Fit on the rows of ``X`` (non-negative; counts for the count likelihoods) and return the model."""
        x = self._as_array(X)
        check_likelihood_data(x, self.likelihood)
        self.estimator_ = self._make_estimator()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*Maximum number of iterations.*")
            codes = self.estimator_.fit_transform(x)
        resid = x - codes @ self.estimator_.components_
        self.residual_var_ = np.maximum((resid**2).mean(0), VAR_FLOOR)
        return self

    def _check_fitted(self) -> None:
        if self.estimator_ is None:
            raise RuntimeError("NMF is not fitted yet; call fit(X) first.")

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Codes (scikit-learn's ``W``) of the rows of ``X``, shape ``(n_rows, n_components)``."""
        self._check_fitted()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*Maximum number of iterations.*")
            return self.estimator_.transform(self._as_array(X))

    def loadings(self) -> np.ndarray:
        """``components_.T``: features x components."""
        self._check_fitted()
        return self.estimator_.components_.T.copy()

    def predict_mean(self, X: np.ndarray) -> np.ndarray:
        """Reconstruction ``transform(X) @ components_`` of the rows of ``X``."""
        return self.transform(X) @ self.estimator_.components_

    def heldout_nll(self, X: np.ndarray, **kwargs: Any) -> float:
        """Mean negative log-likelihood per row of ``X`` at its fitted codes (see the class docstring)."""
        x = self._as_array(X)
        check_likelihood_data(x, self.likelihood)
        r = np.asarray(self.predict_mean(x), dtype=np.float64)
        xt = torch.as_tensor(x)
        if self.likelihood == "multinomial":
            total = r.sum(1, keepdims=True)
            p = np.where(total > 0, r / np.where(total > 0, total, 1.0), 1.0 / r.shape[1])
            p = np.maximum(p, PROB_FLOOR)
            p = p / p.sum(1, keepdims=True)
            ll = log_multinomial(xt, torch.as_tensor(np.log(p)))
        elif self.likelihood == "poisson":
            ll = log_poisson(xt, torch.as_tensor(np.maximum(r, PROB_FLOOR))).sum(-1)
        else:
            log_var = torch.as_tensor(np.log(self.residual_var_))
            ll = log_normal(xt, torch.as_tensor(r), log_var).sum(-1)
        return -float(ll.mean())
