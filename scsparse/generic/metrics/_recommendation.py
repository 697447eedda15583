"""Ranking metrics for implicit feedback and the fold-in protocol of Liang et al. (2018).

Recall@R and NDCG@k as in "Variational Autoencoders for Collaborative Filtering" (Liang, Krishnan,
Hoffman & Jebara, WWW 2018), the protocol of the MovieLens experiment of Moran et al. (2022): for each
held-out user a fraction of the positive items is hidden, the model sees the rest (the fold-in part),
and the hidden items are ranked among all the items the model did not see.

Ties in the scores are resolved by averaging over all orders of the tied items (the expected value
under uniformly random tie-breaking, the convention of :func:`sklearn.metrics.ndcg_score`), so the
metrics do not depend on the order of the columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from scsparse.generic.models import ArrayModel

__all__ = ["FoldInSplit", "fold_in_evaluate", "fold_in_split", "ndcg_at_k", "recall_at_r"]


def _dense(a: Any) -> np.ndarray:
    return np.asarray(a.toarray() if hasattr(a, "toarray") else a)


def _check_inputs(scores: Any, heldout: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(_dense(scores), dtype=np.float64)
    rel = _dense(heldout) > 0
    if s.ndim != 2 or s.shape != rel.shape:
        raise ValueError(f"scores and heldout must be 2-d of the same shape, got {s.shape} and {rel.shape}.")
    if np.isnan(s).any():
        raise ValueError("scores contain NaN; use -inf for items that must not be ranked.")
    if int(k) < 1:
        raise ValueError(f"The cut-off must be a positive integer, got {k}.")
    return s, rel


def _tie_averaged_relevance(scores: np.ndarray, relevant: np.ndarray, k: int) -> np.ndarray:
    """Expected relevance at ranks ``0 .. k-1`` under random tie-breaking, shape ``(n_users, k')``.

    Items are sorted by decreasing score; every rank inside a group of tied scores gets the mean
    relevance of the group. ``k' = min(k, n_items)``.
    """
    n_users, n_items = scores.shape
    order = np.argsort(-scores, axis=1, kind="stable")
    s_sorted = np.take_along_axis(scores, order, axis=1)
    r_sorted = np.take_along_axis(relevant, order, axis=1).astype(np.float64)
    new_group = np.ones((n_users, n_items), dtype=bool)
    new_group[:, 1:] = s_sorted[:, 1:] != s_sorted[:, :-1]  # -inf == -inf: seen items tie with each other
    group = np.cumsum(new_group, axis=1) - 1 + (np.arange(n_users) * n_items)[:, None]
    flat = group.ravel()
    sums = np.bincount(flat, weights=r_sorted.ravel(), minlength=n_users * n_items)
    counts = np.bincount(flat, minlength=n_users * n_items)
    mean_rel = (sums[flat] / counts[flat]).reshape(n_users, n_items)
    return mean_rel[:, : min(int(k), n_items)]


def recall_at_r(scores: Any, heldout: Any, r: int) -> np.ndarray:
    """Recall@R per user with the denominator ``min(R, number of held-out items)`` (Liang et al. 2018).

    For user ``u`` with held-out (relevant) items ``I_u`` and the ``R`` items of highest score ``T_u``:

    ``Recall@R(u) = |T_u ∩ I_u| / min(R, |I_u|)``

    which is 1 when the top ``R`` is filled with held-out items, whatever ``|I_u|``. Ties are averaged:
    a group of tied items that straddles the cut-off contributes its share of relevant items times the
    number of its items inside the top ``R`` (the expected count under random tie-breaking).

    Items the user has already seen (the fold-in items) must be excluded by the caller by setting their
    scores to ``-inf``; they then rank after every finite score. Such items should not be held out: if
    fewer than ``R`` items have a finite score, ``-inf`` items fill the remaining places as one tied
    group.

    Parameters
    ----------
    scores
        Predicted scores, shape ``(n_users, n_items)``; higher ranks first; no NaN.
    heldout
        Held-out items, same shape; an entry is relevant when it is ``> 0`` (binary relevance). Dense or
        scipy sparse.
    r
        Cut-off ``R``.

    Returns
    -------
    numpy.ndarray
        Recall@R of every user, shape ``(n_users,)``; NaN for users without held-out items. The mean
        over users (``np.nanmean``) is the caller's.

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.array([[0.9, 0.8, 0.1, -np.inf], [0.1, 0.2, 0.3, 0.4]])
    >>> heldout = np.array([[1, 0, 1, 0], [1, 0, 0, 0]])
    >>> recall_at_r(scores, heldout, r=2)  # user 0: 1 hit / min(2, 2); user 1: 0 hits / min(2, 1)
    array([0.5, 0. ])
    >>> recall_at_r(scores, heldout, r=1)  # user 0: 1 hit / min(1, 2)
    array([1., 0.])
    """
    s, rel = _check_inputs(scores, heldout, r)
    hits = _tie_averaged_relevance(s, rel, r).sum(1)
    n_rel = rel.sum(1)
    out = np.full(s.shape[0], np.nan)
    ok = n_rel > 0
    out[ok] = hits[ok] / np.minimum(int(r), n_rel[ok])
    return out


def ndcg_at_k(scores: Any, heldout: Any, k: int) -> np.ndarray:
    """NDCG@k per user with binary relevance and a ``log2`` discount (Liang et al. 2018).

    ``DCG@k(u) = sum_{i=1}^{k} rel(u, i) / log2(i + 1)``, with ``rel(u, i) = 1`` when the item at rank
    ``i`` is held out for ``u``; ``NDCG@k(u) = DCG@k(u) / IDCG@k(u)`` where
    ``IDCG@k(u) = sum_{i=1}^{min(k, |I_u|)} 1 / log2(i + 1)`` is the DCG of the ideal ranking. Ties are
    averaged (every rank in a group of tied scores gets the group's mean relevance), which is
    :func:`sklearn.metrics.ndcg_score` with ``ignore_ties=False`` for binary relevance.

    Items the user has already seen (the fold-in items) must be excluded by the caller by setting their
    scores to ``-inf`` (see :func:`recall_at_r`).

    Parameters
    ----------
    scores
        Predicted scores, shape ``(n_users, n_items)``; no NaN.
    heldout
        Held-out items, same shape; relevant when ``> 0``. Dense or scipy sparse.
    k
        Cut-off.

    Returns
    -------
    numpy.ndarray
        NDCG@k of every user, shape ``(n_users,)``; NaN for users without held-out items.

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.array([[0.9, 0.8, 0.7, -np.inf]])
    >>> heldout = np.array([[0, 1, 0, 0]])
    >>> ndcg_at_k(scores, heldout, k=3)  # (1 / log2 3) / (1 / log2 2)
    array([0.63092975])
    """
    s, rel = _check_inputs(scores, heldout, k)
    gains = _tie_averaged_relevance(s, rel, k)
    discount = 1.0 / np.log2(np.arange(gains.shape[1]) + 2.0)
    dcg = gains @ discount
    n_rel = rel.sum(1)
    cum = np.concatenate([[0.0], np.cumsum(discount)])
    idcg = cum[np.minimum(n_rel, gains.shape[1])]
    out = np.full(s.shape[0], np.nan)
    ok = n_rel > 0
    out[ok] = dcg[ok] / idcg[ok]
    return out


class FoldInSplit(NamedTuple):
    """The two parts of each test user's items (see :func:`fold_in_split`).

    Attributes
    ----------
    fold_in
        What the model sees: the original values with the hidden items set to 0.
    heldout
        The hidden items (original values), 0 elsewhere; ``fold_in + heldout`` is the input.
    evaluated
        Boolean per user: ``True`` when some items were hidden. Users with fewer than ``min_items``
        positives keep all their items in ``fold_in`` and are flagged ``False``.
    """

    fold_in: np.ndarray
    heldout: np.ndarray
    evaluated: np.ndarray


def fold_in_split(X: Any, fraction: float = 0.2, seed: int = 0, min_items: int = 5) -> FoldInSplit:
    """Hide a random fraction of each user's positive items (Liang et al. 2018).

    For every user (row) with ``n >= min_items`` positive entries (``X > 0``), ``m = floor(fraction * n)``
    of them (at least 1 and at most ``n - 1``), drawn uniformly without replacement, move to the
    held-out part; the other entries stay in the fold-in part. Users with fewer than ``min_items``
    positives keep everything in the fold-in part and are flagged in ``evaluated``.

    Parameters
    ----------
    X
        Users x items, dense or scipy sparse (ratings, counts or 0/1).
    fraction
        Fraction of the positive items to hide, in (0, 1).
    seed
        Seed of the random choice.
    min_items
        Users with fewer positives are not split.

    Returns
    -------
    FoldInSplit
        ``(fold_in, heldout, evaluated)``, unpackable as a tuple.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1, 1, 1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0, 0, 0, 0]])
    >>> fold_in, heldout, evaluated = fold_in_split(X, fraction=0.2, seed=0)
    >>> heldout.sum(1), evaluated  # floor(0.2 * 5) = 1 item hidden for user 0; user 1 has < 5
    (array([1, 0]), array([ True, False]))
    >>> bool((fold_in + heldout == X).all())
    True
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must be in (0, 1), got {fraction}.")
    x = _dense(X)
    if x.ndim != 2:
        raise ValueError(f"X must be 2-d (users x items), got shape {x.shape}.")
    rng = np.random.default_rng(seed)
    fold_in, heldout = x.copy(), np.zeros_like(x)
    evaluated = np.zeros(x.shape[0], dtype=bool)
    for u in range(x.shape[0]):
        items = np.flatnonzero(x[u] > 0)
        n = items.size
        if n < max(int(min_items), 2):
            continue
        m = min(max(int(np.floor(fraction * n)), 1), n - 1)
        hidden = rng.choice(items, size=m, replace=False)
        heldout[u, hidden] = x[u, hidden]
        fold_in[u, hidden] = 0
        evaluated[u] = True
    return FoldInSplit(fold_in, heldout, evaluated)


def fold_in_evaluate(
    model: ArrayModel,
    X_test: Any,
    fraction: float = 0.2,
    k: tuple[int, ...] = (5, 10, 20),
    seed: int = 0,
    min_items: int = 5,
) -> dict[str, float]:
    """Recall@k and NDCG@k of a fitted model on held-out users with the fold-in protocol.

    1. :func:`fold_in_split` hides ``fraction`` of each test user's positive items;
    2. the model sees the fold-in part only: ``scores = model.predict_mean(fold_in)`` (for the
       autoencoders the decoder mean at the posterior mean of the factors; for NMF the reconstruction);
    3. the fold-in items are excluded by setting their scores to ``-inf``;
    4. :func:`recall_at_r` and :func:`ndcg_at_k` rank the hidden items; the means are over the users
       flagged ``evaluated``.

    Parameters
    ----------
    model
        A fitted model with ``predict_mean`` (see :class:`~scsparse.generic.models.ArrayModel`).
    X_test
        Test users x items (users not seen in training).
    fraction, seed, min_items
        See :func:`fold_in_split`.
    k
        Cut-offs; both metrics are computed at every one.

    Returns
    -------
    dict
        ``{"recall@5": ..., "ndcg@5": ..., ..., "n_users": number of evaluated users}`` (means over
        the evaluated users). ``k=(5, 10)`` gives the Recall@5 and NDCG@10 of Moran et al. (2022).

    Examples
    --------
    >>> from scsparse.generic.metrics import fold_in_evaluate
    >>> res = fold_in_evaluate(model, X_test, k=(5, 10))  # doctest: +SKIP
    >>> res["recall@5"], res["ndcg@10"]  # doctest: +SKIP
    """
    split = fold_in_split(X_test, fraction=fraction, seed=seed, min_items=min_items)
    users = np.flatnonzero(split.evaluated)
    if users.size == 0:
        raise ValueError(f"No test user has at least {min_items} positive items to split.")
    fold_in = split.fold_in[users]
    scores = np.asarray(model.predict_mean(fold_in.astype(np.float32)), dtype=np.float64)
    scores[fold_in > 0] = -np.inf
    heldout = split.heldout[users]
    out: dict[str, float] = {}
    for cut in k:
        out[f"recall@{cut}"] = float(np.nanmean(recall_at_r(scores, heldout, cut)))
        out[f"ndcg@{cut}"] = float(np.nanmean(ndcg_at_k(scores, heldout, cut)))
    out["n_users"] = float(users.size)
    return out
