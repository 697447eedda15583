"""Input checks that fail early with a message naming the problem and the fix."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp
from anndata import AnnData

from scsparse._checks import InvalidInputError, did_you_mean
from scsparse._matrix import get_matrix, iter_row_chunks
from scsparse.results import study_key_name

__all__ = [
    "check_anndata",
    "check_batch_key",
    "check_counts",
    "check_study_key",
    "check_unique_gene_names",
]


def _where(layer: str | None) -> str:
    return "adata.X" if layer is None else f"adata.layers[{layer!r}]"


def _check_backed_storage(adata: AnnData, layer: str | None, matrix) -> None:
    """Backed AnnData: only ``.X`` stays on disk, and row blocks of a CSC matrix read every column."""
    if not adata.isbacked or hasattr(adata, "collection"):  # in memory, or scvi-tools' AnnCollection adapter
        return
    if layer is not None:
        warnings.warn(
            f"The AnnData is backed but the data come from adata.layers[{layer!r}], which anndata holds in "
            "memory; only adata.X stays on disk. To train with memory flat in the number of cells, store the "
            "counts in .X of the h5ad file and set up the model with layer=None.",
            UserWarning,
            stacklevel=3,
        )
        return
    if getattr(matrix, "format", None) == "csc":
        raise InvalidInputError(
            "adata.X is a backed CSC matrix: every minibatch of cells would read the whole file. Rewrite the "
            "file with CSR storage, e.g. `adata = anndata.read_h5ad(path); adata.X = adata.X.tocsr(); "
            "adata.write_h5ad(path)` (or in chunks with anndata.experimental), then open it with backed='r'."
        )


def _values(block) -> np.ndarray:
    return block.data if sp.issparse(block) else block.ravel()


def check_anndata(adata: AnnData, layer: str | None) -> None:
    """Shape, unique gene names, missing layer, NaN/inf and all-zero genes.

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
    check_unique_gene_names(adata)
    matrix = get_matrix(adata, layer)
    _check_backed_storage(adata, layer, matrix)
    gene_abs_sum = np.zeros(adata.n_vars)
    start = 0
    for block in iter_row_chunks(matrix):
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
        start += block.shape[0]
    zero_genes = np.flatnonzero(gene_abs_sum == 0)
    if zero_genes.size:
        names = ", ".join(map(str, adata.var_names[zero_genes[:5]]))
        raise InvalidInputError(
            f"{zero_genes.size} gene(s) are zero in every cell of {_where(layer)} (e.g. {names}). "
            "They carry no information; remove them first, e.g. with "
            "`adata = adata[:, adata.X.sum(0).A1 > 0].copy()` or "
            "`scanpy.pp.filter_genes(adata, min_cells=1)`."
        )


def check_unique_gene_names(adata: AnnData) -> None:
    """Refuse repeated ``adata.var_names``: loadings, top genes and enrichment name a gene by its name.

    Raises
    ------
    InvalidInputError
        Naming the repeated genes and how to make the names unique.

    Examples
    --------
    >>> import anndata, numpy as np
    >>> adata = anndata.AnnData(np.ones((2, 3)))
    >>> adata.var_names = ["CD3E", "MT-ND1", "CD3E"]
    >>> check_unique_gene_names(adata)
    Traceback (most recent call last):
    ...
    scsparse._checks.InvalidInputError: 1 gene name(s) occur more than once in adata.var_names ...
    """
    if adata.var_names.is_unique:
        return
    counts = adata.var_names.value_counts()
    repeated = counts[counts > 1]
    shown = ", ".join(f"{name!r} x{n}" for name, n in repeated.head(5).items())
    raise InvalidInputError(
        f"{repeated.size} gene name(s) occur more than once in adata.var_names (e.g. {shown}). Loadings, top "
        "genes and gene-set enrichment name each gene by its name, so every name must be unique: call "
        "`adata.var_names_make_unique()` (appends -1, -2, ...) or keep one column per gene first."
    )


def check_counts(adata: AnnData, layer: str | None, likelihood: str) -> None:
    """Non-negative integers and no all-zero cells, as a count likelihood needs (streamed over row blocks)."""
    matrix = get_matrix(adata, layer)
    start = 0
    for block in iter_row_chunks(matrix):
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
        start += block.shape[0]


def _check_obs_column(adata: AnnData, key: str, role: str, argument: str) -> pd.Series:
    if key not in adata.obs.columns:
        raise InvalidInputError(
            f"{argument}={key!r} is not a column of adata.obs{did_you_mean(key, adata.obs.columns)} "
            f"(columns: {list(adata.obs.columns)})."
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


def check_study_key(adata: AnnData, study_key: str, min_cells: int = 10, min_studies: int = 2) -> None:
    """The study column exists, has no missing values, at least ``min_studies`` levels and enough cells in each."""
    column = _check_obs_column(adata, study_key, "study label", "study_key")
    counts = column.astype(str).value_counts()
    if counts.size < min_studies:
        raise InvalidInputError(
            f"adata.obs[{study_key!r}] has a single level ({counts.index[0]!r}); a multi-study model needs "
            "at least two studies. For one study use scsparse.model.SparseVAE."
        )
    small = counts[counts < min_cells]
    if small.size:
        raise InvalidInputError(
            f"Studies with fewer than {min_cells} cells in adata.obs[{study_key!r}]: {dict(small)}. Merge or drop them."
        )
    # a study's factors and keys are named after it: shared_0 / mssvae_W_shared, <study>_0 / mssvae_W_<study>
    key_names: dict[str, list[str]] = {}
    for study in counts.index:
        key_names.setdefault(study_key_name(study), []).append(str(study))
    reserved = [s for name, studies in key_names.items() if name in ("shared", "specific") for s in studies]
    if reserved:
        raise InvalidInputError(
            f"Study name(s) {reserved} in adata.obs[{study_key!r}] clash with the names of the shared factors and "
            "their keys (shared_0, ..., varm['<key>_W_shared']). Rename the study, e.g. "
            f"adata.obs[{study_key!r}] = adata.obs[{study_key!r}].replace({{{reserved[0]!r}: 'study_{reserved[0]}'}})."
        )
    clashes = [studies for studies in key_names.values() if len(studies) > 1]
    if clashes:
        raise InvalidInputError(
            f"Studies {clashes[0]} in adata.obs[{study_key!r}] would share AnnData keys: characters other than "
            "letters, digits and -_. become '_' in a key (varm['<key>_W_<study>']). Rename one of them."
        )
