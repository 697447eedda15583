import math
from itertools import permutations

import numpy as np
import pytest
import torch
from torch.distributions import Normal, kl_divergence

from scsparse.generic.metrics import (
    active_atoms,
    dictionary_collapse_rate,
    feature_collapse_rate,
    gaussian_kl_per_dim,
    jaccard_consistency,
    multi_information,
    pairwise_jaccard_consistency,
    posterior_collapse_rate,
)

# --------------------------------------------------------------------------------------------------------
# multi-information


def test_multi_information_gaussian_formula():
    rng = np.random.default_rng(0)
    n = 4000
    cov = np.array([[1.0, 0.5, 0.2], [0.5, 2.0, 0.3], [0.2, 0.3, 1.5]])
    z = rng.multivariate_normal(np.zeros(3), cov, size=n)
    s = np.cov(z, rowvar=False)
    # sum of marginal Gaussian entropies minus the joint one
    h_marg = sum(0.5 * math.log(2 * math.pi * math.e * s[i, i]) for i in range(3))
    h_joint = 0.5 * (3 * math.log(2 * math.pi * math.e) + np.linalg.slogdet(s)[1])
    assert multi_information(z) == pytest.approx(h_marg - h_joint, rel=1e-10)
    assert multi_information(z, base=2) == pytest.approx((h_marg - h_joint) / math.log(2), rel=1e-10)
    # scale invariance, and close to the population value
    assert multi_information(z * [1.0, 10.0, 0.1]) == pytest.approx(multi_information(z), rel=1e-10)
    d = np.sqrt(np.diag(cov))
    truth = -0.5 * np.linalg.slogdet(cov / np.outer(d, d))[1]
    assert multi_information(z) == pytest.approx(truth, abs=0.02)


def test_multi_information_gaussian_edge_cases():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=500), rng.normal(size=500)
    # a constant (dead) dimension carries no information and is dropped
    z = np.column_stack([a, b, np.zeros(500)])
    assert multi_information(z) == pytest.approx(multi_information(z[:, :2]))
    assert multi_information(np.column_stack([a, np.zeros(500)])) == 0.0
    # exact copies: infinite Gaussian multi-information
    assert multi_information(np.column_stack([a, a])) == math.inf
    with pytest.raises(ValueError, match="method"):
        multi_information(z, method="knn")


def test_multi_information_histogram_by_hand():
    # two independent fair binary codes on a grid of all four combinations: MI = 0 exactly
    grid = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]).repeat(25, axis=0)
    assert multi_information(grid, method="histogram") == pytest.approx(0.0, abs=1e-12)
    # z2 = z1 with P(z1 = 0) = 1/4, P(z1 = 1) = 3/4: MI = H(z1)
    z1 = np.array([0.0] * 25 + [1.0] * 75)
    h = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    assert multi_information(np.column_stack([z1, z1]), method="histogram") == pytest.approx(h)
    assert multi_information(np.column_stack([z1, z1]), method="histogram", base=2) == pytest.approx(h / math.log(2))
    # three copies: 3 H - H = 2 H
    assert multi_information(np.column_stack([z1, z1, z1]), method="histogram") == pytest.approx(2 * h)


def test_multi_information_histogram_isolates_exact_zeros():
    # 0 and 1e-3 fall in the same bin of linspace(-2, 2, 20) but exact zeros have a bin of their own
    z1 = np.array([0.0] * 50 + [1e-3] * 50)
    z = np.column_stack([z1, z1])
    assert multi_information(z, method="histogram") == pytest.approx(math.log(2))
    coarse = np.linspace(-2, 2, 20)
    assert multi_information(z, method="histogram", bins=coarse) == pytest.approx(0.0, abs=1e-12)


# --------------------------------------------------------------------------------------------------------
# Jaccard consistency


def test_jaccard_consistency_by_hand():
    a = np.array([[1.0, 0.0, 2.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.5, 0.5]])
    b = np.array([[1.0, 3.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.5, 0.05, 0.0, 0.0]])
    np.testing.assert_allclose(jaccard_consistency(a, b), [1 / 3, 1.0, 2 / 4])
    # tol: |z| <= 0.1 is outside the support -> row 2: {0,1,2,3} vs {0}
    np.testing.assert_allclose(jaccard_consistency(a, b, tol=0.1), [1 / 3, 1.0, 1 / 4])
    # dims restricts the latent dimensions (indices or boolean mask)
    np.testing.assert_allclose(jaccard_consistency(a, b, dims=[0, 2]), [1 / 2, 1.0, 1 / 2])
    np.testing.assert_allclose(
        jaccard_consistency(a, b, dims=np.array([True, False, True, False])), [1 / 2, 1.0, 1 / 2]
    )
    with pytest.raises(ValueError, match="same shape"):
        jaccard_consistency(a, b[:2])


def test_pairwise_jaccard_equals_ordered_pair_average():
    rng = np.random.default_rng(0)
    samples = rng.normal(size=(5, 30, 8)) * (rng.uniform(size=(5, 30, 8)) < 0.4)
    out = pairwise_jaccard_consistency(samples)
    # the paper's formula: 1 / (J (J - 1)) sum_m sum_{n != m} C(z^m, z^n)
    J = samples.shape[0]
    brute = sum(jaccard_consistency(samples[m], samples[n]) for m, n in permutations(range(J), 2)) / (J * (J - 1))
    np.testing.assert_allclose(out, brute)
    np.testing.assert_allclose(pairwise_jaccard_consistency(samples[:2]), jaccard_consistency(samples[0], samples[1]))
    with pytest.raises(ValueError, match="J >= 2"):
        pairwise_jaccard_consistency(samples[:1])


def test_active_atoms_threshold_on_squared_norm():
    A = np.array([[0.3, 0.4, 0.0], [0.1, 0.0, 0.0]])  # squared norms 0.1, 0.16, 0
    np.testing.assert_array_equal(active_atoms(A), [False, True, False])  # strictly above 0.1


# --------------------------------------------------------------------------------------------------------
# collapse


def test_gaussian_kl_per_dim_matches_torch():
    rng = np.random.default_rng(0)
    m, v = rng.normal(size=(6, 4)), rng.uniform(0.1, 2.0, size=(6, 4))
    ref = kl_divergence(Normal(torch.tensor(m), torch.tensor(np.sqrt(v))), Normal(0.0, 1.0)).numpy()
    np.testing.assert_allclose(gaussian_kl_per_dim(m, v), ref, rtol=1e-10)


def test_posterior_collapse_rate_by_hand():
    n = 100
    kl = np.zeros((n, 4))
    kl[:, 1] = 1.0  # informative everywhere
    kl[:5, 2] = 1.0  # informative on 5% of rows: 95% collapsed rows -> collapsed (>= 1 - delta)
    kl[:6, 3] = 1.0  # informative on 6%: 94% -> not collapsed
    assert posterior_collapse_rate(kl=kl) == pytest.approx(2 / 4)  # dims 0 and 2
    assert posterior_collapse_rate(kl=kl, delta=0.0) == pytest.approx(1 / 4)
    kl[:, 0] = 0.01  # KL <= eps counts as collapsed
    assert posterior_collapse_rate(kl=kl) == pytest.approx(2 / 4)
    assert posterior_collapse_rate(kl=kl, eps=0.005) == pytest.approx(1 / 4)
    # from posterior means and variances
    mean = np.zeros((n, 3))
    mean[:, 1] = 2.0
    var = np.ones((n, 3))
    var[:, 2] = 0.1
    assert posterior_collapse_rate(mean, var) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="either kl"):
        posterior_collapse_rate(mean)


def test_feature_and_dictionary_collapse_by_hand():
    z = np.zeros((200, 4))
    z[:, 0] = 1.0
    z[:10, 1] = 0.5  # non-zero on 5% of rows: collapsed (95% of rows are zero)
    z[:12, 2] = 0.5  # 6%: not collapsed
    z[:, 3] = 0.01  # |z| <= eps: zero for the definition
    assert feature_collapse_rate(z) == pytest.approx(2 / 4)
    assert feature_collapse_rate(z, eps=0.001) == pytest.approx(1 / 4)
    W = np.array([[1.0, 0.0, 0.005, 0.3], [0.0, 0.0, 0.005, 0.4]])
    assert dictionary_collapse_rate(W) == pytest.approx(2 / 4)
    assert dictionary_collapse_rate(W, tol=0.6) == pytest.approx(3 / 4)
