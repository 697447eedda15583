"""Tests of the data-driven start of the mask (``mask_init="nmf"``)."""

from __future__ import annotations

import numpy as np

from scsparse.model._init import mask_start


def test_the_nmf_start_is_the_same_on_every_call(counts_factory):
    adata = counts_factory(200, 30, 3, seed=1)
    np.random.seed(0)  # noqa: NPY002 - the global generator is what the start must not follow
    first = mask_start(adata, "counts", 4)
    np.random.seed(1)  # noqa: NPY002
    second = mask_start(adata, "counts", 4)
    np.testing.assert_array_equal(first, second)
    assert first.shape == (30, 4) and np.isclose(first.max(), 0.6)
