"""A factor's programme: its genes with ``p*_jk > t``, ranked by decreasing ``|w_jk|``; overlap of programmes.

One rule serves every place that names a factor's genes: the models' top and anchor genes, the orientation of
the factors (:mod:`scsparse.model._orientation`), :func:`scsparse.tl.top_genes` and the gene sets
:func:`scsparse.tl.enrich` tests. Ties in ``|w_jk|`` go to the gene that comes first in ``var_names``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scsparse._checks import check_pip_threshold

__all__ = ["OVERLAP_FRACTION", "jaccard_matrix", "rank_biased_overlap", "rank_genes"]

#: Two factors *overlap* when the Jaccard index of their programmes (genes with ``p*`` above the threshold) exceeds
#: this: distinct programmes share few genes, while a programme split over two columns, or two programmes merged,
#: share most (:doc:`/user-guide/settings`). A small programme inside a broad catch-all column has a small Jaccard
#: index; the broad flag covers that column.
OVERLAP_FRACTION = 0.5


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
    keep = np.asarray(pip) > check_pip_threshold(pip_threshold)
    if absw.ndim != 1 or keep.shape != absw.shape:
        raise ValueError(f"loading and pip must be 1-d and aligned, got shapes {absw.shape} and {keep.shape}.")
    if among is not None:
        keep &= np.asarray(among, dtype=bool)
    if n_top is not None and int(n_top) < 0:
        raise ValueError(f"n_top must be a non-negative number of genes or None, got {n_top}.")
    cand = np.flatnonzero(keep)
    order = cand[np.argsort(-absw[cand], kind="stable")]
    return order if n_top is None else order[: int(n_top)]


def jaccard_matrix(included: np.ndarray, other: np.ndarray | None = None) -> np.ndarray:
    """Jaccard index ``|A & B| / |A | B|`` of the gene sets of every pair of factors (0 where both are empty).

    Parameters
    ----------
    included
        Genes x factors boolean matrix (``p*`` above the threshold).
    other
        A second genes x factors matrix (e.g. another fit's): the index of every factor of ``included`` against
        every factor of ``other``. ``None``: of ``included``'s factors against each other.

    Returns
    -------
    numpy.ndarray
        Factors x factors (of ``other``); without ``other`` symmetric, with the diagonal set to 0.

    Examples
    --------
    >>> jaccard_matrix(np.array([[1, 1], [1, 0], [0, 1]], dtype=bool))
    array([[0.        , 0.33333333],
           [0.33333333, 0.        ]])
    >>> jaccard_matrix(np.array([[1], [1], [0]], dtype=bool), np.array([[1, 0], [0, 0], [0, 1]], dtype=bool))
    array([[0.5, 0. ]])
    """
    x = np.asarray(included, dtype=np.float64)
    y = x if other is None else np.asarray(other, dtype=np.float64)
    inter = x.T @ y
    union = x.sum(0)[:, None] + y.sum(0)[None, :] - inter
    out = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
    if other is None:
        np.fill_diagonal(out, 0.0)
    return out


def rank_biased_overlap(a: Sequence[int], b: Sequence[int], p: float = 0.9) -> float:
    """Rank-biased overlap of two rankings (Webber, Moffat & Zobel 2010), extrapolated to infinite depth.

    ``RBO = A_k p^k + (1 - p) sum_{d=1..k} p^(d-1) A_d``, where ``A_d`` is the share of the first ``d`` items the
    two rankings have in common and ``k`` the depth both reach (the shorter length): the overlap seen at depth
    ``k`` is assumed to continue (the paper's extrapolation for lists of equal length, applied to the first ``k``
    items of each). With ``p = 0.9`` the first 10 ranks carry 65% of the weight, so the measure is about a
    programme's core, and agreement at the top counts more than agreement further down.

    Parameters
    ----------
    a, b
        Rankings without repeats (strongest first).
    p
        Persistence, in ``(0, 1)``: how far down the rankings the comparison looks.

    Returns
    -------
    float
        In ``[0, 1]``: 1 for identical rankings, 0 for disjoint ones; ``nan`` when either is empty.

    Examples
    --------
    >>> rank_biased_overlap([1, 2, 3], [1, 2, 3])
    1.0
    >>> round(rank_biased_overlap([1, 2, 3, 4], [2, 1, 3, 4]), 3)
    0.9
    >>> rank_biased_overlap([1, 2], [3, 4])
    0.0
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}.")
    k = min(len(a), len(b))
    if k == 0:
        return float("nan")
    seen_a: set = set()
    seen_b: set = set()
    common = 0
    total = 0.0
    share = 0.0
    for d in range(1, k + 1):
        x, y = a[d - 1], b[d - 1]
        if x == y:
            common += 1
        else:
            common += (x in seen_b) + (y in seen_a)
        seen_a.add(x)
        seen_b.add(y)
        share = common / d
        total += p ** (d - 1) * share
    return float(share * p**k + (1.0 - p) * total)
