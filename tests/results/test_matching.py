"""The one matcher of factors across fits: scsparse.results.match_pairs and matched_partners."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from scsparse.results import match_pairs, matched_partners


def _planted(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A score whose best pairing is a known permutation: strong on (i, perm[i]), weak elsewhere."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    score = rng.uniform(0.0, 0.3, size=(n, n))
    score[np.arange(n), perm] = rng.uniform(0.7, 1.0, size=n)
    return score, perm


def test_a_planted_permutation_is_recovered():
    score, perm = _planted(8)
    rows, cols = match_pairs(score)
    assert rows.tolist() == list(range(8)) and cols.tolist() == perm.tolist()
    partner, matched = matched_partners(score)
    assert partner.tolist() == perm.tolist()
    np.testing.assert_array_equal(matched, score[np.arange(8), perm])
    columns, _ = matched_partners(score, of="columns")
    assert columns[perm].tolist() == list(range(8))  # the inverse permutation


def test_the_summed_score_is_maximal_not_greedy():
    # greedy would take 0.9 for row 0 and leave row 1 with 0.1; the best pairing sums 0.8 + 0.8
    score = np.array([[0.9, 0.8], [0.8, 0.1]])
    rows, cols = match_pairs(score)
    assert cols.tolist() == [1, 0] and score[rows, cols].sum() == pytest.approx(1.6)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_unequal_sizes_leave_the_larger_side_partly_unmatched_counting_zero(shape):
    rng = np.random.default_rng(1)
    score = rng.uniform(0.1, 1.0, size=shape)
    rows, cols = match_pairs(score)
    assert len(rows) == len(cols) == min(shape) and np.all(np.diff(rows) > 0)
    for of, n in (("rows", shape[0]), ("columns", shape[1])):
        partner, matched = matched_partners(score, of=of)
        assert partner.shape == matched.shape == (n,)
        unmatched = partner < 0
        assert unmatched.sum() == n - min(shape)
        assert np.all(matched[unmatched] == 0.0) and np.all(matched[~unmatched] > 0.0)
        # a mean over one side counts its unmatched factors as no agreement
        assert matched.mean() == pytest.approx(score[rows, cols].sum() / n)


def test_the_pairing_is_scipys_maximising_assignment_on_ties_too():
    rng = np.random.default_rng(2)
    for _ in range(200):
        shape = tuple(rng.integers(1, 7, size=2))
        score = rng.integers(0, 3, size=shape).astype(float)  # many ties
        rows, cols = match_pairs(score)
        expected = linear_sum_assignment(-score)
        assert rows.tolist() == expected[0].tolist() and cols.tolist() == expected[1].tolist()


def test_bad_scores_are_refused():
    with pytest.raises(ValueError, match="2-d"):
        match_pairs(np.ones(3))
    with pytest.raises(ValueError):
        match_pairs(np.array([[np.nan, 1.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="'rows' or 'columns'"):
        matched_partners(np.ones((2, 2)), of="cols")
    rows, cols = match_pairs(np.zeros((0, 3)))
    assert rows.size == cols.size == 0
    assert matched_partners(np.zeros((0, 3)), of="columns")[0].tolist() == [-1, -1, -1]
