"""Matching estimated factors to true factors."""

from __future__ import annotations

from typing import Literal

import numpy as np

from scsparse.results import matched_partners

__all__ = ["assign_by_correlation", "factor_correlation", "match_factors"]

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
    among: np.ndarray | None = None,
) -> np.ndarray:
    """Match every true factor to a distinct estimated code (Hungarian assignment on ``|correlation|``).

    Parameters
    ----------
    estimated
        Estimated codes, shape ``(n_obs, K_est)`` with ``K_est >= K_true``.
    truth
        True factors, shape ``(n_obs, K_true)``.
    method
        ``"correlation"`` (Pearson, alias ``"pearson"``) or ``"spearman"``; see :func:`factor_correlation`.
    among
        Optional boolean mask of length ``K_est``: the codes eligible for a match, e.g. the factors a model
        keeps active. An eligible code is always preferred to an ineligible one, whatever their
        correlations; ineligible codes are used only for the true factors left over when fewer than
        ``K_true`` codes are eligible. ``None``: every code is eligible.

    Returns
    -------
    numpy.ndarray
        Integer array of length ``K_true``; entry ``j`` is the column of ``estimated`` matched to true
        factor ``j``. The columns are distinct; unmatched estimated columns do not appear.

    Notes
    -----
    Computes ``A = factor_correlation(estimated, truth, method=method)`` (``K_est x K_true``, constant
    columns have correlation 0) and solves the linear assignment problem maximising ``sum_j A[m(j), j]``
    over injective maps ``m`` with :func:`scsparse.results.match_pairs`. Signs are ignored: a code
    equal to minus a factor is a perfect match. With ``among``, ineligible rows of ``A`` are lowered by
    ``K_true + 1`` (more than any sum of correlations can make up), so the assignment first uses as many
    eligible codes as it can and, among those assignments, maximises the summed correlation.

    Why ``among`` matters: a factor that a sparse model switched off (every loading in the spike) can still
    have posterior means that track a true factor, e.g. under a correlated prior on the codes, where an
    unused code follows the used ones it is correlated with. Matched on correlation alone it can win the
    true factor from the active code that actually carries it, and a support comparison then looks at a
    column with no loadings.

    Examples
    --------
    >>> import numpy as np
    >>> from scsparse.generic.metrics import match_factors
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(500, 2))
    >>> est = np.column_stack([rng.normal(size=500), -z[:, 1], np.zeros(500), 2 * z[:, 0]])
    >>> match_factors(est, z)
    array([3, 1])
    >>> match_factors(est, z, among=np.array([True, True, True, False]))  # code 3 switched off
    array([0, 1])
    """
    return assign_by_correlation(factor_correlation(estimated, truth, method=method), among=among)


def assign_by_correlation(corr: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
    """Hungarian assignment of every true factor to a distinct code, given their ``|correlation|`` matrix.

    Parameters
    ----------
    corr
        ``(K_est, K_true)`` matrix of ``|corr|`` between codes (rows) and true factors (columns), e.g. from
        :func:`factor_correlation`.
    among
        Optional boolean mask of length ``K_est``, the codes eligible for a match; see :func:`match_factors`.

    Returns
    -------
    numpy.ndarray
        Integer array of length ``K_true``: entry ``j`` is the code matched to true factor ``j``.

    Examples
    --------
    >>> import numpy as np
    >>> corr = np.array([[0.9, 0.1], [0.8, 0.2], [0.1, 0.7]])
    >>> assign_by_correlation(corr)
    array([0, 2])
    >>> assign_by_correlation(corr, among=np.array([False, True, True]))
    array([1, 2])
    """
    corr = np.asarray(corr, dtype=np.float64)
    k_est, k_true = corr.shape
    if k_est < k_true:
        raise ValueError(f"need at least as many estimated codes as true factors, got {k_est} < {k_true}")
    if among is not None:
        eligible = np.asarray(among)
        if eligible.dtype != bool or eligible.shape != (k_est,):
            raise ValueError(
                f"among must be a boolean mask of length K_est={k_est}, got {eligible.dtype} {eligible.shape}"
            )
        # an ineligible code loses more than any sum of correlations can make up
        corr = np.where(eligible[:, None], corr, corr - (k_true + 1))
    return matched_partners(corr, of="columns")[0]  # every true factor has a code: k_est >= k_true
