"""The direction of a gene in a programme, from the data: correlation of its expression with the factor's activity.

The sign of ``w_jk`` does not say whether gene ``j`` goes up or down with factor ``k`` (the decoder is nonlinear and
each gene's output can point either way), so every place that speaks of direction — the orientation of the
factors after training, :func:`scsparse.tl.factor_gene_correlation`, :func:`scsparse.tl.top_genes` and the
direction-split gene sets of :func:`scsparse.tl.enrich` — uses :func:`expression_factor_correlation`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from scsparse._matrix import iter_row_chunks

__all__ = ["CorrelationSums", "expression_factor_correlation"]


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


class CorrelationSums:
    """Running sums of expression and factor activities, fed block by block, for their Pearson correlation.

    What :func:`expression_factor_correlation` accumulates over the blocks of cells; a caller that computes the
    activities block by block (the factors' orientation after training) feeds it directly, so that neither the
    matrix nor the activities of all cells are held at once.

    Parameters
    ----------
    n_genes, n_factors
        Shape of the correlation.
    normalize
        Scale each cell to 10,000 counts and take ``log1p`` (for counts).

    Examples
    --------
    >>> import numpy as np
    >>> sums = CorrelationSums(2, 1, normalize=False)
    >>> sums.add(np.array([[1.0, 3.0], [2.0, 2.0]]), np.array([[0.0], [1.0]]))
    >>> sums.add(np.array([[3.0, 1.0]]), np.array([[2.0]]))
    >>> sums.correlation().round(3)
    array([[ 1.],
           [-1.]])
    """

    def __init__(self, n_genes: int, n_factors: int, normalize: bool) -> None:
        self.normalize = bool(normalize)
        self.n = 0
        self.sx, self.sxx = np.zeros(n_genes), np.zeros(n_genes)
        self.sxz = np.zeros((n_genes, n_factors))
        self.sz, self.szz = np.zeros(n_factors), np.zeros(n_factors)

    def add(self, block, z: np.ndarray, keep: np.ndarray | None = None) -> None:
        """Add a block of cells: their expression (cells x genes) and their activities (cells x factors); with
        ``keep``, a boolean mask of the block's rows, only those cells.
        """
        if keep is not None:
            block, z = block[np.flatnonzero(keep)], z[keep]
        z = np.asarray(z, dtype=np.float64)
        if z.shape[0] == 0:
            return
        x = _normalised_block(block, self.normalize)
        if sp.issparse(x):
            self.sx += np.asarray(x.sum(0)).ravel()
            self.sxx += np.asarray(x.multiply(x).sum(0)).ravel()
            self.sxz += np.asarray(x.T @ z)
        else:
            self.sx += x.sum(0)
            self.sxx += (x * x).sum(0)
            self.sxz += x.T @ z
        self.sz += z.sum(0)
        self.szz += (z * z).sum(0)
        self.n += z.shape[0]

    def correlation(self) -> np.ndarray:
        """Genes x factors Pearson correlations, in ``[-1, 1]``; 0 where a gene or factor has no variance or fewer
        than two cells were added.
        """
        n = self.n
        if n < 2:
            return np.zeros_like(self.sxz)
        cov = n * self.sxz - np.outer(self.sx, self.sz)
        var_x = np.clip(n * self.sxx - self.sx**2, 0.0, None)
        var_z = np.clip(n * self.szz - self.sz**2, 0.0, None)
        denom = np.sqrt(np.outer(var_x, var_z))
        tiny = 1e-12 * max(float(denom.max()) if denom.size else 0.0, 1e-300)
        r = np.where(denom > tiny, cov / np.where(denom > tiny, denom, 1.0), 0.0)
        return np.clip(r, -1.0, 1.0)


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
    if cells is not None:
        cells = np.asarray(cells, dtype=bool)
        if cells.shape != (Z.shape[0],):
            raise ValueError(f"cells must be a boolean mask of length {Z.shape[0]}, got shape {cells.shape}.")
    sums = CorrelationSums(mat.shape[1], Z.shape[1], normalize)
    start = 0
    for block in iter_row_chunks(mat):  # blocks of at most about 4.2 million values
        stop = start + block.shape[0]
        sums.add(block, Z[start:stop], None if cells is None else cells[start:stop])
        start = stop
    return sums.correlation()
