import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import ndcg_score

from scsparse.generic.metrics import FoldInSplit, fold_in_evaluate, fold_in_split, ndcg_at_k, recall_at_r

# --------------------------------------------------------------------------------------------------------
# Recall@R: hand-computed values


def test_recall_hand_values_and_denominator():
    scores = np.array(
        [
            [0.9, 0.8, 0.7, 0.6, 0.5],  # held out: items 1 and 4
            [0.1, 0.2, 0.3, 0.4, 0.5],  # held out: item 4 only (ranked first)
            [0.5, 0.4, 0.3, 0.2, 0.1],  # held out: items 0, 1, 2 (all three in top 3)
        ]
    )
    heldout = np.array([[0, 1, 0, 0, 1], [0, 0, 0, 0, 1], [1, 1, 1, 0, 0]])
    # R = 2: user 0 top {0, 1}: 1 hit / min(2, 2); user 1 top {4, 3}: 1 / min(2, 1); user 2: 2 / min(2, 3)
    np.testing.assert_allclose(recall_at_r(scores, heldout, 2), [0.5, 1.0, 1.0])
    # R = 4: user 0 top {0, 1, 2, 3}: 1 / 2; user 1: 1 / 1; user 2: 3 / 3
    np.testing.assert_allclose(recall_at_r(scores, heldout, 4), [0.5, 1.0, 1.0])
    # R = 5 > n_items is fine: everything ranked
    np.testing.assert_allclose(recall_at_r(scores, heldout, 10), [1.0, 1.0, 1.0])


def test_recall_excludes_seen_items_with_minus_inf():
    # item 0 has the highest model score but was seen (fold-in): the caller sets -inf
    scores = np.array([[-np.inf, 0.8, 0.7, 0.1]])
    heldout = np.array([[0, 0, 1, 0]])
    np.testing.assert_allclose(recall_at_r(scores, heldout, 1), [0.0])  # top-1 is item 1
    np.testing.assert_allclose(recall_at_r(scores, heldout, 2), [1.0])  # top-2 {1, 2}: 1 / min(2, 1)


def test_recall_ties_are_averaged():
    # items 1, 2, 3 tie for the 2nd place; one of them is held out; R = 2 takes one of the three:
    # expected hits = 1 (item 0) + 1/3
    scores = np.array([[1.0, 0.5, 0.5, 0.5]])
    heldout = np.array([[1, 0, 1, 0]])
    np.testing.assert_allclose(recall_at_r(scores, heldout, 2), [(1 + 1 / 3) / 2])
    # column order does not matter
    perm = [3, 2, 0, 1]
    np.testing.assert_allclose(recall_at_r(scores[:, perm], heldout[:, perm], 2), [(1 + 1 / 3) / 2])


def test_recall_users_without_heldout_are_nan_and_sparse_input():
    scores = np.array([[0.3, 0.2, 0.1], [0.3, 0.2, 0.1]])
    heldout = sp.csr_matrix(np.array([[0, 0, 0], [0, 0, 2.0]]))  # ratings > 0 count as relevant
    out = recall_at_r(scores, heldout, 2)
    assert math.isnan(out[0])
    assert out[1] == 0.0
    assert recall_at_r(scores, heldout, 3)[1] == 1.0


def test_ranking_input_validation():
    with pytest.raises(ValueError, match="NaN"):
        recall_at_r(np.array([[np.nan, 1.0]]), np.array([[1, 0]]), 1)
    with pytest.raises(ValueError, match="same shape"):
        ndcg_at_k(np.zeros((2, 3)), np.zeros((2, 4)), 1)
    with pytest.raises(ValueError, match="positive"):
        ndcg_at_k(np.zeros((2, 3)), np.zeros((2, 3)), 0)


# --------------------------------------------------------------------------------------------------------
# NDCG@k: hand values and scikit-learn


def test_ndcg_hand_values():
    scores = np.array([[0.9, 0.8, 0.7, 0.6, -np.inf]])
    heldout = np.array([[0, 1, 0, 1, 0]])
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 / math.log2(2) + 1 / math.log2(3)
    np.testing.assert_allclose(ndcg_at_k(scores, heldout, 4), [dcg / idcg])
    # k = 2: only rank 2 counts; the ideal has both held-out items in the top 2
    np.testing.assert_allclose(ndcg_at_k(scores, heldout, 2), [(1 / math.log2(3)) / idcg])
    # k = 1 with a single held-out item ranked 1st is perfect
    np.testing.assert_allclose(ndcg_at_k(np.array([[0.1, 0.9]]), np.array([[0, 1]]), 1), [1.0])


def _sklearn_ndcg_per_user(scores: np.ndarray, heldout: np.ndarray, k: int) -> np.ndarray:
    # scikit-learn rejects infinite scores: replace -inf by a finite value below every finite score
    finite = scores[np.isfinite(scores)]
    low = (finite.min() if finite.size else 0.0) - 1.0
    s = np.where(np.isfinite(scores), scores, low)
    return np.array([ndcg_score(heldout[[u]], s[[u]], k=k) for u in range(scores.shape[0])])


@pytest.mark.parametrize("seed", range(6))
def test_ndcg_matches_sklearn_on_random_binary_cases(seed):
    rng = np.random.default_rng(seed)
    n_users, n_items = 25, 30
    seen = rng.uniform(size=(n_users, n_items)) < 0.3
    heldout = ((rng.uniform(size=(n_users, n_items)) < 0.2) & ~seen).astype(int)
    heldout[0] = 0
    heldout[0, 3] = 0 if seen[0, 3] else 1  # at least one user with a single positive (or none)
    # coarse scores: many ties, including ties across the cut-off
    scores = np.round(rng.uniform(size=(n_users, n_items)), 1)
    scores[seen] = -np.inf
    scores[1] = -np.inf  # degenerate user: every score is -inf (one tied group), two positives
    heldout[1] = 0
    heldout[1, :2] = 1
    has_pos = heldout.sum(1) > 0
    for k in (1, 3, 5, 10, 30):
        ours = ndcg_at_k(scores, heldout, k)
        ref = _sklearn_ndcg_per_user(scores, heldout, k)
        np.testing.assert_allclose(ours[has_pos], ref[has_pos], rtol=1e-12, atol=1e-12)
        assert np.all(np.isnan(ours[~has_pos]))
        # the batched mean over users with positives equals scikit-learn's mean over the same users
        finite_scores = np.nan_to_num(scores[has_pos], neginf=-10.0)
        assert np.nanmean(ours) == pytest.approx(ndcg_score(heldout[has_pos], finite_scores, k=k), abs=1e-12)


def test_ndcg_no_ties_matches_sklearn_ignore_ties():
    rng = np.random.default_rng(7)
    scores = rng.normal(size=(40, 20))
    heldout = (rng.uniform(size=(40, 20)) < 0.25).astype(int)
    heldout[:, 0] = 1
    for k in (1, 5, 20):
        ref = np.array([ndcg_score(heldout[[u]], scores[[u]], k=k, ignore_ties=True) for u in range(40)])
        np.testing.assert_allclose(ndcg_at_k(scores, heldout, k), ref, atol=1e-12)


def test_recall_at_r_is_the_liang_formula_without_ties():
    rng = np.random.default_rng(3)
    scores = rng.normal(size=(30, 15))
    heldout = rng.uniform(size=(30, 15)) < 0.3
    heldout[:, 0] = True
    for r in (1, 3, 7):
        top = np.argsort(-scores, axis=1)[:, :r]
        hits = np.take_along_axis(heldout, top, axis=1).sum(1)
        expected = hits / np.minimum(r, heldout.sum(1))
        np.testing.assert_allclose(recall_at_r(scores, heldout, r), expected)


# --------------------------------------------------------------------------------------------------------
# fold-in protocol


def test_fold_in_split_properties():
    rng = np.random.default_rng(0)
    X = (rng.uniform(size=(50, 40)) < 0.3).astype(float) * rng.integers(1, 5, size=(50, 40))
    X[0] = 0
    X[0, :4] = 3.0  # 4 positives: below min_items, not split
    split = fold_in_split(X, fraction=0.2, seed=1)
    assert isinstance(split, FoldInSplit)
    fold_in, heldout, evaluated = split
    np.testing.assert_array_equal(fold_in + heldout, X)
    assert not np.any((fold_in > 0) & (heldout > 0))
    n_pos = (X > 0).sum(1)
    np.testing.assert_array_equal(evaluated, n_pos >= 5)
    expected_hidden = np.where(n_pos >= 5, np.floor(0.2 * n_pos), 0)
    np.testing.assert_array_equal((heldout > 0).sum(1), expected_hidden)
    assert heldout[0].sum() == 0 and not evaluated[0]
    # same seed, same split; another seed, another split
    again = fold_in_split(sp.csr_matrix(X), fraction=0.2, seed=1)
    np.testing.assert_array_equal(again.heldout, heldout)
    assert not np.array_equal(fold_in_split(X, fraction=0.2, seed=2).heldout, heldout)
    with pytest.raises(ValueError, match="fraction"):
        fold_in_split(X, fraction=1.0)


class _ConstantScores:
    """A 'model' that ranks every user's items by a fixed item score (e.g. popularity)."""

    def __init__(self, item_scores: np.ndarray) -> None:
        self.item_scores = item_scores
        self.seen: list[np.ndarray] = []

    def predict_mean(self, X: np.ndarray) -> np.ndarray:
        self.seen.append(np.array(X))
        return np.tile(self.item_scores, (X.shape[0], 1))


def test_fold_in_evaluate_plumbing():
    rng = np.random.default_rng(5)
    X = (rng.uniform(size=(60, 25)) < np.linspace(0.05, 0.6, 25)).astype(np.float32)
    popularity = X.mean(0) + 1e-3 * np.arange(25)  # distinct scores
    model = _ConstantScores(popularity)
    res = fold_in_evaluate(model, X, fraction=0.2, k=(5, 10), seed=3)
    assert set(res) == {"recall@5", "ndcg@5", "recall@10", "ndcg@10", "n_users"}
    # by hand: the same split, the fold-in items masked, means over the evaluated users
    fold_in, heldout, evaluated = fold_in_split(X, fraction=0.2, seed=3)
    np.testing.assert_array_equal(model.seen[0], fold_in[evaluated])  # the model saw the fold-in part only
    scores = np.tile(popularity, (evaluated.sum(), 1)).astype(np.float64)
    scores[fold_in[evaluated] > 0] = -np.inf
    assert res["n_users"] == evaluated.sum()
    assert res["recall@5"] == pytest.approx(np.mean(recall_at_r(scores, heldout[evaluated], 5)))
    assert res["ndcg@10"] == pytest.approx(np.mean(ndcg_at_k(scores, heldout[evaluated], 10)))
    # popularity beats anti-popularity on these data
    anti = fold_in_evaluate(_ConstantScores(-popularity), X, fraction=0.2, k=(5, 10), seed=3)
    assert res["recall@5"] > anti["recall@5"] and res["ndcg@10"] > anti["ndcg@10"]
    for value in res.values():
        assert np.isfinite(value)
