"""The data hash of the provenance identifies the data, whatever its storage or the row blocks it is read in."""

import anndata
import numpy as np
import pytest
import scipy.sparse as sp

from scsparse._matrix import iter_row_chunks
from scsparse.results import DataHasher, data_hash


@pytest.fixture
def counts():
    return np.random.default_rng(0).poisson(0.6, size=(300, 25)).astype(np.float32)


def test_storage_and_row_blocks_do_not_change_the_hash(counts):
    dense = anndata.AnnData(counts)
    expected = data_hash(dense, None)
    assert data_hash(anndata.AnnData(sp.csr_matrix(counts.astype(np.float64))), None) == expected
    csr = sp.csr_matrix(counts)
    unsorted = csr.copy()
    for start, stop in zip(csr.indptr[:-1], csr.indptr[1:], strict=True):  # each row's entries in reverse order
        unsorted.indices[start:stop] = csr.indices[start:stop][::-1]
        unsorted.data[start:stop] = csr.data[start:stop][::-1]
    unsorted.has_sorted_indices = False
    with_zero = sp.csr_matrix(counts)
    with_zero.data[0] = 0.0  # a stored zero: the same values as a matrix without it
    dense_zero = with_zero.toarray()
    assert data_hash(anndata.AnnData(unsorted), None) == expected
    assert data_hash(anndata.AnnData(with_zero), None) == data_hash(anndata.AnnData(dense_zero), None)
    for rows in (1, 7, 299, 1000):
        hasher = DataHasher(dense)
        for block in iter_row_chunks(dense.X, chunk_rows=rows):
            hasher.update(block)
        assert hasher.hexdigest() == expected


def test_a_changed_value_position_or_name_changes_the_hash(counts):
    expected = data_hash(anndata.AnnData(counts), None)
    changed = counts.copy()
    changed[5, 3] += 1.0
    moved = counts.copy()
    moved[[0, 1]] = moved[[1, 0]]
    renamed = anndata.AnnData(counts)
    renamed.obs_names = [f"c{i}" for i in range(counts.shape[0])]
    others = [data_hash(anndata.AnnData(changed), None), data_hash(renamed, None)]
    if not np.array_equal(counts[0], counts[1]):
        others.append(data_hash(anndata.AnnData(moved), None))
    assert expected not in others and len(set(others)) == len(others)
