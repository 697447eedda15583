"""Metrics on gene programmes given as gene lists: redundancy, agreement between fits, and batch association."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scsparse.results import jaccard_matrix, match_pairs

__all__ = ["batch_association", "matched_programme_agreement", "programme_redundancy"]


def programme_indicator(programmes: Sequence[Sequence[int]], n_genes: int) -> np.ndarray:
    """Genes x programmes boolean membership."""
    out = np.zeros((int(n_genes), len(programmes)), dtype=bool)
    for k, genes in enumerate(programmes):
        idx = np.asarray(genes, dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= n_genes):
            raise ValueError(f"Programme {k} has gene indices outside 0..{n_genes - 1}.")
        out[idx, k] = True
    return out


def jaccard_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Jaccard index between the columns of two boolean genes x programmes matrices (0 where both are empty)."""
    return jaccard_matrix(a, b)


def programme_redundancy(programmes: Sequence[Sequence[int]], n_genes: int) -> np.ndarray:
    """For each programme, its largest Jaccard index with another programme of the same fit.

    0 means the programme shares no gene with any other; 1 means another programme has exactly its genes. A fit
    that splits one biological programme over several factors, or repeats one, scores high.

    Parameters
    ----------
    programmes
        Gene indices of each programme (one fit; e.g. each factor and direction).
    n_genes
        Number of genes the indices refer to.

    Returns
    -------
    numpy.ndarray
        One value per programme (0 for a fit with a single programme).

    Examples
    --------
    >>> programme_redundancy([[0, 1, 2], [2, 3, 4], [5, 6]], n_genes=7).round(2).tolist()
    [0.2, 0.2, 0.0]
    """
    if len(programmes) < 2:
        return np.zeros(len(programmes))
    x = programme_indicator(programmes, n_genes)
    jac = jaccard_between(x, x)
    np.fill_diagonal(jac, 0.0)
    return jac.max(1)


def matched_programme_agreement(
    programmes_a: Sequence[Sequence[int]], programmes_b: Sequence[Sequence[int]], n_genes: int
) -> float:
    """Agreement of two fits' programmes: the mean Jaccard index over a one-to-one matching of their programmes.

    Programmes are paired by a Hungarian assignment that maximises the summed Jaccard index; the mean runs over
    the larger of the two programme counts, so a programme without a counterpart counts as 0 (a fit that finds
    extra programmes in one seed only is less stable than one that finds the same programmes every time).

    Parameters
    ----------
    programmes_a, programmes_b
        Gene indices of each programme of the two fits (e.g. two seeds of one method).
    n_genes
        Number of genes the indices refer to.

    Returns
    -------
    float
        Between 0 (nothing shared) and 1 (the same programmes); ``nan`` when neither fit has a programme.

    Examples
    --------
    >>> matched_programme_agreement([[0, 1], [2, 3]], [[2, 3], [0, 1]], n_genes=4)
    1.0
    >>> matched_programme_agreement([[0, 1], [2, 3]], [[0, 1]], n_genes=4)
    0.5
    """
    n = max(len(programmes_a), len(programmes_b))
    if n == 0:
        return float("nan")
    if min(len(programmes_a), len(programmes_b)) == 0:
        return 0.0
    jac = jaccard_between(programme_indicator(programmes_a, n_genes), programme_indicator(programmes_b, n_genes))
    rows, cols = match_pairs(jac)
    return float(jac[rows, cols].sum() / n)


def batch_association(scores: np.ndarray, batch: Sequence[object] | np.ndarray) -> np.ndarray:
    """Share of each programme's cell-to-cell variance explained by batch (eta squared of a one-way ANOVA).

    0 means the programme's activity has the same mean in every batch; 1 means it only tells batches apart.

    Parameters
    ----------
    scores
        Cells x programmes activity (e.g. factor values, NMF usages).
    batch
        The batch of each cell.

    Returns
    -------
    numpy.ndarray
        One value per programme in ``[0, 1]`` (0 for a constant programme).

    Examples
    --------
    >>> import numpy as np
    >>> s = np.array([[0.0, 1.0], [0.0, -1.0], [1.0, 1.0], [1.0, -1.0]])
    >>> batch_association(s, ["a", "a", "b", "b"]).tolist()
    [1.0, 0.0]
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim == 1:
        scores = scores[:, None]
    batch = np.asarray(batch)
    if batch.shape[0] != scores.shape[0]:
        raise ValueError(f"batch has {batch.shape[0]} entries for {scores.shape[0]} cells.")
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores contain NaN or infinite values.")
    _, codes = np.unique(batch, return_inverse=True)
    centred = scores - scores.mean(0)
    total = (centred**2).sum(0)
    counts = np.bincount(codes)
    means = np.stack([np.bincount(codes, weights=col) / counts for col in centred.T], axis=1)
    between = (counts[:, None] * means**2).sum(0)
    return np.divide(between, total, out=np.zeros_like(total), where=total > 0)
