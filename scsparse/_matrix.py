"""Streamed access to the matrix a model reads (``X`` or a layer; in memory, sparse or backed), in row blocks."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import scipy.sparse as sp
from anndata import AnnData

from scsparse._checks import InvalidInputError, did_you_mean

__all__ = ["chunk_rows_for", "column_variances", "get_matrix", "iter_row_chunks", "raw_counts_hint"]

_CHUNK_ROWS = 10_000
#: about 16 MB of float32 per dense block: bounded memory whatever the number of genes, and blocks small enough that
#: the allocator's reuse of their memory does not make a streamed pass's peak grow with the number of cells
_CHUNK_ELEMENTS = 2**22


class _RowSliceable:
    """A matrix-like that only slices rows (scvi-tools' AnnCollection layer proxy), given the shape it lacks."""

    def __init__(self, matrix, shape: tuple[int, int]) -> None:
        self.matrix, self.shape = matrix, shape

    def __getitem__(self, rows):
        return self.matrix[rows]


def _with_shape(matrix, adata: AnnData):
    try:
        matrix.shape  # noqa: B018
    except AttributeError:
        return _RowSliceable(matrix, (adata.n_obs, adata.n_vars))
    return matrix


def raw_counts_hint(adata: AnnData) -> str:
    """How to copy ``adata.raw`` into a counts layer (the end of a message), or ``""`` without a ``raw``."""
    if getattr(adata, "raw", None) is None:
        return ""
    return (
        " If the counts are in adata.raw, copy them into a layer first: "
        "`adata.layers['counts'] = adata.raw[:, adata.var_names].X`, then layer='counts'."
    )


def get_matrix(adata: AnnData, layer: str | None):
    """The matrix a model reads: ``adata.X`` or a layer, with a clear error when the layer is missing.

    Works for in-memory and backed AnnData and for an AnnCollection wrapped in
    :class:`scvi.dataloaders.CollectionAdapter` (layers only). The result supports ``.shape`` and row
    slicing, which is all :func:`iter_row_chunks` needs.
    """
    if layer is None:
        if adata.X is None:
            raise InvalidInputError(
                "adata.X is empty (None). Put the counts in adata.X or pass layer= naming the layer "
                f"that holds them (available layers: {list(adata.layers.keys())})." + raw_counts_hint(adata)
            )
        return adata.X
    if layer not in list(adata.layers.keys()):  # keys(): also for scvi-tools' AnnCollection adapter
        raise InvalidInputError(
            f"Layer {layer!r} not found in adata.layers{did_you_mean(layer, adata.layers.keys())} (available: "
            f"{list(adata.layers.keys())}). "
            "To use adata.X instead, pass layer=None (on the command line, leave out --layer); or store the raw "
            "counts first, e.g. "
            f"adata.layers[{layer!r}] = adata.X.copy() before normalising."
        )
    return _with_shape(adata.layers[layer], adata)


def chunk_rows_for(n_cols: int, chunk_rows: int | None = None) -> int:
    """Rows per block so that a dense block holds at most about 4.2 million values (``2**22``).

    Parameters
    ----------
    n_cols
        Number of columns (genes).
    chunk_rows
        An explicit number of rows; ``None`` derives it from ``n_cols`` (at most 10,000 rows).

    Examples
    --------
    >>> chunk_rows_for(2_000), chunk_rows_for(20_000)
    (2097, 209)
    """
    if chunk_rows is not None:
        if chunk_rows < 1:
            raise ValueError(f"chunk_rows must be a positive number of rows, got {chunk_rows}.")
        return int(chunk_rows)
    return max(1, min(_CHUNK_ROWS, _CHUNK_ELEMENTS // max(int(n_cols), 1)))


def iter_row_chunks(matrix, chunk_rows: int | None = None) -> Iterator[np.ndarray | sp.csr_matrix]:
    """Yield row blocks of a dense, sparse or backed matrix without loading it whole.

    Works on in-memory arrays, scipy sparse matrices and the on-disk matrices of a backed AnnData
    (``anndata.read_h5ad(path, backed="r").X``: an h5py dataset or anndata's sparse dataset), reading one
    block at a time. By default a block holds at most about 4.2 million values (see :func:`chunk_rows_for`),
    so the memory used does not grow with the number of cells or genes.

    Parameters
    ----------
    matrix
        Cells x genes matrix supporting row slicing.
    chunk_rows
        Rows per block; ``None`` picks it from the number of columns.

    Examples
    --------
    >>> import numpy as np
    >>> [b.shape for b in iter_row_chunks(np.ones((5, 3)), chunk_rows=2)]
    [(2, 3), (2, 3), (1, 3)]
    """
    n_rows = matrix.shape[0]
    step = chunk_rows_for(matrix.shape[1], chunk_rows)
    for start in range(0, n_rows, step):
        block = matrix[start : min(start + step, n_rows)]
        if sp.issparse(block):
            yield sp.csr_matrix(block)
        else:
            yield np.asarray(block)


def column_variances(blocks: Iterable) -> np.ndarray:
    """Sample variances (``ddof=1``) of a matrix's columns, from its row blocks (dense, sparse or tensors).

    One pass, memory flat in the number of rows: sums and sums of squares in float64.

    Examples
    --------
    >>> import numpy as np
    >>> column_variances(iter_row_chunks(np.array([[0.0, 1.0], [2.0, 1.0], [4.0, 1.0]]), chunk_rows=2))
    array([4., 0.])
    """
    n, s1, s2 = 0, 0.0, 0.0
    for block in blocks:
        dense = np.asarray(block.toarray() if sp.issparse(block) else block, dtype=np.float64)
        n += dense.shape[0]
        s1 = s1 + dense.sum(0)
        s2 = s2 + (dense**2).sum(0)
    mean = s1 / n
    return np.maximum(s2 / n - mean**2, 0.0) * n / max(n - 1, 1)
