"""Pairing factors of two fits one to one: the assignment that every comparison of fits, seeds or truths uses.

Two fits of the same data have their factors in arbitrary order, so comparing them starts by pairing each factor of
one with at most one of the other. :func:`match_pairs` does it on any score (``|corr|`` of loadings or codes, a
Jaccard index, an overlap count) by the Hungarian algorithm, maximising the summed score;
:func:`matched_partners` reads the pairing from one side, with an unmatched factor's partner ``-1`` and its score
``0``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["match_pairs", "matched_partners"]


def match_pairs(score: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """One-to-one pairs of rows and columns of ``score`` with the largest summed score (Hungarian algorithm).

    Parameters
    ----------
    score
        2-d, rows x columns (e.g. the factors of one fit x those of another); larger is better. The sizes may
        differ: ``min(n_rows, n_columns)`` pairs are made and the rest stays unmatched.

    Returns
    -------
    rows, columns
        Index arrays of equal length, ``rows`` increasing: row ``rows[i]`` is paired with column ``columns[i]``,
        and ``score[rows, columns]`` are the matched scores. The pairing is that of
        :func:`scipy.optimize.linear_sum_assignment` with ``maximize=True``.

    Raises
    ------
    ValueError
        A score that is not 2-d, or holds NaN or infinite values.

    Examples
    --------
    >>> import numpy as np
    >>> rows, cols = match_pairs(np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.4]]))
    >>> rows.tolist(), cols.tolist()
    ([0, 1], [1, 0])
    """
    from scipy.optimize import linear_sum_assignment

    score = np.asarray(score)
    if score.ndim != 2:
        raise ValueError(f"score must be 2-d (rows x columns), got shape {score.shape}.")
    rows, cols = linear_sum_assignment(score, maximize=True)
    return rows, cols


def matched_partners(score: ArrayLike, *, of: Literal["rows", "columns"] = "rows") -> tuple[np.ndarray, np.ndarray]:
    """Each row's (or column's) partner under :func:`match_pairs`, and the score of the pair.

    Parameters
    ----------
    score
        2-d, rows x columns, as for :func:`match_pairs`.
    of
        ``"rows"``: one entry per row; ``"columns"``: one per column.

    Returns
    -------
    partner, matched
        ``partner[i]``: the column (row) paired with row (column) ``i``, ``-1`` when it is unmatched (the other side
        has fewer); ``matched[i]``: the pair's score, ``0.0`` for an unmatched one, so that a mean over ``matched``
        counts an unmatched factor as no agreement.

    Examples
    --------
    >>> import numpy as np
    >>> score = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.4]])
    >>> partner, matched = matched_partners(score)
    >>> partner.tolist(), matched.tolist()
    ([1, 0, -1], [0.9, 0.8, 0.0])
    >>> matched_partners(score, of="columns")[0].tolist()
    [1, 0]
    """
    if of not in ("rows", "columns"):
        raise ValueError(f"of must be 'rows' or 'columns', got {of!r}.")
    score = np.asarray(score)
    rows, cols = match_pairs(score)
    n = score.shape[0] if of == "rows" else score.shape[1]
    partner = np.full(n, -1, dtype=np.int64)
    matched = np.zeros(n, dtype=np.float64)
    here, there = (rows, cols) if of == "rows" else (cols, rows)
    partner[here] = there
    matched[here] = score[rows, cols]
    return partner, matched
