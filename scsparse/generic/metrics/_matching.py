"""Matching estimated factors to true factors."""

from __future__ import annotations

from typing import Literal

import numpy as np

__all__ = ["factor_correlation", "match_factors"]

_Method = Literal["correlation", "pearson", "spearman"]


def _as_2d(a: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 1-D or 2-D, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


def factor_correlation(
    estimated: np.ndarray,
    truth: np.ndarray,
    *,
    method: _Method = "correlation",
) -> np.ndarray:
    """Absolute correlation between every estimated code and every true factor.

    Parameters
    ----------
    estimated
        Estimated codes, shape ``(n_obs, K_est)``.
    truth
        True factors, shape ``(n_obs, K_true)``.
    method
        ``"correlation"`` (alias ``"pearson"``): Pearson correlation. ``"spearman"``: Pearson correlation of
        the column-wise ranks (average ranks for ties, :func:`scipy.stats.rankdata`).

    Returns
    -------
    numpy.ndarray
        Matrix of shape ``(K_est, K_true)`` with ``|corr(estimated[:, k], truth[:, j])|`` in ``[0, 1]``.
        Any pair involving a constant column has correlation 0.

    Examples
    --------
    >>> import numpy as np
    >>> from scsparse.generic.metrics import factor_correlation
    >>> z = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]])
    >>> factor_correlation(-z, z).round(3)
    array([[1. , 0.5],
           [0.5, 1. ]])
    """
    est = _as_2d(estimated, "estimated")
    tru = _as_2d(truth, "truth")
    if est.shape[0] != tru.shape[0]:
        raise ValueError(
            f"estimated and truth must have the same number of rows, got {est.shape[0]} and {tru.shape[0]}"
        )
    if method == "spearman":
        from scipy.stats import rankdata

        est = rankdata(est, axis=0)
        tru = rankdata(tru, axis=0)
    elif method not in ("correlation", "pearson"):
        raise ValueError(f"method must be 'correlation', 'pearson' or 'spearman', got {method!r}")

    def _unit(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        centred = a - a.mean(axis=0)
        norm = np.sqrt(np.sum(centred**2, axis=0))
        constant = norm <= 1e-12 * np.maximum(1.0, np.abs(a).max(axis=0))
        return centred / np.where(constant, 1.0, norm), constant

    est_u, est_const = _unit(est)
    tru_u, tru_const = _unit(tru)
    corr = np.abs(est_u.T @ tru_u)
    corr[est_const, :] = 0.0
    corr[:, tru_const] = 0.0
    return np.clip(corr, 0.0, 1.0)


def match_factors(
    estimated: np.ndarray,
    truth: np.ndarray,
    *,
    method: _Method = "correlation",
) -> np.ndarray:
    """Match every true factor to a distinct estimated code (Hungarian assignment on |correlation|).

    Parameters
    ----------
    estimated
        Estimated codes, shape ``(n_obs, K_est)`` with ``K_est >= K_true``.
    truth
        True factors, shape ``(n_obs, K_true)``.
    method
        ``"correlation"`` (Pearson, alias ``"pearson"``) or ``"spearman"``; see :func:`factor_correlation`.

    Returns
    -------
    numpy.ndarray
        Integer array of length ``K_true``; entry ``j`` is the column of ``estimated`` matched to true
        factor ``j``. The columns are distinct; unmatched estimated columns do not appear.

    Notes
    -----
    Computes ``A = factor_correlation(estimated, truth, method=method)`` (``K_est x K_true``, constant
    columns have correlation 0) and solves the linear assignment problem maximising ``sum_j A[m(j), j]``
    over injective maps ``m`` with :func:`scipy.optimize.linear_sum_assignment`. Signs are ignored: a code
    equal to minus a factor is a perfect match.

    Examples
    --------
    >>> import numpy as np
    >>> from scsparse.generic.metrics import match_factors
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(500, 2))
    >>> est = np.column_stack([rng.normal(size=500), -z[:, 1], np.zeros(500), 2 * z[:, 0]])
    >>> match_factors(est, z)
    array([3, 1])
    """
    from scipy.optimize import linear_sum_assignment

    corr = factor_correlation(estimated, truth, method=method)
    k_est, k_true = corr.shape
    if k_est < k_true:
        raise ValueError(f"need at least as many estimated codes as true factors, got {k_est} < {k_true}")
    rows, cols = linear_sum_assignment(corr, maximize=True)
    match = np.empty(k_true, dtype=np.int64)
    match[cols] = rows
    return match
