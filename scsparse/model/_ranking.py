"""The rule by which a factor is reported: its genes with ``p*_jk > t``, by decreasing ``|w_jk|``.

One rule serves every place that names a factor's genes: the models' top and anchor genes, the orientation of
the factors (:mod:`scsparse.model._orientation`), :func:`scsparse.tl.top_genes` and the gene sets
:func:`scsparse.tl.enrich` tests. Ties in ``|w_jk|`` go to the gene that comes first in ``var_names``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["rank_genes"]


def rank_genes(
    loading: np.ndarray,
    pip: np.ndarray,
    pip_threshold: float = 0.5,
    n_top: int | None = None,
    among: np.ndarray | None = None,
) -> np.ndarray:
    """Indices of one factor's genes with ``p* > pip_threshold``, by decreasing ``|w|``.

    Parameters
    ----------
    loading
        The factor's loadings ``w_jk`` over genes (1-d; the sign is ignored).
    pip
        The factor's inclusion probabilities ``p*_jk`` (1-d, aligned with ``loading``).
    pip_threshold
        Genes with ``p* > pip_threshold`` are the factor's genes.
    n_top
        Keep the first ``n_top`` (``None``: all of them).
    among
        Boolean mask of the genes that may be chosen, in addition to the threshold (e.g. the genes of one
        direction, or the anchor genes).

    Returns
    -------
    numpy.ndarray
        Integer gene indices, strongest first; ties in ``|w|`` in gene order.

    Examples
    --------
    >>> import numpy as np
    >>> w = np.array([0.2, -0.9, 0.5, 0.9])
    >>> p = np.array([0.9, 0.8, 0.3, 0.7])
    >>> rank_genes(w, p)
    array([1, 3, 0])
    >>> rank_genes(w, p, n_top=1, among=w > 0)
    array([3])
    """
    absw = np.abs(np.asarray(loading, dtype=np.float64))
    keep = np.asarray(pip) > pip_threshold
    if absw.ndim != 1 or keep.shape != absw.shape:
        raise ValueError(f"loading and pip must be 1-d and aligned, got shapes {absw.shape} and {keep.shape}.")
    if among is not None:
        keep &= np.asarray(among, dtype=bool)
    if n_top is not None and int(n_top) < 0:
        raise ValueError(f"n_top must be a non-negative number of genes or None, got {n_top}.")
    cand = np.flatnonzero(keep)
    order = cand[np.argsort(-absw[cand], kind="stable")]
    return order if n_top is None else order[: int(n_top)]
