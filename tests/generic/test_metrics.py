import math
import warnings

import numpy as np
import pytest

from scsparse.generic.metrics import (
    DCIResult,
    SupportConfusion,
    dci_disentanglement,
    dci_from_importance,
    estimated_support,
    factor_correlation,
    match_factors,
    support_confusion,
    support_fscore,
)

# --------------------------------------------------------------------------------------------------------
# DCI: the pure formula on given importance matrices


def test_dci_from_importance_identity_with_inactive_code():
    res = dci_from_importance(np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]))
    assert isinstance(res, DCIResult)
    assert res.disentanglement == pytest.approx(1.0, abs=1e-12)
    assert res.completeness == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(res.code_weights, [0.5, 0.5, 0.0])
    assert res.disentanglement_per_code[2] == 0.0  # zero row: D_i = 0, weight 0
    assert math.isnan(res.informativeness)


def test_dci_from_importance_uniform_is_zero():
    res = dci_from_importance(np.array([[1.0, 1.0], [1.0, 1.0]]))
    assert res.disentanglement == pytest.approx(0.0, abs=1e-12)
    assert res.completeness == pytest.approx(0.0, abs=1e-12)


def test_dci_from_importance_nontrivial_by_hand():
    R = np.array([[3.0, 1.0], [0.0, 2.0], [1.0, 1.0]])

    def h(ps, base):
        return -sum(p * math.log(p) for p in ps if p > 0) / math.log(base)

    # disentanglement: rows normalised, entropy base n_factors = 2
    d0 = 1 - h([3 / 4, 1 / 4], 2)  # 0.188722...
    d1 = 1 - h([0.0, 1.0], 2)  # 1
    d2 = 1 - h([1 / 2, 1 / 2], 2)  # 0
    weights = [4 / 8, 2 / 8, 2 / 8]
    d = weights[0] * d0 + weights[1] * d1 + weights[2] * d2
    # completeness: columns normalised, entropy base n_codes = 3, factors averaged equally
    c0 = 1 - h([3 / 4, 0.0, 1 / 4], 3)
    c1 = 1 - h([1 / 4, 2 / 4, 1 / 4], 3)
    c = (c0 + c1) / 2

    assert d == pytest.approx(0.3443609, abs=1e-6)
    assert c == pytest.approx(0.2708726, abs=1e-6)

    res = dci_from_importance(R)
    np.testing.assert_allclose(res.disentanglement_per_code, [d0, d1, d2], atol=1e-12)
    np.testing.assert_allclose(res.completeness_per_factor, [c0, c1], atol=1e-12)
    np.testing.assert_allclose(res.code_weights, weights, atol=1e-12)
    assert res.disentanglement == pytest.approx(d, abs=1e-12)
    assert res.completeness == pytest.approx(c, abs=1e-12)


def test_dci_from_importance_all_zero_and_invalid():
    res = dci_from_importance(np.zeros((3, 2)))
    assert res.disentanglement == 0.0
    assert res.completeness == 0.0
    with pytest.raises(ValueError):
        dci_from_importance(np.array([[1.0, -1.0]]))
    with pytest.raises(ValueError):
        dci_from_importance(np.ones(3))


def test_dci_from_importance_single_factor():
    res = dci_from_importance(np.array([[2.0], [0.0]]))
    assert res.disentanglement == pytest.approx(1.0)
    # one factor spread over one code only: complete
    assert res.completeness == pytest.approx(1.0)


# --------------------------------------------------------------------------------------------------------
# DCI with fitted regressors


@pytest.fixture(scope="module")
def factors():
    return np.random.default_rng(0).normal(size=(1200, 2))


def test_dci_lasso_permuted_identity_is_exactly_one(factors):
    # codes = permuted factors (scaled, sign-flipped) + a constant (inactive) code
    n = factors.shape[0]
    codes = np.column_stack([-2.0 * factors[:, 1], np.full(n, 3.0), 0.5 * factors[:, 0]])
    res = dci_disentanglement(codes, factors, regressor="lasso")
    assert abs(res.disentanglement - 1.0) < 1e-6
    assert abs(res.completeness - 1.0) < 1e-6
    assert res.importance.shape == (3, 2)
    np.testing.assert_array_equal(res.importance[1], [0.0, 0.0])  # constant code: zero importance
    assert res.importance[0, 1] > 0 and res.importance[2, 0] > 0
    assert res.importance[0, 0] == 0 and res.importance[2, 1] == 0
    assert res.informativeness > 0.99
    assert res.n_train + res.n_test == n
    assert res.n_test == round(0.3 * n)


def test_dci_gbt_permuted_identity_is_high(factors):
    n = factors.shape[0]
    codes = np.column_stack([factors[:, 1], np.zeros(n), factors[:, 0]])
    res = dci_disentanglement(codes, factors, regressor="gbt")
    assert res.disentanglement > 0.95
    assert res.completeness > 0.95
    np.testing.assert_array_equal(res.importance[1], [0.0, 0.0])
    assert res.informativeness > 0.95


@pytest.mark.parametrize("regressor", ["lasso", "gbt"])
def test_dci_mixed_codes_is_low(factors, regressor):
    # every code carries both factors with equal weight: f1 = (c1 + c2) / 2, f2 = (c1 - c2) / 2, so each
    # factor needs both codes equally. Exact D = 0 only in the population (a random split makes the
    # sample importances slightly unequal), hence the tolerance.
    codes = np.column_stack([factors[:, 0] + factors[:, 1], factors[:, 0] - factors[:, 1]])
    res = dci_disentanglement(codes, factors, regressor=regressor)
    assert res.disentanglement < 0.3
    assert res.completeness < 0.3


def test_dci_deterministic(factors):
    codes = factors @ np.array([[1.0, 0.3], [0.2, 1.0]])
    a = dci_disentanglement(codes, factors, seed=3)
    b = dci_disentanglement(codes, factors, seed=3)
    np.testing.assert_array_equal(a.importance, b.importance)
    assert a.disentanglement == b.disentanglement


def test_dci_warns_below_min_points(factors):
    codes = factors[:200, ::-1]
    with pytest.warns(UserWarning, match="min_points"):
        dci_disentanglement(codes, factors[:200], regressor="lasso")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        dci_disentanglement(codes, factors[:200], regressor="lasso", min_points=100)
    assert not any("min_points" in str(w.message) for w in rec)


def test_dci_all_constant_codes_no_crash(factors):
    codes = np.ones((factors.shape[0], 3))
    for regressor in ("lasso", "gbt"):
        res = dci_disentanglement(codes, factors, regressor=regressor)
        assert res.disentanglement == 0.0
        assert res.completeness == 0.0
        np.testing.assert_array_equal(res.importance, 0.0)


def test_dci_input_validation(factors):
    with pytest.raises(ValueError):
        dci_disentanglement(factors[:10], factors)
    with pytest.raises(ValueError):
        dci_disentanglement(factors, factors, regressor="forest")


# --------------------------------------------------------------------------------------------------------
# matching


def test_match_factors_recovers_permutation_with_noise_columns():
    rng = np.random.default_rng(1)
    n = 2000
    z = rng.normal(size=(n, 2))
    est = np.column_stack(
        [
            rng.normal(size=n),  # noise
            2.0 * z[:, 1] + 0.1 * rng.normal(size=n),
            rng.normal(size=n),  # noise
            np.full(n, 7.0),  # inactive (constant)
            -z[:, 0] + 0.1 * rng.normal(size=n),  # sign flip is fine
        ]
    )
    np.testing.assert_array_equal(match_factors(est, z), [4, 1])
    # spearman is invariant to monotone transforms
    est_mono = est.copy()
    est_mono[:, 4] = np.exp(-z[:, 0])
    np.testing.assert_array_equal(match_factors(est_mono, z, method="spearman"), [4, 1])


def test_factor_correlation_by_hand_and_constant_columns():
    z = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]])
    est = np.column_stack([-z, np.ones(3)])
    corr = factor_correlation(est, z)
    # corr(z1, z2): centred (-1, 0, 1) and (0, -1, 1) -> 1 / (sqrt 2 * sqrt 2) = 0.5
    np.testing.assert_allclose(corr, [[1.0, 0.5], [0.5, 1.0], [0.0, 0.0]], atol=1e-12)
    assert np.all(np.isfinite(corr))


def test_match_factors_among_prefers_eligible_codes_and_falls_back():
    rng = np.random.default_rng(2)
    n = 1000
    z = rng.normal(size=(n, 2))
    est = np.column_stack(
        [
            z[:, 0],  # switched off, but tracks z1 exactly
            z[:, 0] + 0.5 * rng.normal(size=n),  # active, carries z1
            z[:, 1] + 0.1 * rng.normal(size=n),  # active, carries z2
        ]
    )
    np.testing.assert_array_equal(match_factors(est, z), [0, 2])
    np.testing.assert_array_equal(match_factors(est, z, among=np.array([False, True, True])), [1, 2])
    # fewer eligible codes than true factors: the eligible one is used, the best ineligible one fills in
    np.testing.assert_array_equal(match_factors(est, z, among=np.array([False, False, True])), [0, 2])
    with pytest.raises(ValueError, match="boolean mask of length K_est=3"):
        match_factors(est, z, among=np.array([1, 1, 0]))
    with pytest.raises(ValueError, match="boolean mask"):
        match_factors(est, z, among=np.array([True, True]))


def test_match_factors_requires_enough_codes():
    z = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(ValueError):
        match_factors(z[:, :2], z)


# --------------------------------------------------------------------------------------------------------
# support recovery

TRUTH = np.array(
    [[1, 0], [1, 0], [1, 0], [0, 1], [0, 1], [0, 1], [1, 1]],
    dtype=bool,
)


def _estimate():
    # 3 estimated columns; true factor 0 -> column 2, true factor 1 -> column 0, column 1 unused.
    W = np.zeros((7, 3))
    W[[3, 4, 5, 6], 0] = [1.0, -0.8, 0.5, 0.3]  # exactly true factor 1
    W[[0, 1, 6], 2] = [0.9, 0.7, 0.2]  # true factor 0 minus feature 2 (FN)
    W[3, 2] = 0.05  # FP
    W[2, 2] = 0.009  # below w_threshold: not selected
    return W


def test_support_one_fp_one_fn_by_hand():
    W = _estimate()
    res = support_confusion(W, TRUTH, column_match=np.array([2, 0]))
    assert isinstance(res, SupportConfusion)
    assert (res.tp, res.fp, res.fn) == (7, 1, 1)
    assert res.precision == pytest.approx(7 / 8)
    assert res.recall == pytest.approx(7 / 8)
    assert res.f1 == pytest.approx(2 * 7 / (2 * 7 + 1 + 1))  # 0.875
    assert support_fscore(W, TRUTH, column_match=np.array([2, 0])) == pytest.approx(0.875)
    # the automatic (F-maximising) assignment finds the same columns
    auto = support_confusion(W, TRUTH)
    np.testing.assert_array_equal(auto.column_match, [2, 0])
    assert auto.f1 == pytest.approx(0.875)
    # a wrong explicit assignment is worse
    assert support_fscore(W, TRUTH, column_match=np.array([0, 2])) < 0.875


def test_unmatched_column_counts_as_false_positive():
    W = _estimate()
    W[[0, 5], 1] = [0.4, 0.02]  # two selected entries in the unmatched column 1
    res = support_confusion(W, TRUTH, column_match=np.array([2, 0]))
    assert (res.tp, res.fp, res.fn) == (7, 3, 1)
    assert res.f1 == pytest.approx(14 / 18)


def test_w_threshold_is_inclusive():
    W = _estimate()
    W[2, 2] = 0.01  # now selected: the FN becomes a TP
    res = support_confusion(W, TRUTH, column_match=np.array([2, 0]))
    assert (res.tp, res.fp, res.fn) == (8, 1, 0)


def test_pip_thresholding_applied():
    W = _estimate()
    pip = np.ones_like(W)
    pip[3, 2] = 0.3  # removes the FP
    pip[6, 0] = 0.49  # removes a TP -> FN
    res = support_confusion(W, TRUTH, pip=pip, column_match=np.array([2, 0]))
    assert (res.tp, res.fp, res.fn) == (6, 0, 2)
    assert res.f1 == pytest.approx(12 / 14)
    # pip_threshold is inclusive and adjustable
    res2 = support_confusion(W, TRUTH, pip=pip, pip_threshold=0.3, column_match=np.array([2, 0]))
    assert (res2.tp, res2.fp, res2.fn) == (7, 1, 1)
    sup = estimated_support(W, pip=pip)
    assert not sup[3, 2] and not sup[6, 0] and sup[0, 2]


def test_support_validation_and_empty():
    W = _estimate()
    with pytest.raises(ValueError):
        support_confusion(W, TRUTH, column_match=np.array([1, 1]))
    with pytest.raises(ValueError):
        support_confusion(W[:, :1], TRUTH)
    with pytest.raises(ValueError):
        support_confusion(W, TRUTH, pip=np.ones((7, 2)))
    empty = support_confusion(np.zeros((3, 2)), np.zeros((3, 2), dtype=bool))
    assert empty.f1 == 1.0
    nothing = support_confusion(np.zeros((7, 3)), TRUTH)
    assert nothing.f1 == 0.0 and nothing.fn == int(TRUTH.sum())


def test_neighbour_agreement_mixing_and_separation():
    from scsparse.generic.metrics import neighbour_agreement, random_agreement

    rng = np.random.default_rng(0)
    x = np.vstack([rng.normal(0, 0.1, size=(50, 2)), rng.normal(10, 0.1, size=(50, 2))])
    cluster = np.repeat(["a", "b"], 50)
    mixed = np.tile(["u", "v"], 50)  # alternates within each cluster: spread at random over the neighbours
    assert neighbour_agreement(x, cluster, n_neighbors=10) == 1.0
    assert abs(neighbour_agreement(x, mixed, n_neighbors=10) - random_agreement(mixed)) < 0.1
    assert random_agreement(mixed) == 0.5 and random_agreement(np.array(["a", "a", "a", "b"])) == 0.625
    # a point never counts as its own neighbour, duplicates included
    dup = np.zeros((4, 1))
    assert neighbour_agreement(dup, np.array(["a", "b", "b", "b"]), n_neighbors=3) == (0 + 3 * (2 / 3)) / 4
    with pytest.raises(ValueError, match="n_neighbors"):
        neighbour_agreement(x, cluster, n_neighbors=100)
    with pytest.raises(ValueError, match="one per point"):
        neighbour_agreement(x, cluster[:10])
