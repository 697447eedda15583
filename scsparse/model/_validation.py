"""Input checks that fail early with a message naming the problem and the fix."""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from anndata import AnnData

from scsparse._checks import InvalidInputError, check_choice, check_integer, check_real, did_you_mean
from scsparse._matrix import get_matrix, iter_row_chunks
from scsparse._options import DEFAULT_LAMBDA0, DEFAULT_LAMBDA1, GENE_LIKELIHOODS
from scsparse.results import DataHasher, study_key_name

__all__ = [
    "SETUP_SCANS",
    "DataScan",
    "ScanStore",
    "ZeroGenesWarning",
    "check_anndata",
    "check_batch_key",
    "check_counts",
    "check_finite",
    "check_float32_default",
    "check_precision",
    "check_model_arguments",
    "check_study_key",
    "check_train_arguments",
    "check_unique_gene_names",
    "conform_genes",
    "matrix_source",
    "obs_column",
    "scan_anndata",
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


class ZeroGenesWarning(UserWarning):
    """Genes with zero counts in every cell: kept, but they carry no information."""


@dataclass(frozen=True)
class DataScan:
    """What one streamed pass over the registered matrix learns: the facts the input checks need, and its hash.

    Attributes
    ----------
    where
        ``"adata.X"`` or ``"adata.layers['name']"``, for the messages.
    nonfinite
        ``(values, first row, last row)`` of the first block of rows holding NaN or infinite values, else ``None``.
    zero_genes
        Indices of the genes that are zero in every cell.
    has_negative
        Whether any value is negative.
    non_integer
        A value that is not an integer (the most fractional of the first block holding one), else ``None``.
    zero_cells
        Indices of the cells whose values sum to zero.
    data_hash
        :func:`scsparse.results.data_hash` of the data.
    source
        What the scan was made of (:func:`matrix_source`), so that a scan is only reused for the same matrix.
    """

    where: str
    nonfinite: tuple[int, int, int] | None
    zero_genes: np.ndarray
    has_negative: bool
    non_integer: float | None
    zero_cells: np.ndarray
    data_hash: str
    source: tuple[Any, ...] = ()

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        """Pickle without ``source``: weak references do not travel, and a copy describes no matrix (it is scanned
        again where it is needed, e.g. in the processes of a DDP spawn).
        """
        return _rebuild_scan, ({**{f.name: getattr(self, f.name) for f in fields(self)}, "source": ()},)

    def describes(self, adata: AnnData, layer: str | None) -> bool:
        """Whether the scan was made of the matrix ``adata`` holds now (the same object, of the same shape).

        A matrix replaced since (``adata.layers["counts"] = ...``) is not described; one changed in place is, which
        is why training scans the data it trains on again.
        """
        return bool(self.source) and _same_source(self.source, matrix_source(adata, layer))


def _rebuild_scan(values: dict[str, Any]) -> DataScan:
    return DataScan(**values)


def matrix_source(adata: AnnData, layer: str | None) -> tuple[Any, ...]:
    """What identifies the matrix a scan reads: its file for a backed ``.X``, else the object itself (weakly held)
    with its shape, its dtype and, for a sparse matrix, its arrays.
    """
    if layer is None and adata.isbacked:
        return ("file", str(adata.filename), tuple(adata.shape))
    matrix = get_matrix(adata, layer)
    parts = [getattr(matrix, name, None) for name in ("data", "indices", "indptr")] if sp.issparse(matrix) else []
    refs = []
    for obj in (matrix, *parts):
        try:
            refs.append(weakref.ref(obj))
        except TypeError:  # not weakly referable: identified by shape and dtype only, so always scanned again
            return ()
    return ("object", tuple(refs), tuple(matrix.shape), str(getattr(matrix, "dtype", "")))


def _same_source(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    if not a or not b or a[0] != b[0]:
        return False
    if a[0] == "file":
        return a == b
    return (
        a[2:] == b[2:]
        and len(a[1]) == len(b[1])
        and all(x() is not None and x() is y() for x, y in zip(a[1], b[1], strict=True))
    )


class ScanStore:
    """Passes over an AnnData's matrix, kept on our side (not on scvi-tools' objects) while the AnnData lives.

    Keyed by what identifies the pass: the id of the :class:`scvi.data.AnnDataManager` of a registration
    (:data:`SETUP_SCANS`), or the ``id()`` of an AnnData a model's method was given (checked once). An entry goes
    when its AnnData is garbage-collected, so a key is never read for another object. A registration scvi-tools
    makes on its own (cells transferred to a model) has no entry, and is scanned when a scan is needed.
    """

    def __init__(self) -> None:
        self._scans: dict[Hashable, DataScan] = {}

    def remember(self, key: Hashable, adata: AnnData, scan: DataScan) -> None:
        """Keep ``scan`` under ``key`` while ``adata`` lives."""
        self._scans[key] = scan
        weakref.finalize(adata, self._scans.pop, key, None)

    def recall(self, key: Hashable) -> DataScan | None:
        """The scan kept under ``key``, or ``None``."""
        return self._scans.get(key)


#: The scans of the registrations made by the models' ``setup_anndata``.
SETUP_SCANS = ScanStore()


def scan_anndata(adata: AnnData, layer: str | None) -> DataScan:
    """Read the matrix a model is set up on once, in row blocks, for :func:`check_anndata`, :func:`check_counts`
    and the data hash of the provenance.

    Raises
    ------
    InvalidInputError
        When a layer is missing or the values are not numbers.
    """
    matrix = get_matrix(adata, layer)
    hasher = DataHasher(adata)
    nonfinite, non_integer, has_negative = None, None, False
    gene_abs_sum = np.zeros(adata.n_vars)
    zero_cells: list[np.ndarray] = []
    start = 0
    if getattr(matrix, "dtype", None) == np.float16:  # scipy.sparse, and so the scan and the hash, have no float16
        raise InvalidInputError(
            f"{_where(layer)} holds float16 values; store them as float32 first, e.g. "
            f"`{_where(layer)} = {_where(layer)}.astype('float32')`."
        )
    for block in iter_row_chunks(matrix):
        values = _values(block)
        if values.dtype.kind not in "biuf":
            raise InvalidInputError(f"{_where(layer)} has dtype {values.dtype}; expected numbers.")
        stop = start + block.shape[0]
        finite = np.isfinite(values) if values.dtype.kind == "f" else None
        if finite is not None and not finite.all():
            if nonfinite is None:
                nonfinite = (int((~finite).sum()), start, stop - 1)
            values = values[finite]  # the counts checks below look at the finite values
        has_negative = has_negative or bool((values < 0).any())
        if non_integer is None:
            frac = np.abs(values - np.round(values))
            if (frac > 1e-6).any():
                non_integer = float(values[np.argmax(frac)])
        zero_cells.append(start + np.flatnonzero(np.asarray(block.sum(axis=1)).ravel() == 0))
        gene_abs_sum += np.asarray(abs(block).sum(axis=0)).ravel()
        hasher.update(block)
        start = stop
    return DataScan(
        where=_where(layer),
        nonfinite=nonfinite,
        zero_genes=np.flatnonzero(gene_abs_sum == 0),
        has_negative=has_negative,
        non_integer=non_integer,
        zero_cells=np.concatenate(zero_cells) if zero_cells else np.zeros(0, dtype=int),
        data_hash=hasher.hexdigest(),
        source=matrix_source(adata, layer),
    )


def check_finite(scan: DataScan) -> None:
    """Refuse NaN or infinite values (from :func:`scan_anndata`'s scan).

    Raises
    ------
    InvalidInputError
        Naming how many there are, where, and what to do.
    """
    if scan.nonfinite is not None:
        n_bad, first, last = scan.nonfinite
        raise InvalidInputError(
            f"{scan.where} contains {n_bad} NaN or infinite value(s) (in rows {first}-{last}). "
            "Remove or impute them (e.g. recompute the layer from raw counts) before setting up the model."
        )


def check_anndata(adata: AnnData, layer: str | None, *, allow_zero_genes: bool = False) -> DataScan:
    """Shape, unique gene names, missing layer, NaN/inf and all-zero genes, in one pass over the matrix.

    Genes that are zero in every cell are kept, as scvi-tools keeps them (subsampling cells creates them), with a
    :class:`ZeroGenesWarning` that says how to drop them; ``allow_zero_genes=True`` keeps them without it (a query
    mapped onto a reference keeps the reference's genes, some of which it may not have measured:
    :meth:`scsparse.model.SparseVAE.prepare_query_anndata`).

    Returns
    -------
    DataScan
        The facts of the pass, for :func:`check_counts` and the provenance's data hash.

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
    if not adata.obs_names.is_unique:
        repeated = adata.obs_names[adata.obs_names.duplicated()].unique()
        warnings.warn(
            f"{repeated.size} cell name(s) occur more than once in adata.obs_names (e.g. "
            f"{', '.join(map(repr, repeated[:3]))}). The model reads and writes cells by position, so its results "
            "are right, but anything that joins by cell name (obs.loc, merges, indices by name) can mix cells up: "
            "call `adata.obs_names_make_unique()` first.",
            UserWarning,
            stacklevel=3,
        )
    _check_backed_storage(adata, layer, get_matrix(adata, layer))
    scan = scan_anndata(adata, layer)
    check_finite(scan)
    if scan.zero_genes.size and not allow_zero_genes:
        names = ", ".join(map(str, adata.var_names[scan.zero_genes[:5]]))
        keep = f"np.asarray({scan.where}.sum(axis=0)).ravel() > 0"
        warnings.warn(
            f"{scan.zero_genes.size} gene(s) are zero in every cell of {scan.where} (e.g. {names}). They are "
            "kept and carry no information (their mask rows go to the spike); to drop them first: "
            f"`adata = adata[:, {keep}].copy()`.",
            ZeroGenesWarning,
            stacklevel=3,
        )
    return scan


def check_model_arguments(
    *,
    n_hidden: Any,
    n_layers: Any,
    gene_likelihood: Any,
    lambda0: Any,
    lambda1: Any,
    a: Any,
    b: Any,
    dropout_rate: Any,
    seed: Any,
    max_prior_cells: Any = None,
) -> None:
    """The constructor arguments both models share, each refused with its name, its value and the fix.

    Raises
    ------
    InvalidInputError
        For the first argument out of range.
    """
    check_integer("n_hidden", n_hidden, fix="It is the width of the encoder's and decoder's hidden layers (e.g. 128).")
    check_integer("n_layers", n_layers, fix="It is the number of hidden layers (e.g. 1).")
    check_choice("gene_likelihood", gene_likelihood, GENE_LIKELIHOODS)
    check_real(
        "lambda1", lambda1, low=0, low_open=True, fix=f"It is the slab's Laplace rate (default {DEFAULT_LAMBDA1:g})."
    )
    check_real(
        "lambda0", lambda0, low=float(lambda1), low_open=True,
        fix=f"The spike's rate must exceed the slab's (lambda1={lambda1}); the default is {DEFAULT_LAMBDA0:g}.",
    )  # fmt: skip
    check_real("a", a, low=0, low_open=True, fix="It is the first Beta parameter of the factors' weights (default 1).")
    if b is not None:
        check_real("b", b, low=0, low_open=True, fix="None sets it to the number of genes.")
    check_real("dropout_rate", dropout_rate, low=0, high=1, high_open=True, fix="The default is 0.1.")
    if seed is not None:
        check_integer("seed", seed, minimum=0, fix="None uses scvi.settings.seed.")
    if max_prior_cells is not None:
        check_integer("max_prior_cells", max_prior_cells, fix="None weighs the prior against every training cell.")


def check_train_arguments(
    *,
    n_cells: int,
    max_epochs: Any,
    lr: Any,
    batch_size: Any,
    train_size: Any,
    kl_warmup_fraction: Any,
    seed: Any,
) -> None:
    """The arguments of ``train()``, each refused with its name, its value and the fix, before training starts.

    Raises
    ------
    InvalidInputError
        For the first argument out of range, or too few cells to train on.
    """
    if n_cells < 2:
        raise InvalidInputError(
            f"Training needs at least 2 cells; the data have {n_cells}. Set the model up on an AnnData with more "
            "cells (a few hundred find the strong programmes)."
        )
    if max_epochs is not None:
        check_integer("max_epochs", max_epochs, fix="None chooses it from the number of cells.")
    check_real("lr", lr, low=0, low_open=True, fix="The default, 1e-2, suits most data.")
    check_integer(
        "batch_size", batch_size, minimum=2,
        fix="Batch normalisation needs at least 2 cells per minibatch; the default is 128.",
    )  # fmt: skip
    if train_size is not None:
        check_real(
            "train_size", train_size, low=0, high=1, low_open=True,
            fix="It is the share of cells trained on; the rest is the validation set (default 0.9).",
        )  # fmt: skip
    check_real(
        "kl_warmup_fraction", kl_warmup_fraction, low=0, high=1,
        fix="It is the share of max_epochs over which the KL term is warmed up (default 0.25; 0: none).",
    )  # fmt: skip
    if seed is not None:
        check_integer("seed", seed, minimum=0, fix="None keeps the model's seed.")


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


def conform_genes(adata: AnnData, genes: pd.Index, model_name: str) -> AnnData:
    """``adata`` with exactly the model's genes in the model's order, matched by name, never by position.

    Parameters
    ----------
    adata
        Cells given to a trained model's method.
    genes
        The model's genes, in order.
    model_name
        The model class, named in the message.

    Returns
    -------
    AnnData
        ``adata`` itself when its genes are the model's in the same order; otherwise a copy subset and ordered
        by name (the same genes in another order, or more genes than the model's). ``adata`` is not changed.

    Raises
    ------
    InvalidInputError
        When genes of the model are missing from ``adata`` (other genes, or other names for them) or when its
        gene names repeat, with how to fix it.
    """
    names = pd.Index(np.asarray(adata.var_names, dtype=str))
    genes = pd.Index(np.asarray(genes, dtype=str))
    if names.equals(genes):
        return adata
    check_unique_gene_names(adata)
    missing = genes.difference(names, sort=False)
    if missing.size:
        shown = ", ".join(map(str, missing[:5]))
        raise InvalidInputError(
            f"{missing.size} of the model's {genes.size} genes are not in adata.var_names (e.g. {shown}); the "
            "model reads each gene by its name. Give cells measured on the model's genes under the same names "
            f"(check adata.var_names against model.adata.var_names), or map new cells with "
            f"`{model_name}.prepare_query_anndata(adata, model)` (in place, as in scvi-tools), which adds missing "
            "genes as zero counts."
        )
    return adata[:, genes].copy()


def check_counts(scan: DataScan, obs_names: pd.Index, likelihood: str, *, hint: str = "") -> None:
    """Non-negative integers and no all-zero cells, as a count likelihood needs (from :func:`check_anndata`'s scan).

    ``hint`` ends the messages on negative and non-integer values (e.g. :func:`scsparse._matrix.raw_counts_hint`).

    Raises
    ------
    InvalidInputError
        With what is wrong and what to do.
    """
    if scan.has_negative:
        raise InvalidInputError(
            f"{scan.where} has negative values, but gene_likelihood={likelihood!r} models counts. "
            "Point layer= at the raw counts, or use gene_likelihood='normal' for normalised or scaled data." + hint
        )
    if scan.non_integer is not None:
        raise InvalidInputError(
            f"{scan.where} has non-integer values (e.g. {scan.non_integer:.4g}), but "
            f"gene_likelihood={likelihood!r} models raw counts. Set up the model on the raw counts "
            "layer (e.g. layer='counts'), or use gene_likelihood='normal' for log-normalised data." + hint
        )
    if scan.zero_cells.size:
        names = ", ".join(map(str, obs_names[scan.zero_cells[:5]]))
        raise InvalidInputError(
            f"{scan.zero_cells.size} cell(s) have zero total counts in {scan.where} (e.g. {names}) so their "
            "library size is zero. Remove them first, e.g. `scanpy.pp.filter_cells(adata, min_counts=1)`."
        )


def obs_column(adata: AnnData, key: str, argument: str) -> pd.Series:
    """``adata.obs[key]``, or an error naming ``argument``, the closest column and the columns there are."""
    if key not in adata.obs.columns:
        columns = [c for c in adata.obs.columns if not str(c).startswith("_scvi_")]  # scvi-tools' own columns
        raise InvalidInputError(
            f"{argument}={key!r} is not a column of adata.obs{did_you_mean(key, columns)} (columns: {columns})."
        )
    return adata.obs[key]


def _check_obs_column(adata: AnnData, key: str, role: str, argument: str, *, continuous: bool = False) -> pd.Series:
    column = obs_column(adata, key, argument)
    n_missing = int(column.isna().sum())
    if n_missing:
        column_ref = f"adata.obs[{key!r}]"
        if continuous:
            fill = f"impute them (e.g. {column_ref} = {column_ref}.fillna({column_ref}.median()))"
        elif isinstance(column.dtype, pd.CategoricalDtype):
            fill = (
                f"give them a label of their own (e.g. {column_ref} = "
                f"{column_ref}.cat.add_categories('unknown').fillna('unknown'))"
            )
        else:
            fill = f"give them a label of their own (e.g. {column_ref} = {column_ref}.fillna('unknown'))"
        raise InvalidInputError(
            f"{column_ref} has {n_missing} missing value(s); every cell needs a {role}. Drop those cells "
            f"(adata = adata[{column_ref}.notna()].copy()) or {fill}."
        )
    return column


def check_batch_key(adata: AnnData, batch_key: str | None) -> None:
    """The batch column exists and has no missing values."""
    if batch_key is not None:
        _check_obs_column(adata, batch_key, "batch label", "batch_key")


def check_covariates(
    adata: AnnData,
    categorical_covariate_keys: Sequence[str] | None,
    continuous_covariate_keys: Sequence[str] | None,
    size_factor_key: str | None = None,
    labels_key: str | None = None,
    *,
    reserved: Sequence[str | None] = (),
) -> None:
    """The covariate, size-factor and label columns exist, are complete, and continuous ones are finite numbers.

    Parameters
    ----------
    adata
        The AnnData being set up.
    categorical_covariate_keys, continuous_covariate_keys
        ``obs`` columns of the covariates.
    size_factor_key
        ``obs`` column of per-cell size factors (positive numbers).
    labels_key
        ``obs`` column of cell labels.
    reserved
        Columns already given another role (batch, study): a covariate may not repeat them.

    Raises
    ------
    InvalidInputError
        Naming the column and the fix.
    """
    for argument, keys in (
        ("categorical_covariate_keys", categorical_covariate_keys),
        ("continuous_covariate_keys", continuous_covariate_keys),
    ):
        if keys is None:
            continue
        if isinstance(keys, str):
            raise InvalidInputError(f"{argument} takes a list of obs columns, e.g. {argument}=[{keys!r}].")
        repeated = sorted({k for k in keys if list(keys).count(k) > 1} | (set(keys) & {r for r in reserved if r}))
        if repeated:
            raise InvalidInputError(
                f"{argument} repeats {repeated}: each obs column enters the model once (the batch and study "
                "columns have their own arguments)."
            )
        for key in keys:
            continuous = argument.startswith("continuous")
            column = _check_obs_column(adata, key, "covariate value", argument, continuous=continuous)
            if argument.startswith("continuous"):
                _check_numbers(column, key, argument)
    both = set(categorical_covariate_keys or ()) & set(continuous_covariate_keys or ())
    if both:
        raise InvalidInputError(f"Columns {sorted(both)} are given as both categorical and continuous covariates.")
    if size_factor_key is not None:
        column = _check_obs_column(adata, size_factor_key, "size factor", "size_factor_key", continuous=True)
        values = _check_numbers(column, size_factor_key, "size_factor_key")
        if (values <= 0).any():
            raise InvalidInputError(
                f"adata.obs[{size_factor_key!r}] has {int((values <= 0).sum())} size factor(s) <= 0; size factors "
                "scale each cell's expected counts and must be positive."
            )
    if labels_key is not None:
        _check_obs_column(adata, labels_key, "label", "labels_key")


def _check_numbers(column: pd.Series, key: str, argument: str) -> np.ndarray:
    if not pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        raise InvalidInputError(
            f"adata.obs[{key!r}] ({argument}) holds {column.dtype} values; a continuous covariate needs numbers. "
            "Give a categorical column through categorical_covariate_keys instead."
        )
    values = column.to_numpy(dtype=np.float64)
    if not np.isfinite(values).all():
        n_bad = int((~np.isfinite(values)).sum())
        raise InvalidInputError(f"adata.obs[{key!r}] ({argument}) has {n_bad} inf value(s); give finite numbers.")
    return values


def check_study_key(adata: AnnData, study_key: str, min_cells: int = 10, min_studies: int = 2) -> None:
    """The study column exists, has no missing values, at least ``min_studies`` levels and enough cells in each."""
    column = _check_obs_column(adata, study_key, "study label", "study_key")
    if isinstance(column.dtype, pd.CategoricalDtype):
        unused = [str(c) for c in column.cat.categories if not (column == c).any()]
        if unused:
            raise InvalidInputError(
                f"adata.obs[{study_key!r}] has categories without cells: {unused}. Each category would become a "
                "study with its own factors and keys; drop them first: "
                f"`adata.obs[{study_key!r}] = adata.obs[{study_key!r}].cat.remove_unused_categories()`."
            )
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
    check_study_names(list(counts.index), f"adata.obs[{study_key!r}]")


def check_study_names(studies: Sequence[str], where: str) -> None:
    """Study names that give every study keys of its own, apart from the shared factors' keys.

    A study's factors and keys are named after it (``<study>_0``, ``varm['<key>_W_<study>']``), the shared ones
    ``shared_0`` and ``varm['<key>_W_shared']``; characters other than letters, digits and ``-_.`` become ``_``.

    Parameters
    ----------
    studies
        Every study name that will be in one model (a query's with its reference's).
    where
        Where the names come from, for the message (e.g. ``"adata.obs['study']"``).

    Raises
    ------
    InvalidInputError
        If a study is named like the shared block, or two studies would share keys.
    """
    key_names: dict[str, list[str]] = {}
    for study in studies:
        key_names.setdefault(study_key_name(study), []).append(str(study))
    reserved = [s for name, names in key_names.items() if name in ("shared", "specific") for s in names]
    if reserved:
        raise InvalidInputError(
            f"Study name(s) {reserved} in {where} clash with the names of the shared factors and their keys "
            f"(shared_0, ..., varm['<key>_W_shared']). Rename the study, e.g. to 'study_{reserved[0]}'."
        )
    clashes = [names for names in key_names.values() if len(names) > 1]
    if clashes:
        raise InvalidInputError(
            f"Studies {clashes[0]} ({where}) would share AnnData keys: characters other than letters, digits and "
            "-_. become '_' in a key (varm['<key>_W_<study>']). Rename one of them."
        )


def check_saved_genes(adata: AnnData, source_registry: dict[str, Any] | None) -> None:
    """``adata`` has the genes of the model whose registry it is set up against, in their order.

    Run before anything is registered, so an AnnData that does not fit the saved model is left as it was.

    Raises
    ------
    InvalidInputError
        Naming how many genes the model has, those ``adata`` lacks, and how to subset it.
    """
    if source_registry is None:
        return
    layer = source_registry.get("field_registries", {}).get("X", {}).get("state_registry", {})
    var_names = np.asarray(layer.get("column_names", []), dtype=str)
    if not var_names.size or np.array_equal(var_names, np.asarray(adata.var_names, dtype=str)):
        return
    missing = np.setdiff1d(var_names, np.asarray(adata.var_names, dtype=str))
    raise InvalidInputError(
        f"The AnnData does not match the saved model: the model was trained on {var_names.size} "
        f"genes, the AnnData has {adata.n_vars}"
        + (f" and lacks {missing.size} of them (e.g. {', '.join(missing[:5])})" if missing.size else "")
        + ". Subset and order the genes as in training, e.g. "
        "`adata = adata[:, model_genes].copy()` with model_genes from the training AnnData."
    )


def check_query_genes(adata: AnnData, reference_genes: Sequence[str], model_name: str) -> None:
    """A query has exactly the reference's genes in its order; otherwise say how to get there.

    Parameters
    ----------
    adata
        The query cells.
    reference_genes
        The reference model's genes, in order.
    model_name
        The model class whose ``prepare_query_anndata`` the message names.

    Raises
    ------
    InvalidInputError
        Naming the missing genes, if any, and the call that fixes the genes and their order.
    """
    genes = np.asarray(reference_genes, dtype=str)
    if np.array_equal(np.asarray(adata.var_names, dtype=str), genes):
        return
    missing = np.setdiff1d(genes, np.asarray(adata.var_names, dtype=str))
    fix = f"{model_name}.prepare_query_anndata(adata, reference_model) puts them in the reference's order in place"
    raise InvalidInputError(
        "The query's genes differ from the reference's (names or order): "
        + (
            f"{missing.size} of the reference's genes are missing (e.g. {list(missing[:3])}); {fix}, with the "
            "missing ones as zero counts."
            if missing.size
            else f"{fix}, or subset and order it as the reference: adata[:, reference_genes].copy()."
        )
    )


#: Lightning precisions under which the weights stay float32 (the mixed ones compute some operations in half
#: precision, with float32 weights), which every result method needs.
FLOAT32_PRECISIONS = (32, "32", "32-true", 16, "16", "16-mixed", "bf16", "bf16-mixed")


def check_precision(precision: Any) -> None:
    """Refuse Lightning precisions that leave the weights in another dtype than float32 (``"16-true"``,
    ``"bf16-true"``, ``"64-true"`` ...): every result method of the model works on float32 weights.

    Raises
    ------
    InvalidInputError
        Naming the precisions that work.

    Examples
    --------
    >>> check_precision("bf16-mixed")
    >>> check_precision("64-true")
    Traceback (most recent call last):
    ...
    scsparse._checks.InvalidInputError: precision='64-true' would leave the model's weights in another dtype ...
    """
    if precision is None or precision in FLOAT32_PRECISIONS:
        return
    raise InvalidInputError(
        f"precision={precision!r} would leave the model's weights in another dtype than float32, which its results "
        "(factors, loadings, expression) are computed in. Train with precision='bf16-mixed' or '16-mixed' for speed "
        "on a GPU (float32 weights, half-precision arithmetic), or leave precision out (32)."
    )


def check_float32_default() -> None:
    """Refuse a torch default dtype other than float32: the model's weights would be built in it, its data not.

    Raises
    ------
    InvalidInputError
        Naming the default and how to restore float32.
    """
    import torch

    dtype = torch.get_default_dtype()
    if dtype != torch.float32:
        raise InvalidInputError(
            f"torch's default dtype is {str(dtype).removeprefix('torch.')} (torch.set_default_dtype); scsparse's "
            "models compute in float32, the dtype of the data they read. Call "
            "`torch.set_default_dtype(torch.float32)` before building or training the model."
        )
