"""A data-driven start for the mask ``W``: the gene loadings of a non-negative factorisation of the data.

With every ``w_jk`` started at the same value, which factor ends up with which programme is decided by the random
draw of the other weights, and two seeds cut the cells' programmes differently. Started from the gene loadings of
an NMF of the normalised data, each factor begins with a set of genes that go together in the data, the same for
every seed; the training then moves, prunes and grows those sets under the Spike-and-Slab Lasso prior.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

from scsparse._matrix import get_matrix

__all__ = ["INIT_CELLS", "mask_start"]

#: At most this many cells (evenly spaced, the same for every seed) enter the factorisation.
INIT_CELLS = 10_000


def _normalised(adata: Any, layer: str | None, counts: bool, n_cells: int) -> np.ndarray | sp.csr_matrix:
    """Evenly spaced cells of the registered matrix, normalised as cNMF does: counts scaled to the median library
    size and ``log1p``; then every gene divided by its standard deviation (not centred), so genes weigh alike.
    """
    matrix = get_matrix(adata, layer)
    n_obs = matrix.shape[0]
    rows = np.unique(np.linspace(0, n_obs - 1, num=min(n_cells, n_obs)).round().astype(np.int64))
    x = matrix[rows]
    if counts:
        x = sp.csr_matrix(x, dtype=np.float64)
        library = np.asarray(x.sum(1)).ravel()
        scale = np.median(library[library > 0]) / np.where(library > 0, library, 1.0)
        x = sp.csr_matrix(x.multiply(scale[:, None])).log1p()
    else:  # normalised data: shifted to be non-negative, as NMF needs
        x = np.asarray(x.toarray() if sp.issparse(x) else x, dtype=np.float64)
        x = x - x.min(0)
    mean = np.asarray(x.mean(0)).ravel()
    sq = np.asarray(x.multiply(x).mean(0)).ravel() if sp.issparse(x) else (x * x).mean(0)
    sd = np.sqrt(np.maximum(sq - mean**2, 0.0))
    inv = 1.0 / np.where(sd > 0, sd, 1.0)
    return sp.csr_matrix(x.multiply(inv[None, :])) if sp.issparse(x) else x * inv[None, :]


def mask_start(
    adata: Any,
    layer: str | None,
    n_latent: int,
    *,
    counts: bool = True,
    w_high: float = 0.6,
    n_cells: int = INIT_CELLS,
    max_iter: int = 300,
) -> np.ndarray:
    """Initial ``W`` (genes x factors) from the gene loadings of an NMF of the normalised data.

    The factorisation is deterministic (NNDSVD start, coordinate descent), so the start is the same for every
    seed. Each factor's loadings are divided by their largest value and mapped linearly onto ``[0, w_high]``: a
    factor's strongest genes start in the slab of the default prior (``|w| > 0.26`` at ``eta = 0.5``), genes it
    barely loads start in the spike.

    Parameters
    ----------
    adata
        The registered AnnData.
    layer
        Its layer holding the data (``None``: ``X``).
    n_latent
        Number of factors ``K``; at most the number of cells or genes used.
    counts
        Whether the data are counts (normalised per cell first) or already normalised (shifted to be
        non-negative).
    w_high
        Initial ``|w|`` of each factor's strongest gene.
    n_cells
        At most this many evenly spaced cells enter the factorisation.
    max_iter
        Iterations of the NMF.

    Returns
    -------
    numpy.ndarray
        ``(n_genes, n_latent)`` float32; factors the factorisation cannot fill (more factors than the data's rank)
        are left at zero.

    Examples
    --------
    >>> import scsparse
    >>> adata = scsparse.data.kang_pbmc()
    >>> start = mask_start(adata, "counts", 20)
    >>> start.shape, round(float(start.max()), 2)
    ((2004, 20), 0.6)
    """
    from sklearn.decomposition import NMF
    from sklearn.exceptions import ConvergenceWarning

    x = _normalised(adata, layer, counts, n_cells)
    k = min(int(n_latent), *x.shape)
    # NNDSVD starts from a randomised SVD: a fixed random_state makes the start the same on every call
    nmf = NMF(n_components=k, init="nndsvd", solver="cd", max_iter=max_iter, tol=1e-4, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        nmf.fit(x)
    h = np.asarray(nmf.components_, dtype=np.float64).T  # genes x k
    top = h.max(0)
    h = h / np.where(top > 0, top, 1.0)
    start = np.zeros((x.shape[1], int(n_latent)), dtype=np.float32)
    start[:, :k] = (w_high * h).astype(np.float32)
    return start
