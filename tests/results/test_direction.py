"""Gene-factor correlations streamed over blocks of cells give the correlation of the whole data."""

import numpy as np
import pytest
import scipy.sparse as sp

from scsparse.results import CorrelationSums, expression_factor_correlation


def _corr(x, z):
    x = np.log1p(x * (1e4 / x.sum(1, keepdims=True)))
    return np.corrcoef(x.T, z.T)[: x.shape[1], x.shape[1] :]


@pytest.mark.parametrize("sparse", [False, True])
def test_running_sums_fed_in_any_blocks_and_masks_give_the_pearson_correlation(sparse):
    rng = np.random.default_rng(0)
    x = rng.poisson(2.0, size=(200, 6)).astype(float) + 1.0
    z = rng.normal(size=(200, 3))
    keep = rng.random(200) < 0.6
    for cells in (None, keep):
        sums = CorrelationSums(6, 3, normalize=True)
        for start, stop in ((0, 7), (7, 120), (120, 200)):
            block = sp.csr_matrix(x[start:stop]) if sparse else x[start:stop]
            sums.add(block, z[start:stop], None if cells is None else cells[start:stop])
        used = np.ones(200, bool) if cells is None else cells
        expected = _corr(x[used], z[used])
        np.testing.assert_allclose(sums.correlation(), expected, atol=1e-10)
        np.testing.assert_allclose(expression_factor_correlation(x, z, True, cells), expected, atol=1e-10)


def test_fewer_than_two_cells_or_no_variance_give_zero():
    sums = CorrelationSums(2, 1, normalize=False)
    assert (sums.correlation() == 0).all()
    sums.add(np.array([[1.0, 2.0]]), np.array([[0.5]]))
    assert (sums.correlation() == 0).all()
    sums.add(np.array([[1.0, 3.0]]), np.array([[1.5]]))
    assert sums.correlation()[0, 0] == 0 and sums.correlation()[1, 0] == pytest.approx(1.0)
