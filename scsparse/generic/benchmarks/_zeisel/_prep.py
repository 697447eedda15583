"""Preparation of the Zeisel et al. (2015) data as in Moran et al. (2022), Appendix C.1.

- :func:`prepare_zeisel` — ``log1p`` counts, quantile-normalised across cells (:func:`quantile_normalise`), the
  most variable genes (:func:`select_variable_genes`), each scaled to unit sd; with the raw counts of the same
  genes, as a :class:`ZeiselData`;
- :func:`split_cells` — the stratified train/test split of the cells for one seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from anndata import AnnData

__all__ = [
    "TEST_FRACTION",
    "ZeiselData",
    "prepare_zeisel",
    "quantile_normalise",
    "select_variable_genes",
    "split_cells",
]

#: Fraction of the cells held out (stratified by level-1 class).
TEST_FRACTION = 0.2
#: Offset added to the seed for the train/test split, so the split stream differs from the model seeds.
_SPLIT_SEED_OFFSET = 1_000_003


def quantile_normalise(X: np.ndarray) -> np.ndarray:
    """Quantile normalisation of the cells (rows) of ``X`` (Bolstad et al. 2003), ties averaged.

    The reference distribution is the mean over cells of each cell's sorted values,
    ``ref[r] = mean_i sort(X[i])[r]``; every value is replaced by the reference value of its rank within its
    cell, and tied values (the many zeros of single-cell data) by the mean of the reference over the ranks
    they share. Afterwards every cell has the same distribution of values (up to ties).

    Parameters
    ----------
    X
        Cells x genes, finite.

    Returns
    -------
    numpy.ndarray
        Float64 array of the shape of ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> quantile_normalise(np.array([[1.0, 5.0, 3.0], [2.0, 4.0, 6.0]]))
    array([[1.5, 5.5, 3.5],
           [1.5, 3.5, 5.5]])
    >>> quantile_normalise(np.array([[0.0, 0.0, 2.0], [1.0, 3.0, 5.0]]))
    array([[1. , 1. , 3.5],
           [0.5, 1.5, 3.5]])
    """
    x = np.asarray(X, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"quantile_normalise needs a non-empty 2-d array (cells x genes), got shape {x.shape}.")
    if not np.all(np.isfinite(x)):
        raise ValueError("quantile_normalise: the data contain NaN or infinite values; remove them first.")
    order = np.argsort(x, axis=1, kind="stable")
    srt = np.take_along_axis(x, order, axis=1)
    ref = srt.mean(axis=0)
    cum = np.concatenate([[0.0], np.cumsum(ref)])
    out = np.empty_like(x)
    n = x.shape[1]
    for i in range(x.shape[0]):
        row = srt[i]
        starts = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])
        ends = np.r_[starts[1:], n]
        values = (cum[ends] - cum[starts]) / (ends - starts)
        out[i, order[i]] = np.repeat(values, ends - starts)
    return out


def select_variable_genes(X: np.ndarray, n_genes: int) -> np.ndarray:
    """Indices of the ``n_genes`` columns of ``X`` with the largest variance over cells, in column order.

    Ties are broken by column order.

    Examples
    --------
    >>> import numpy as np
    >>> select_variable_genes(np.array([[0.0, 1.0, 5.0], [0.0, 3.0, 0.0]]), 2)
    array([1, 2])
    """
    x = np.asarray(X, dtype=np.float64)
    if not 1 <= n_genes <= x.shape[1]:
        raise ValueError(f"n_genes must be between 1 and the {x.shape[1]} genes available, got {n_genes}.")
    var = x.var(axis=0)
    return np.sort(np.argsort(-var, kind="stable")[:n_genes])


@dataclass(frozen=True, eq=False)
class ZeiselData:
    """The preprocessed Zeisel data handed to every method.

    Attributes
    ----------
    normalised
        Cells x genes: quantile-normalised ``log1p`` counts of the selected genes, each gene divided by its
        standard deviation over cells (non-negative, unit variance; the input of the ``"normalised"`` setting).
    counts
        Cells x genes: the raw integer UMI counts of the same genes (the ``"counts"`` setting).
    labels
        Level-1 class of every cell.
    gene_names, cell_names
        Names of the genes (columns) and cells (rows).
    gene_index
        Positions of the selected genes among the genes of the source AnnData.
    """

    normalised: np.ndarray
    counts: np.ndarray
    labels: np.ndarray
    gene_names: np.ndarray
    cell_names: np.ndarray
    gene_index: np.ndarray


def prepare_zeisel(
    adata: AnnData | None = None,
    *,
    n_genes: int = 558,
    n_cells: int | None = None,
    label_key: str = "level1class",
    subsample_seed: int = 0,
) -> ZeiselData:
    """Load and preprocess the Zeisel data as in the paper's Appendix C.1 (with the genes at hand).

    1. ``adata`` (default: ``scsparse.data.load("zeisel_full")``, 3005 cells x 4000 genes, raw counts in
       ``layers["counts"]``), optionally subsampled to ``n_cells`` cells (stratified by class, fixed seed);
    2. ``log1p`` of the counts of all genes, quantile-normalised across cells (:func:`quantile_normalise`);
    3. the ``n_genes`` genes with the largest variance of the normalised values (:func:`select_variable_genes`);
    4. each selected gene divided by its standard deviation over cells (no centring: values stay
       non-negative, so NMF gets the same matrix as the autoencoders).

    The preprocessing uses no labels; like the paper's, it is done once on all cells.

    Parameters
    ----------
    adata
        Cells x genes with integer counts in ``layers["counts"]`` (or in ``X``) and ``obs[label_key]``.
    n_genes
        Genes kept (the paper: 558 of 19,972; here of the 4000 available).
    n_cells
        Subsample this many cells (``None``: all).
    label_key
        Column of ``adata.obs`` with the cell types.
    subsample_seed
        Seed of the subsample.

    Returns
    -------
    ZeiselData

    Examples
    --------
    >>> data = prepare_zeisel(n_genes=558)  # doctest: +SKIP
    >>> data.normalised.shape  # doctest: +SKIP
    (3005, 558)
    """
    import scipy.sparse as sp

    if adata is None:
        from scsparse.data import load

        adata = load("zeisel_full")
    if label_key not in adata.obs.columns:
        raise ValueError(f"label_key={label_key!r} is not a column of adata.obs (columns: {list(adata.obs.columns)}).")
    labels = adata.obs[label_key].astype(str).to_numpy()
    cells = np.arange(adata.n_obs)
    if n_cells is not None and n_cells < adata.n_obs:
        from sklearn.model_selection import train_test_split

        cells, _ = train_test_split(cells, train_size=int(n_cells), stratify=labels, random_state=subsample_seed)
        cells = np.sort(cells)
    mat = adata.layers["counts"] if "counts" in adata.layers else adata.X
    mat = mat[cells]
    counts = np.asarray(mat.toarray() if sp.issparse(mat) else mat, dtype=np.float64)
    if np.any(counts < 0) or np.any(counts != np.round(counts)):
        raise ValueError("prepare_zeisel needs raw integer counts in adata.layers['counts'] (or adata.X).")
    labels = labels[cells]
    expressed = np.flatnonzero(counts.sum(axis=0) > 0)
    qn = quantile_normalise(np.log1p(counts[:, expressed]))
    keep = select_variable_genes(qn, min(int(n_genes), expressed.size))
    normalised = qn[:, keep]
    sd = normalised.std(axis=0, keepdims=True)
    normalised = normalised / np.where(sd > 0, sd, 1.0)
    gene_index = expressed[keep]
    return ZeiselData(
        normalised=normalised.astype(np.float32),
        counts=counts[:, gene_index].astype(np.float32),
        labels=labels,
        gene_names=np.asarray(adata.var_names)[gene_index].astype(str),
        cell_names=np.asarray(adata.obs_names)[cells].astype(str),
        gene_index=gene_index,
    )


def split_cells(labels: np.ndarray, seed: int, test_fraction: float = TEST_FRACTION) -> tuple[np.ndarray, np.ndarray]:
    """Stratified train/test split of the cells for one seed (independent of every model).

    Returns
    -------
    tuple of numpy.ndarray
        Sorted ``train_idx`` and ``test_idx``.

    Examples
    --------
    >>> import numpy as np
    >>> train, test = split_cells(np.array(["a"] * 10 + ["b"] * 10), seed=0, test_fraction=0.2)
    >>> len(train), len(test)
    (16, 4)
    """
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(labels))
    train, test = train_test_split(
        idx, test_size=test_fraction, stratify=labels, random_state=int(seed) + _SPLIT_SEED_OFFSET
    )
    return np.sort(train), np.sort(test)
