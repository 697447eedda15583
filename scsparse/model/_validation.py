"""Input checks that fail early with a message naming the problem and the fix."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
import scipy.sparse as sp
from anndata import AnnData

__all__ = [
    "InvalidInputError",
    "check_anndata",
    "check_batch_key",
    "check_counts",
    "check_study_key",
    "iter_row_chunks",
    "get_matrix",
]

_CHUNK_ROWS = 10_000


class InvalidInputError(ValueError):
    """The AnnData given to a scsparse model cannot be used as it is; the message says how to fix it."""


def _where(layer: str | None) -> str:
    return "adata.X" if layer is None else f"adata.layers[{layer!r}]"


def get_matrix(adata: AnnData, layer: str | None):
    """The matrix a model reads: ``adata.X`` or a layer, with a clear error when the layer is missing."""
    if layer is None:
        if adata.X is None:
            raise InvalidInputError(
                "adata.X is empty (None). Put the counts in adata.X or pass layer= naming the layer "
                f"that holds them (available layers: {list(adata.layers.keys())})."
            )
        return adata.X
    if layer not in adata.layers:
        raise InvalidInputError(
            f"Layer {layer!r} not found in adata.layers (available: {list(adata.layers.keys())}). "
            "Pass layer=None to use adata.X, or store the raw counts first, e.g. "
            f"adata.layers[{layer!r}] = adata.X.copy() before normalising."
        )
    return adata.layers[layer]


def iter_row_chunks(matrix, chunk_rows: int = _CHUNK_ROWS) -> Iterator[np.ndarray | sp.csr_matrix]:
    """Yield row blocks of a dense, sparse or backed matrix without loading it whole."""
    n_rows = matrix.shape[0]
    for start in range(0, n_rows, chunk_rows):
        block = matrix[start : min(start + chunk_rows, n_rows)]
        if sp.issparse(block):
            yield sp.csr_matrix(block)
        else:
            yield np.asarray(block)


def _values(block) -> np.ndarray:
    return block.data if sp.issparse(block) else block.ravel()


def check_anndata(adata: AnnData, layer: str | None) -> None:
    """Shape, missing layer, NaN/inf and all-zero genes.

    Raises
    ------
    InvalidInputError
        With what is wrong and what to do.
    """
    if not isinstance(adata, AnnData):
        raise InvalidInputError(f"Expected an AnnData object, got {type(adata).__name__}.")
    if adata.n_obs == 0 or adata.n_vars == 0:
        raise InvalidInputError(
            f"The AnnData is empty ({adata.n_obs} cells x {adata.n_vars} genes). Check the filtering "
            "steps that produced it; a model needs at least one cell and one gene."
        )
    matrix = get_matrix(adata, layer)
    gene_abs_sum = np.zeros(adata.n_vars)
    for start, block in zip(range(0, adata.n_obs, _CHUNK_ROWS), iter_row_chunks(matrix), strict=True):
        values = _values(block)
        if values.dtype.kind not in "biuf":
            raise InvalidInputError(f"{_where(layer)} has dtype {values.dtype}; expected numbers.")
        if values.dtype.kind == "f" and not np.isfinite(values).all():
            n_bad = int((~np.isfinite(values)).sum())
            raise InvalidInputError(
                f"{_where(layer)} contains {n_bad} NaN or infinite value(s) "
                f"(in rows {start}-{start + block.shape[0] - 1}). "
                "Remove or impute them (e.g. recompute the layer from raw counts) before setting up the model."
            )
        gene_abs_sum += np.asarray(abs(block).sum(axis=0)).ravel()
    zero_genes = np.flatnonzero(gene_abs_sum == 0)
    if zero_genes.size:
        names = ", ".join(map(str, adata.var_names[zero_genes[:5]]))
        raise InvalidInputError(
            f"{zero_genes.size} gene(s) are zero in every cell of {_where(layer)} (e.g. {names}). "
            "They carry no information; remove them first, e.g. with "
            "`adata = adata[:, adata.X.sum(0).A1 > 0].copy()` or "
            "`scanpy.pp.filter_genes(adata, min_cells=1)`."
        )


def check_counts(adata: AnnData, layer: str | None, likelihood: str) -> None:
    """Non-negative integers and no all-zero cells, as a count likelihood needs."""
    matrix = get_matrix(adata, layer)
    for start, block in zip(range(0, adata.n_obs, _CHUNK_ROWS), iter_row_chunks(matrix), strict=True):
        values = _values(block)
        if (values < 0).any():
            raise InvalidInputError(
                f"{_where(layer)} has negative values, but gene_likelihood={likelihood!r} models counts. "
                "Point layer= at the raw counts, or use gene_likelihood='normal' for normalised or scaled data."
            )
        frac = np.abs(values - np.round(values))
        if (frac > 1e-6).any():
            example = float(values[np.argmax(frac)])
            raise InvalidInputError(
                f"{_where(layer)} has non-integer values (e.g. {example:.4g}), but "
                f"gene_likelihood={likelihood!r} models raw counts. Set up the model on the raw counts "
                "layer (e.g. layer='counts'), or use gene_likelihood='normal' for log-normalised data."
            )
        totals = np.asarray(block.sum(axis=1)).ravel()
        if (totals == 0).any():
            bad = np.flatnonzero(totals == 0)
            names = ", ".join(map(str, adata.obs_names[start + bad[:5]]))
            raise InvalidInputError(
                f"{bad.size} cell(s) have zero total counts in {_where(layer)} (e.g. {names}) so their "
                "library size is zero. Remove them first, e.g. `scanpy.pp.filter_cells(adata, min_counts=1)`."
            )


def _check_obs_column(adata: AnnData, key: str, role: str, argument: str) -> pd.Series:
    if key not in adata.obs.columns:
        raise InvalidInputError(
            f"{argument}={key!r} is not a column of adata.obs (columns: {list(adata.obs.columns)})."
        )
    column = adata.obs[key]
    n_missing = int(column.isna().sum())
    if n_missing:
        raise InvalidInputError(
            f"adata.obs[{key!r}] has {n_missing} missing value(s); every cell needs a {role}. "
            f"Fill them (e.g. adata.obs[{key!r}] = adata.obs[{key!r}].astype(str).fillna('unknown')) "
            "or drop those cells."
        )
    return column


def check_batch_key(adata: AnnData, batch_key: str | None) -> None:
    """The batch column exists and has no missing values."""
    if batch_key is not None:
        _check_obs_column(adata, batch_key, "batch label", "batch_key")


def check_study_key(adata: AnnData, study_key: str, min_cells: int = 10) -> None:
    """The study column exists, has no missing values, at least two levels and enough cells in each."""
    column = _check_obs_column(adata, study_key, "study label", "study_key")
    counts = column.astype(str).value_counts()
    if counts.size < 2:
        raise InvalidInputError(
            f"adata.obs[{study_key!r}] has a single level ({counts.index[0]!r}); a multi-study model needs "
            "at least two studies. For one study use scsparse.model.SparseVAE."
        )
    small = counts[counts < min_cells]
    if small.size:
        raise InvalidInputError(
            f"Studies with fewer than {min_cells} cells in adata.obs[{study_key!r}]: "
            f"{dict(small)}. Merge or drop them."
        )
