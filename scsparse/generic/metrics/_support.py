"""Recovery of the support of the factor-to-feature matrix ``W``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scsparse.results import matched_partners

__all__ = ["SupportConfusion", "estimated_support", "support_confusion", "support_fscore"]


@dataclass(frozen=True, eq=False)
class SupportConfusion:
    """Confusion counts of an estimated support against the true support (see :func:`support_confusion`).

    Attributes
    ----------
    tp
        Entries selected in the estimate and in the (embedded) truth.
    fp
        Entries selected in the estimate but not in the truth.
    fn
        Entries in the truth that the estimate did not select.
    precision
        ``tp / (tp + fp)``.
    recall
        ``tp / (tp + fn)``.
    f1
        ``2 tp / (2 tp + fp + fn)``.
    column_match
        For each true factor ``j``, the estimated column it was compared with (length ``K_true``).
    """

    tp: int
    fp: int
    fn: int
    precision: float
    recall: float
    f1: float
    column_match: np.ndarray


def estimated_support(
    W_est: np.ndarray,
    *,
    pip: np.ndarray | None = None,
    w_threshold: float = 0.01,
    pip_threshold: float = 0.5,
) -> np.ndarray:
    """Boolean support of an estimated ``W`` after the common post-hoc thresholding.

    Parameters
    ----------
    W_est
        Estimated factor-to-feature matrix, shape ``(G, K_est)``.
    pip
        Optional posterior inclusion probabilities ``p*`` of the same shape.
    w_threshold
        Entries with ``|W_est| < w_threshold`` are set to zero.
    pip_threshold
        If ``pip`` is given, entries with ``pip < pip_threshold`` are set to zero as well.

    Returns
    -------
    numpy.ndarray
        ``(|W_est| >= w_threshold) & (pip >= pip_threshold)`` (the second factor only if ``pip`` is given),
        boolean of shape ``(G, K_est)``.

    Examples
    --------
    >>> import numpy as np
    >>> from scsparse.generic.metrics import estimated_support
    >>> estimated_support(np.array([[0.5, 0.001], [0.2, -0.3]]), pip=np.array([[0.9, 0.9], [0.4, 0.6]]))
    array([[ True, False],
           [False,  True]])
    """
    W = np.asarray(W_est, dtype=np.float64)
    if W.ndim != 2:
        raise ValueError(f"W_est must be 2-D (G, K_est), got shape {W.shape}")
    support = np.abs(W) >= w_threshold
    if pip is not None:
        p = np.asarray(pip, dtype=np.float64)
        if p.shape != W.shape:
            raise ValueError(f"pip must have the shape of W_est {W.shape}, got {p.shape}")
        support &= p >= pip_threshold
    return support


def _ratio(num: int, den: int, both_empty: bool) -> float:
    """``num / den``; a zero denominator gives 1 if both supports are empty, else 0."""
    if den == 0:
        return 1.0 if both_empty else 0.0
    return num / den


def support_confusion(
    W_est: np.ndarray,
    W_true_support: np.ndarray,
    *,
    pip: np.ndarray | None = None,
    w_threshold: float = 0.01,
    pip_threshold: float = 0.5,
    column_match: np.ndarray | None = None,
) -> SupportConfusion:
    """Confusion counts, precision, recall and F-score of the estimated support of ``W``.

    Parameters
    ----------
    W_est
        Estimated factor-to-feature matrix, shape ``(G, K_est)`` (genes/features in rows).
    W_true_support
        True support, boolean (or 0/1) of shape ``(G, K_true)`` with ``K_true <= K_est``.
    pip
        Optional posterior inclusion probabilities of shape ``(G, K_est)``.
    w_threshold
        Entries with ``|W_est| < w_threshold`` are not selected.
    pip_threshold
        If ``pip`` is given, entries with ``pip < pip_threshold`` are not selected.
    column_match
        Length ``K_true``, distinct integers: true factor ``j`` is compared with estimated column
        ``column_match[j]`` (e.g. from :func:`match_factors` on the codes). If ``None``, the assignment that
        maximises the F-score is used (see Notes): a favourable (optimistic) choice, since it looks at the
        supports themselves.

    Returns
    -------
    SupportConfusion
        ``tp``, ``fp``, ``fn``, ``precision``, ``recall``, ``f1`` and the ``column_match`` used.

    Notes
    -----
    Exactly as computed:

    1. Estimated support ``S = (|W_est| >= w_threshold) & (pip >= pip_threshold)`` (the ``pip`` part only
       when ``pip`` is given), shape ``(G, K_est)``.
    2. The truth is embedded into a ``(G, K_est)`` boolean matrix ``T`` that is all-False except
       ``T[:, column_match[j]] = W_true_support[:, j]``. Hence every selected entry of an estimated column
       that no true factor is matched to counts as a false positive.
    3. ``tp = sum(S & T)``, ``fp = sum(S & ~T)``, ``fn = sum(~S & T)``;
       ``precision = tp / (tp + fp)``, ``recall = tp / (tp + fn)``, ``f1 = 2 tp / (2 tp + fp + fn)``.
       A zero denominator gives 1.0 if both ``S`` and the truth are empty, else 0.0.
    4. Automatic matching (``column_match=None``): since ``2 tp + fp + fn = |S| + |T|`` does not depend on
       the assignment, the F-score is maximised by maximising ``tp``, i.e. the summed overlap
       ``|S[:, k] & truth[:, j]|`` of matched pairs; this linear assignment problem is solved exactly with
       :func:`scsparse.results.match_pairs`.

    Examples
    --------
    >>> import numpy as np
    >>> from scsparse.generic.metrics import support_confusion
    >>> truth = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], dtype=bool)
    >>> W = np.array([[0.0, 0.9], [0.0, 0.8], [0.7, 0.5], [0.0, 0.0]])  # columns swapped, 1 FP, 1 FN
    >>> res = support_confusion(W, truth)
    >>> res.tp, res.fp, res.fn, res.column_match.tolist()
    (3, 1, 1, [1, 0])
    >>> round(res.f1, 4)
    0.75
    """
    S = estimated_support(W_est, pip=pip, w_threshold=w_threshold, pip_threshold=pip_threshold)
    truth = np.asarray(W_true_support)
    if truth.ndim != 2:
        raise ValueError(f"W_true_support must be 2-D (G, K_true), got shape {truth.shape}")
    truth = truth.astype(bool)
    G, k_est = S.shape
    if truth.shape[0] != G:
        raise ValueError(f"W_est has {G} rows but W_true_support has {truth.shape[0]}")
    k_true = truth.shape[1]
    if k_true > k_est:
        raise ValueError(f"need K_est >= K_true, got K_est={k_est} < K_true={k_true}")

    if column_match is None:
        overlap = S.astype(np.int64).T @ truth.astype(np.int64)  # (K_est, K_true)
        match = matched_partners(overlap, of="columns")[0]  # every true factor has a code: K_est >= K_true
    else:
        match = np.asarray(column_match, dtype=np.int64).ravel()
        if match.shape != (k_true,):
            raise ValueError(f"column_match must have length K_true={k_true}, got {match.size}")
        if np.any(match < 0) or np.any(match >= k_est):
            raise ValueError(f"column_match entries must lie in [0, {k_est})")
        if np.unique(match).size != k_true:
            raise ValueError("column_match entries must be distinct")

    T = np.zeros((G, k_est), dtype=bool)
    T[:, match] = truth
    tp = int(np.sum(S & T))
    fp = int(np.sum(S & ~T))
    fn = int(np.sum(~S & T))
    both_empty = tp + fp + fn == 0
    return SupportConfusion(
        tp=tp,
        fp=fp,
        fn=fn,
        precision=_ratio(tp, tp + fp, both_empty),
        recall=_ratio(tp, tp + fn, both_empty),
        f1=_ratio(2 * tp, 2 * tp + fp + fn, both_empty),
        column_match=match,
    )


def support_fscore(
    W_est: np.ndarray,
    W_true_support: np.ndarray,
    *,
    pip: np.ndarray | None = None,
    w_threshold: float = 0.01,
    pip_threshold: float = 0.5,
    column_match: np.ndarray | None = None,
) -> float:
    """F-score of the estimated support of ``W`` against the true support.

    Parameters
    ----------
    W_est
        Estimated factor-to-feature matrix, shape ``(G, K_est)``.
    W_true_support
        True support, boolean of shape ``(G, K_true)``, ``K_true <= K_est``.
    pip
        Optional posterior inclusion probabilities of shape ``(G, K_est)``.
    w_threshold
        Entries with ``|W_est| < w_threshold`` are not selected.
    pip_threshold
        If ``pip`` is given, entries with ``pip < pip_threshold`` are not selected.
    column_match
        True factor ``j`` is compared with estimated column ``column_match[j]``; ``None`` picks the
        F-score-maximising assignment (favourable to the method).

    Returns
    -------
    float
        ``2 TP / (2 TP + FP + FN)``, computed exactly as in :func:`support_confusion` (its ``f1``).

    Examples
    --------
    >>> import numpy as np
    >>> from scsparse.generic.metrics import support_fscore
    >>> truth = np.array([[1, 0], [0, 1], [1, 1]], dtype=bool)
    >>> W = np.array([[0.5, 0.0, 0.3], [0.0, 0.4, 0.0], [0.2, 0.6, 0.0]])  # extra column 2 -> 1 FP
    >>> support_fscore(W, truth, column_match=np.array([0, 1]))
    0.8888888888888888
    """
    return support_confusion(
        W_est,
        W_true_support,
        pip=pip,
        w_threshold=w_threshold,
        pip_threshold=pip_threshold,
        column_match=column_match,
    ).f1
