import math

import numpy as np
import pytest

from scsparse.data._simulate import SyntheticData, simulate_eq9


def test_shapes_and_types():
    d = simulate_eq9()
    assert isinstance(d, SyntheticData)
    assert d.X.shape == (1000, 7) and d.X.dtype == np.float32
    assert d.Z.shape == (1000, 2)
    assert d.W_support.shape == (7, 2) and d.W_support.dtype == bool
    assert len(d.feature_names) == 7
    assert d.rho == 0.0 and d.seed == 0
    assert d.noise_sd == pytest.approx(math.sqrt(0.5))
    with pytest.raises(AttributeError):
        d.rho = 0.5  # frozen


def test_support_matrix():
    expected = np.zeros((7, 2), dtype=bool)
    expected[0:3, 0] = True
    expected[3:6, 1] = True
    expected[6, :] = True
    np.testing.assert_array_equal(simulate_eq9(n_obs=5).W_support, expected)


def test_deterministic_per_seed():
    a = simulate_eq9(n_obs=300, rho=0.4, seed=7)
    b = simulate_eq9(n_obs=300, rho=0.4, seed=7)
    c = simulate_eq9(n_obs=300, rho=0.4, seed=8)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.Z, b.Z)
    assert not np.allclose(a.X, c.X)


@pytest.mark.parametrize("rho", [0.0, 0.4, 0.8])
def test_factor_correlation_and_variance(rho):
    d = simulate_eq9(n_obs=20000, rho=rho, seed=1)
    assert np.corrcoef(d.Z.T)[0, 1] == pytest.approx(rho, abs=0.03)
    np.testing.assert_allclose(d.Z.var(axis=0), 1.0, atol=0.05)


def test_noise_free_mapping():
    d = simulate_eq9(n_obs=500, rho=0.6, noise_sd=0.0, seed=2)
    z1, z2 = d.Z[:, 0], d.Z[:, 1]
    np.testing.assert_array_equal(d.X[:, 1], 2 * d.X[:, 0])
    expected = np.column_stack([z1, 2 * z1, 3 * z1**2, 4 * z2, 5 * z2, 6 * np.sin(z2), 7 * z1 * z2])
    np.testing.assert_allclose(d.X, expected, rtol=1e-6, atol=1e-5)


def test_noise_variance():
    d = simulate_eq9(n_obs=20000, seed=3)
    clean = simulate_eq9(n_obs=20000, seed=3, noise_sd=0.0)
    np.testing.assert_array_equal(d.Z, clean.Z)  # noise drawn after the factors
    resid = d.X.astype(np.float64) - clean.X
    np.testing.assert_allclose(resid.var(axis=0), 0.5, rtol=0.05)


def test_invalid_arguments():
    with pytest.raises(ValueError):
        simulate_eq9(rho=1.5)
    with pytest.raises(ValueError):
        simulate_eq9(noise_sd=-1.0)
    with pytest.raises(ValueError):
        simulate_eq9(n_obs=0)


def test_to_anndata():
    d = simulate_eq9(n_obs=20, seed=0)
    adata = d.to_anndata()
    assert adata.shape == (20, 7)
    np.testing.assert_array_equal(adata.obsm["Z_true"], d.Z)
    np.testing.assert_array_equal(adata.varm["W_support"], d.W_support)
    assert list(adata.var_names) == list(d.feature_names)
