"""The sign convention of the factors: each programme's top genes go up with its factor.

Flipping the sign of factor ``k`` (``z_k -> -z_k``) together with its column of ``W`` leaves the model unchanged:
the decoder sees ``w_j ⊙ z``, the Spike-and-Slab Lasso prior depends on ``|w_jk|`` and the prior on ``z`` is
symmetric (for a learned ``Sigma_z``, row and column ``k`` flip with it). Training therefore ends with an
arbitrary sign per factor, and a programme such as the interferon response can come out as "down with its
factor". The sign is fixed from the data: factor ``k`` is oriented so that

``s_k = sum_{j in T_k} |w_jk| r_jk >= 0``,

where ``T_k`` are the factor's top genes (the ``n_top`` genes of largest ``|w_jk|`` among those with
``p*_jk > t``, the genes a factor is reported by) and ``r_jk`` is the Pearson correlation across cells between
the factor's posterior mean and gene ``j``'s normalised expression (:func:`expression_factor_correlation`, the
correlation behind :func:`scsparse.tl.factor_gene_correlation`). A factor with no gene above ``t`` keeps its
sign. Like the convention of PCA implementations that make each component's largest loading positive, this
orients a factor by its strongest genes: a factor that contrasts two programmes (natural killer cell genes
against many weaker monocyte genes, say) is oriented so that its top genes go up, and the genes of the other
side go down with it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._ranking import rank_genes
from ._validation import iter_row_chunks

__all__ = ["expression_factor_correlation", "orientation_signs"]


def _normalised_block(x, normalize: bool):
    """A block of cells as float64, scaled to 10,000 counts per cell and ``log1p``-transformed if ``normalize``."""
    if sp.issparse(x):
        x = sp.csr_matrix(x, dtype=np.float64)
        if normalize:
            total = np.asarray(x.sum(1)).ravel()
            x = sp.diags(1e4 / np.where(total > 0, total, 1.0)) @ x
            x.data = np.log1p(x.data)
        return x
    x = np.asarray(x, dtype=np.float64)
    if normalize:
        total = x.sum(1, keepdims=True)
        x = np.log1p(x * (1e4 / np.where(total > 0, total, 1.0)))
    return x


def expression_factor_correlation(mat, Z: np.ndarray, normalize: bool, cells: np.ndarray | None = None) -> np.ndarray:
    """Pearson correlation (genes x factors) between expression and factor activities, streamed over cells.

    Parameters
    ----------
    mat
        Cells x genes expression: dense, scipy sparse or the on-disk matrix of a backed AnnData (read in
        contiguous blocks of cells, so memory does not grow with the number of cells).
    Z
        Cells x factors activities (rows aligned with ``mat``).
    normalize
        Scale each cell to 10,000 counts and take ``log1p`` (for counts).
    cells
        Boolean mask of the cells to use (default: all).

    Returns
    -------
    numpy.ndarray
        Genes x factors, values in ``[-1, 1]``; 0 where a gene or factor has no variance or fewer than two
        cells are used.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[1.0, 3.0], [2.0, 2.0], [3.0, 1.0]])
    >>> expression_factor_correlation(x, np.array([[0.0], [1.0], [2.0]]), normalize=False).round(3)
    array([[ 1.],
           [-1.]])
    """
    Z = np.asarray(Z, dtype=np.float64)
    n_genes, n_factors = mat.shape[1], Z.shape[1]
    if cells is not None:
        cells = np.asarray(cells, dtype=bool)
        if cells.shape != (Z.shape[0],):
            raise ValueError(f"cells must be a boolean mask of length {Z.shape[0]}, got shape {cells.shape}.")
    n = Z.shape[0] if cells is None else int(cells.sum())
    if n < 2:
        return np.zeros((n_genes, n_factors))
    sx, sxx, sxz = np.zeros(n_genes), np.zeros(n_genes), np.zeros((n_genes, n_factors))
    sz, szz = np.zeros(n_factors), np.zeros(n_factors)
    start = 0
    for block in iter_row_chunks(mat):  # blocks of at most about 16.8 million values
        stop = start + block.shape[0]
        z = Z[start:stop]
        if cells is not None:
            keep = cells[start:stop]
            block, z = block[np.flatnonzero(keep)], z[keep]
        start = stop
        if z.shape[0] == 0:
            continue
        x = _normalised_block(block, normalize)
        if sp.issparse(x):
            sx += np.asarray(x.sum(0)).ravel()
            sxx += np.asarray(x.multiply(x).sum(0)).ravel()
            sxz += np.asarray(x.T @ z)
        else:
            sx += x.sum(0)
            sxx += (x * x).sum(0)
            sxz += x.T @ z
        sz += z.sum(0)
        szz += (z * z).sum(0)
    cov = n * sxz - np.outer(sx, sz)
    var_x = np.clip(n * sxx - sx**2, 0.0, None)
    var_z = np.clip(n * szz - sz**2, 0.0, None)
    denom = np.sqrt(np.outer(var_x, var_z))
    tiny = 1e-12 * max(float(denom.max()) if denom.size else 0.0, 1e-300)
    r = np.where(denom > tiny, cov / np.where(denom > tiny, denom, 1.0), 0.0)
    return np.clip(r, -1.0, 1.0)


def orientation_signs(
    corr: np.ndarray, W: np.ndarray, pip: np.ndarray, pip_threshold: float = 0.5, n_top: int | None = 10
) -> np.ndarray:
    """The sign (+1 or -1) per factor that makes its top genes go up with it (see the module notes).

    Parameters
    ----------
    corr
        Genes x factors correlations ``r_jk`` (:func:`expression_factor_correlation`).
    W, pip
        Genes x factors loadings and inclusion probabilities.
    pip_threshold
        Genes with ``p*_jk > pip_threshold`` are the candidates of factor ``k``.
    n_top
        Number of candidates, by decreasing ``|w_jk|``, that orient the factor (``None``: all of them).

    Returns
    -------
    numpy.ndarray
        ``-1.0`` for the factors to flip (``s_k < 0``), ``1.0`` otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> corr = np.array([[-0.8, 0.5], [0.6, -0.1], [0.6, 0.3]])
    >>> W, pip = np.array([[1.0, 1.0], [0.9, 1.0], [0.9, 1.0]]), np.full((3, 2), 0.9)
    >>> orientation_signs(corr, W, pip)  # factor 0: two genes up outweigh the top gene going down
    array([1., 1.])
    >>> orientation_signs(corr, W, pip, n_top=1)  # the largest |w| alone decides
    array([-1.,  1.])
    """
    if n_top is not None and int(n_top) < 1:
        raise ValueError(f"n_top must be a positive number of genes or None, got {n_top}.")
    absw = np.abs(np.asarray(W, dtype=np.float64))
    pip = np.asarray(pip)
    weight = np.zeros_like(absw)
    for k in range(absw.shape[1]):
        top = rank_genes(absw[:, k], pip[:, k], pip_threshold, n_top)  # the genes the factor is reported by
        weight[top, k] = absw[top, k]
    score = (weight * np.asarray(corr, dtype=np.float64)).sum(0)
    return np.where(score < 0, -1.0, 1.0)
