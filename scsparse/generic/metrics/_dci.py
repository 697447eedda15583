"""DCI disentanglement, completeness and informativeness (Eastwood & Williams, 2018)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = ["DCIResult", "dci_disentanglement", "dci_from_importance"]

_Regressor = Literal["gbt", "lasso"]


@dataclass(frozen=True, eq=False)
class DCIResult:
    """Result of :func:`dci_disentanglement` (or :func:`dci_from_importance`).

    Attributes
    ----------
    disentanglement
        Overall disentanglement ``D = sum_i rho_i D_i`` in ``[0, 1]``.
    completeness
        Overall completeness ``C = mean_j C_j`` in ``[0, 1]`` (every factor weighted equally).
    informativeness
        Mean over factors of the held-out coefficient of determination ``R^2`` of the per-factor regressor
        (``1 - SSE / SST`` on the test split, ``SST`` about the test-split mean; 1 is perfect, it can be
        negative). ``nan`` when the result comes from :func:`dci_from_importance`.
    importance
        Importance matrix ``R`` of shape ``(n_codes, n_factors)``, non-negative; ``R[i, j]`` is the importance
        of code ``i`` for predicting factor ``j``.
    disentanglement_per_code
        ``D_i`` for every code, shape ``(n_codes,)``.
    completeness_per_factor
        ``C_j`` for every factor, shape ``(n_factors,)``.
    informativeness_per_factor
        Held-out ``R^2`` for every factor, shape ``(n_factors,)`` (``nan`` without a fit).
    code_weights
        ``rho_i = sum_j R_ij / sum_ij R_ij``, shape ``(n_codes,)`` (all zero when ``R`` is all zero).
    n_train
        Number of points the regressors were fitted on (0 without a fit).
    n_test
        Number of held-out points the informativeness was computed on (0 without a fit).
    regressor
        ``"gbt"``, ``"lasso"``, or ``"given"`` for :func:`dci_from_importance`.
    """

    disentanglement: float
    completeness: float
    informativeness: float
    importance: np.ndarray
    disentanglement_per_code: np.ndarray
    completeness_per_factor: np.ndarray
    informativeness_per_factor: np.ndarray
    code_weights: np.ndarray
    n_train: int = 0
    n_test: int = 0
    regressor: str = "given"


def _normalised_entropy(p: np.ndarray, base: int) -> np.ndarray:
    """Entropy of each row of ``p`` (rows sum to 1) with logarithm base ``base``; ``0 log 0 = 0``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return -plogp.sum(axis=1) / np.log(base)


def _one_minus_entropy(rows: np.ndarray) -> np.ndarray:
    """``1 - H_n(rows / row_sum)`` for each row, with ``n = rows.shape[1]``; 0 for an all-zero row.

    With ``n == 1`` the entropy is undefined (log base 1); a non-zero row then scores 1 (it can only
    relate to the single column) and an all-zero row scores 0.
    """
    sums = rows.sum(axis=1)
    out = np.zeros(rows.shape[0], dtype=np.float64)
    nz = sums > 0
    if not np.any(nz):
        return out
    n = rows.shape[1]
    if n == 1:
        out[nz] = 1.0
        return out
    p = rows[nz] / sums[nz, None]
    out[nz] = 1.0 - _normalised_entropy(p, n)
    # guard against -1e-17 style round-off
    return np.clip(out, 0.0, 1.0)


def dci_from_importance(importance: np.ndarray) -> DCIResult:
    """Disentanglement and completeness from a given importance matrix.

    This is the pure part of DCI (Eastwood & Williams, 2018), exposed so it can be checked by hand.

    Parameters
    ----------
    importance
        Non-negative matrix ``R`` of shape ``(n_codes, n_factors)``; ``R[i, j]`` is the importance of learned
        code ``i`` for predicting true factor ``j``.

    Returns
    -------
    DCIResult
        With ``informativeness`` and ``informativeness_per_factor`` set to ``nan`` and ``regressor="given"``.

    Notes
    -----
    Exactly as computed (``H_n`` is the Shannon entropy with logarithm base ``n``, ``0 log 0 = 0``):

    - Disentanglement of code ``i``: ``P_ij = R_ij / sum_j R_ij``, ``D_i = 1 - H_{n_factors}(P_i.)``.
      A code with zero total importance gets ``D_i = 0`` (and weight 0, so it does not matter).
    - Code weights ``rho_i = sum_j R_ij / sum_ij R_ij``; overall ``D = sum_i rho_i D_i``.
    - Completeness of factor ``j``: ``C_j = 1 - H_{n_codes}(R_.j / sum_i R_ij)``; a factor with zero total
      importance (no code predicts it) gets ``C_j = 0``.
    - Overall ``C = (1 / n_factors) sum_j C_j``: every factor weighted equally. (With gradient-boosting
      importances every non-zero column sums to one, so this equals the importance-weighted average.)
    - With a single factor (single code) the entropy base is undefined; every code (factor) with non-zero
      importance then gets ``D_i = 1`` (``C_j = 1``).
    - If every importance is zero, ``D = C = 0``.

    Examples
    --------
    >>> import numpy as np
    >>> from scsparse.generic.metrics import dci_from_importance
    >>> res = dci_from_importance(np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]))
    >>> round(res.disentanglement, 6), round(res.completeness, 6)
    (1.0, 1.0)
    >>> res = dci_from_importance(np.ones((2, 2)))
    >>> round(res.disentanglement, 6), round(res.completeness, 6)
    (0.0, 0.0)
    """
    R = np.asarray(importance, dtype=np.float64)
    if R.ndim != 2:
        raise ValueError(f"importance must be 2-D (n_codes, n_factors), got shape {R.shape}")
    if R.shape[0] == 0 or R.shape[1] == 0:
        raise ValueError(f"importance must be non-empty, got shape {R.shape}")
    if not np.all(np.isfinite(R)):
        raise ValueError("importance contains non-finite values")
    if np.any(R < 0):
        raise ValueError("importance must be non-negative")

    n_codes, n_factors = R.shape
    d_per_code = _one_minus_entropy(R)
    c_per_factor = _one_minus_entropy(R.T)
    total = R.sum()
    if total > 0:
        weights = R.sum(axis=1) / total
        disentanglement = float(np.sum(weights * d_per_code))
        completeness = float(np.mean(c_per_factor))
    else:
        weights = np.zeros(n_codes)
        disentanglement = 0.0
        completeness = 0.0
    nan_f = np.full(n_factors, np.nan)
    return DCIResult(
        disentanglement=disentanglement,
        completeness=completeness,
        informativeness=float("nan"),
        importance=R,
        disentanglement_per_code=d_per_code,
        completeness_per_factor=c_per_factor,
        informativeness_per_factor=nan_f,
        code_weights=weights,
        n_train=0,
        n_test=0,
        regressor="given",
    )


def _standardise(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centre and scale columns with train statistics; constant columns become all-zero."""
    mean = train.mean(axis=0)
    sd = train.std(axis=0)
    constant = sd <= 1e-12 * np.maximum(1.0, np.abs(mean))
    sd = np.where(constant, 1.0, sd)
    tr = (train - mean) / sd
    te = (test - mean) / sd
    tr[:, constant] = 0.0
    te[:, constant] = 0.0
    return tr, te


def _r2(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Held-out coefficient of determination ``1 - SSE / SST`` (SST about the mean of ``y_true``)."""
    sse = float(np.sum((y_true - y_pred) ** 2))
    sst = float(np.sum((y_true - y_true.mean()) ** 2))
    if sst == 0.0:
        return 1.0 if sse == 0.0 else 0.0
    return 1.0 - sse / sst


def dci_disentanglement(
    codes: np.ndarray,
    factors: np.ndarray,
    *,
    regressor: _Regressor = "gbt",
    test_size: float = 0.3,
    seed: int = 0,
    min_points: int = 1000,
    lasso_alpha: float | None = None,
) -> DCIResult:
    """DCI disentanglement, completeness and informativeness of learned codes against true factors.

    The framework of Eastwood & Williams (2018), "A framework for the quantitative evaluation of
    disentangled representations" (ICLR), as used by Moran et al. (2022) on the synthetic data of Eq. 9.

    Parameters
    ----------
    codes
        Learned representation, shape ``(n_obs, n_codes)`` (e.g. posterior means of the latent factors).
    factors
        True generative factors, shape ``(n_obs, n_factors)`` (a 1-D array is one factor).
    regressor
        ``"gbt"``: one :class:`sklearn.ensemble.GradientBoostingRegressor` (default settings,
        ``random_state=seed``) per factor; importance = its impurity-based ``feature_importances_``
        (non-negative, summing to one per factor unless no split was made).
        ``"lasso"``: one lasso per factor on standardised codes and standardised factor; importance =
        ``|coef|``. The penalty is chosen by :class:`sklearn.linear_model.LassoCV` (5-fold, default path)
        unless ``lasso_alpha`` is given, in which case :class:`sklearn.linear_model.Lasso` with that
        ``alpha`` is used.
    test_size
        Fraction of points held out (random split drawn with ``numpy.random.default_rng(seed)``) on which the
        informativeness is computed; the importances come from the regressors fitted on the rest.
    seed
        Seed of the train/test split and of the regressors.
    min_points
        A :class:`UserWarning` is issued if ``n_obs < min_points``: DCI from few points is noisy (the
        reference implementation of the sparse VAE computed it on 16 points).
    lasso_alpha
        Fixed lasso penalty (only for ``regressor="lasso"``); ``None`` selects it by cross-validation.

    Returns
    -------
    DCIResult
        ``disentanglement``, ``completeness``, ``informativeness`` (mean held-out ``R^2``), the importance
        matrix ``(n_codes, n_factors)`` and per-code / per-factor values.

    Notes
    -----
    Exactly as computed:

    1. Split the points at random into a train part and a held-out part of ``round(test_size * n_obs)``
       points (at least one point in each).
    2. Standardise codes and factors with train-split means and standard deviations (a constant code is set
       to zero: it is an inactive factor and receives zero importance).
    3. For each factor ``j``, fit the regressor predicting factor ``j`` from all codes on the train split;
       ``R[i, j]`` = importance of code ``i`` (see ``regressor``).
    4. ``D``, ``C`` from ``R`` exactly as in :func:`dci_from_importance`:
       ``D_i = 1 - H_{n_factors}(R_i. / sum_j R_ij)``, ``D = sum_i rho_i D_i`` with
       ``rho_i = sum_j R_ij / sum_ij R_ij``; ``C_j = 1 - H_{n_codes}(R_.j / sum_i R_ij)``,
       ``C = mean_j C_j`` (factors weighted equally). All-zero ``R`` gives ``D = C = 0``.
    5. Informativeness of factor ``j`` = held-out ``R^2 = 1 - SSE / SST`` of its regressor on the test split
       (in standardised units, which does not change ``R^2``); ``informativeness`` is the mean over factors.
       This is ``R^2``, not ``1 - NRMSE``; Eastwood & Williams report the prediction error itself.

    Examples
    --------
    >>> import numpy as np
    >>> from scsparse.generic.metrics import dci_disentanglement
    >>> rng = np.random.default_rng(0)
    >>> factors = rng.normal(size=(1000, 2))
    >>> codes = np.column_stack([factors[:, 1], np.zeros(1000), factors[:, 0]])  # permuted + inactive
    >>> res = dci_disentanglement(codes, factors, regressor="lasso")
    >>> round(res.disentanglement, 6), round(res.completeness, 6)
    (1.0, 1.0)
    >>> res.importance.shape
    (3, 2)
    """
    codes_a = np.asarray(codes, dtype=np.float64)
    factors_a = np.asarray(factors, dtype=np.float64)
    if factors_a.ndim == 1:
        factors_a = factors_a[:, None]
    if codes_a.ndim == 1:
        codes_a = codes_a[:, None]
    if codes_a.ndim != 2 or factors_a.ndim != 2:
        raise ValueError("codes and factors must be 2-D arrays (n_obs, n_codes) and (n_obs, n_factors)")
    if codes_a.shape[0] != factors_a.shape[0]:
        raise ValueError(
            f"codes and factors must have the same number of rows, got {codes_a.shape[0]} and {factors_a.shape[0]}"
        )
    if codes_a.shape[1] == 0 or factors_a.shape[1] == 0:
        raise ValueError("codes and factors need at least one column each")
    if not (np.all(np.isfinite(codes_a)) and np.all(np.isfinite(factors_a))):
        raise ValueError("codes and factors must be finite")
    if regressor not in ("gbt", "lasso"):
        raise ValueError(f"regressor must be 'gbt' or 'lasso', got {regressor!r}")
    if not 0.0 < test_size < 1.0:
        raise ValueError(f"test_size must be in (0, 1), got {test_size}")

    n_obs = codes_a.shape[0]
    if n_obs < 3:
        raise ValueError(f"need at least 3 points, got {n_obs}")
    if n_obs < min_points:
        warnings.warn(
            f"DCI computed on {n_obs} points (< min_points={min_points}); the score is noisy with few "
            "points (the sparse VAE reference code used 16). Use at least 1000 points.",
            UserWarning,
            stacklevel=2,
        )

    rng = np.random.default_rng(seed)
    n_test = min(max(int(round(test_size * n_obs)), 1), n_obs - 2)
    perm = rng.permutation(n_obs)
    test_idx, train_idx = perm[:n_test], perm[n_test:]
    c_tr, c_te = _standardise(codes_a[train_idx], codes_a[test_idx])
    f_tr, f_te = _standardise(factors_a[train_idx], factors_a[test_idx])

    n_codes, n_factors = codes_a.shape[1], factors_a.shape[1]
    R = np.zeros((n_codes, n_factors), dtype=np.float64)
    info = np.zeros(n_factors, dtype=np.float64)
    for j in range(n_factors):
        y_tr, y_te = f_tr[:, j], f_te[:, j]
        if regressor == "gbt":
            from sklearn.ensemble import GradientBoostingRegressor

            model = GradientBoostingRegressor(random_state=seed)
            model.fit(c_tr, y_tr)
            imp = np.asarray(model.feature_importances_, dtype=np.float64)
        else:
            from sklearn.linear_model import Lasso, LassoCV

            if lasso_alpha is None:
                model = LassoCV(cv=5, random_state=seed, max_iter=10_000)
            else:
                model = Lasso(alpha=lasso_alpha, random_state=seed, max_iter=10_000)
            model.fit(c_tr, y_tr)
            imp = np.abs(np.asarray(model.coef_, dtype=np.float64).ravel())
        imp = np.where(np.isfinite(imp), imp, 0.0)
        R[:, j] = imp
        info[j] = _r2(y_te, np.asarray(model.predict(c_te), dtype=np.float64))

    base = dci_from_importance(R)
    return DCIResult(
        disentanglement=base.disentanglement,
        completeness=base.completeness,
        informativeness=float(np.mean(info)),
        importance=R,
        disentanglement_per_code=base.disentanglement_per_code,
        completeness_per_factor=base.completeness_per_factor,
        informativeness_per_factor=info,
        code_weights=base.code_weights,
        n_train=int(train_idx.size),
        n_test=int(test_idx.size),
        regressor=regressor,
    )
