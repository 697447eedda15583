"""Input checks that fail early with a message naming the problem and the fix."""

from __future__ import annotations

import difflib
import inspect
import warnings
from collections.abc import Iterable, Iterator

import numpy as np
import pandas as pd
import scipy.sparse as sp
from anndata import AnnData

__all__ = [
    "InvalidInputError",
    "accepted_keywords",
    "check_anndata",
    "check_batch_key",
    "check_counts",
    "check_keywords",
    "check_study_key",
    "check_unique_gene_names",
    "chunk_rows_for",
    "iter_row_chunks",
    "get_matrix",
]

_CHUNK_ROWS = 10_000
_CHUNK_ELEMENTS = 2**24  # about 64 MB of float32 per dense block: bounded memory whatever the number of genes


class InvalidInputError(ValueError):
    """The AnnData given to a scsparse model cannot be used as it is; the message says how to fix it."""


def accepted_keywords(cls: type, follow_var_keyword: bool = True) -> set[str]:
    """Keyword arguments ``cls(...)`` accepts, following ``**kwargs`` that ``__init__`` passes to its bases.

    ``follow_var_keyword=False`` reads the first ``__init__`` only (a model whose ``**kwargs`` go to its module,
    not to its bases).
    """
    names: set[str] = set()
    for base in inspect.getmro(cls):
        init = base.__dict__.get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        names |= {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        if not follow_var_keyword or not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return names - {"self"}


def check_keywords(owner: str, given: Iterable[str], accepted: set[str]) -> None:
    """Refuse keyword arguments that nothing accepts, naming the closest accepted ones.

    Examples
    --------
    >>> check_keywords("SparseVAE", ["n_latent"], {"n_latent", "n_hidden"})
    >>> check_keywords("SparseVAE", ["n_latents"], {"n_latent", "n_hidden"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: SparseVAE got an unexpected keyword argument 'n_latents' (did you mean 'n_latent'?). Accepted: ...
    """
    unknown = [k for k in given if k not in accepted]
    if not unknown:
        return
    parts = []
    for k in unknown:
        parts.append(f"{k!r}{did_you_mean(k, sorted(accepted))}")
    noun = "argument" if len(unknown) == 1 else "arguments"
    raise TypeError(
        f"{owner} got an unexpected keyword {noun} {', '.join(parts)}. Accepted: {', '.join(sorted(accepted))}."
    )


def did_you_mean(key: str, options: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` naming the closest of ``options`` to a mistyped ``key``, or ``""``.

    Examples
    --------
    >>> did_you_mean("cnts", ["counts", "spliced"])
    " (did you mean 'counts'?)"
    >>> did_you_mean("zzz", ["counts"])
    ''
    """
    close = difflib.get_close_matches(str(key), [str(o) for o in options], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _where(layer: str | None) -> str:
    return "adata.X" if layer is None else f"adata.layers[{layer!r}]"


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
                f"that holds them (available layers: {list(adata.layers.keys())})."
            )
        return adata.X
    if layer not in list(adata.layers.keys()):  # keys(): also for scvi-tools' AnnCollection adapter
        raise InvalidInputError(
            f"Layer {layer!r} not found in adata.layers{did_you_mean(layer, adata.layers.keys())} (available: "
            f"{list(adata.layers.keys())}). "
            "Pass layer=None to use adata.X, or store the raw counts first, e.g. "
            f"adata.layers[{layer!r}] = adata.X.copy() before normalising."
        )
    return _with_shape(adata.layers[layer], adata)


def chunk_rows_for(n_cols: int, chunk_rows: int | None = None) -> int:
    """Rows per block so that a dense block holds at most about 16.8 million values (``2**24``).

    Parameters
    ----------
    n_cols
        Number of columns (genes).
    chunk_rows
        An explicit number of rows; ``None`` derives it from ``n_cols`` (at most 10,000 rows).

    Examples
    --------
    >>> chunk_rows_for(2_000), chunk_rows_for(20_000)
    (8388, 838)
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
    block at a time. By default a block holds at most about 16.8 million values (see :func:`chunk_rows_for`),
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
    scsparse.model._validation.InvalidInputError: 1 gene name(s) occur more than once in adata.var_names ...
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
