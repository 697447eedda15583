"""Disentanglement of a representation against discrete labels: one dimension per biological process.

The scores of DRVI (Moinfar & Theis, 2024, bioRxiv 10.1101/2024.11.06.622266), written from their definitions.
Each label category (a cell type, a condition) is a binary process; a *similarity* scores every dimension against
every process, giving a matrix ``dimensions x processes``, and an *aggregation* turns the matrix into one number:

Similarities (each in ``[0, 1]``, 1: the dimension alone tells the process apart):

- **SMI**, scaled mutual information: each dimension cut into ``n_bins`` bins of equal width over its range,
  ``MI(bins; process) / H(process)`` (natural logarithms), the share of the process's entropy the dimension
  explains;
- **SPN**, same-process neighbours: the cells ordered along the dimension, the share of a process's cells whose
  next cell belongs to the process too, above what a random order gives (the process's frequency ``f``) and
  rescaled by ``1 - f``; ties in the dimension are put in a random (seeded) order, so an inactive, constant
  dimension scores 0 whatever the order of the cells;
- **ASC**, absolute Spearman correlation between the dimension and the process's indicator (the authors find it
  unsuited to discrete processes; given for reference).

Aggregations (over the ``P`` processes):

- **LMS**, latent matching score: the best one-to-one matching of processes to dimensions (Hungarian), the sum of
  the matched similarities over ``P`` (a process left without a dimension counts 0): each process needs its own
  dimension;
- **MSAS**, most similar averaging score: the mean over processes of the best dimension's similarity;
- **MSGS**, most similar gap score: the mean over processes of the gap between the best and the second-best
  dimension: one dimension per process, not several.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from scsparse.results import match_pairs

__all__ = [
    "DISENTANGLEMENT_AGGREGATIONS",
    "DISENTANGLEMENT_SIMILARITIES",
    "absolute_spearman",
    "label_disentanglement",
    "latent_matching_score",
    "most_similar_averaging_score",
    "most_similar_gap_score",
    "same_process_neighbours",
    "scaled_mutual_information",
]


#: What the similarities score dimensions against: the category of every cell, or a table of processes.
Labels = Sequence[object] | np.ndarray | pd.Series | pd.DataFrame


def _indicator_table(table: pd.DataFrame | np.ndarray) -> tuple[np.ndarray, list[str]]:
    """A cells x processes table of 0/1 indicators, checked, with the processes' names."""
    frame = table if isinstance(table, pd.DataFrame) else pd.DataFrame(table)
    values = frame.to_numpy()
    if values.dtype == bool:
        values = values.astype(np.float64)
    if not np.issubdtype(values.dtype, np.number) or not np.isin(values, (0, 1)).all():
        raise ValueError("a table of processes must hold 0/1 (or boolean) indicators, one column per process.")
    values = values.astype(np.float64)
    if len(values) == 0 or values.shape[1] == 0:
        raise ValueError("a table of processes needs at least one cell and one process.")
    constant = [str(c) for c, v in zip(frame.columns, values.T, strict=True) if v.min() == v.max()]
    if constant:
        raise ValueError(f"every process must hold some cells and leave out others; constant: {constant}.")
    return values, [str(c) for c in frame.columns]


def _processes(labels: Labels) -> tuple[np.ndarray, list[str]]:
    """The indicators (cells x processes) and names of the processes: the labels' categories one-hot (sorted), or
    the columns of a table of 0/1 indicators.
    """
    if isinstance(labels, pd.DataFrame) or np.ndim(labels) == 2:
        return _indicator_table(labels)
    values = pd.Series(np.asarray(labels)).astype(str)
    if values.isna().any() or len(values) == 0:
        raise ValueError("labels must name a category for every cell.")
    names = sorted(values.unique())
    if len(names) < 2:
        raise ValueError(f"labels must have at least two categories, got {names}.")
    onehot = (values.to_numpy()[:, None] == np.asarray(names)[None, :]).astype(np.float64)
    return onehot, names


def _codes(codes: np.ndarray, n_cells: int) -> np.ndarray:
    z = np.asarray(codes, dtype=np.float64)
    if z.ndim != 2 or z.shape[0] != n_cells:
        raise ValueError(f"codes must be cells x dimensions with {n_cells} rows (one per label), got {z.shape}.")
    if not np.isfinite(z).all():
        raise ValueError("codes must be finite.")
    return z


def _entropy(p: np.ndarray) -> np.ndarray:
    """Entropy (nats) of each column of a table of probabilities, ``0 log 0 = 0``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(p > 0, p * np.log(p), 0.0).sum(0)


def scaled_mutual_information(codes: np.ndarray, labels: Labels, n_bins: int = 10) -> pd.DataFrame:
    """``MI(binned dimension; process) / H(process)`` for every dimension and process (SMI).

    Parameters
    ----------
    codes
        Cells x dimensions representation.
    labels
        The category of every cell (at least two categories; each is a process), or a cells x processes table of
        0/1 indicators (a process per column, e.g. the cell types one-hot and one column for a condition).
    n_bins
        Bins of equal width over each dimension's range (a constant dimension falls in one bin: 0).

    Returns
    -------
    pandas.DataFrame
        Dimensions x processes, values in ``[0, 1]``.

    Examples
    --------
    >>> import numpy as np
    >>> labels = np.array(["a"] * 50 + ["b"] * 50)
    >>> z = np.column_stack([np.r_[np.zeros(50), np.ones(50)], np.tile([0.0, 1.0], 50)])
    >>> scaled_mutual_information(z, labels).round(3).to_numpy().tolist()
    [[1.0, 1.0], [0.0, 0.0]]
    """
    onehot, names = _processes(labels)
    z = _codes(codes, onehot.shape[0])
    if isinstance(n_bins, bool) or not isinstance(n_bins, int) or n_bins < 2:
        raise ValueError(f"n_bins must be an integer >= 2, got {n_bins!r}.")
    n = z.shape[0]
    p_process = onehot.mean(0)
    h_process = _entropy(np.vstack([p_process, 1.0 - p_process]))
    out = np.zeros((z.shape[1], len(names)))
    for d in range(z.shape[1]):
        lo, hi = z[:, d].min(), z[:, d].max()
        if hi <= lo:
            continue  # constant: no information
        bins = np.minimum(((z[:, d] - lo) / (hi - lo) * n_bins).astype(int), n_bins - 1)
        counts = np.zeros((n_bins, len(names)))
        np.add.at(counts, bins, onehot)
        p_bin = np.bincount(bins, minlength=n_bins) / n
        # MI = H(process) - H(process | bin), both per process (binary)
        joint_in = counts / n
        joint_out = p_bin[:, None] - joint_in
        with np.errstate(divide="ignore", invalid="ignore"):
            cond = -(
                np.where(joint_in > 0, joint_in * np.log(joint_in / p_bin[:, None]), 0.0)
                + np.where(joint_out > 0, joint_out * np.log(joint_out / p_bin[:, None]), 0.0)
            ).sum(0)
        out[d] = np.clip((h_process - cond) / h_process, 0.0, 1.0)
    return pd.DataFrame(out, columns=names)


def same_process_neighbours(codes: np.ndarray, labels: Labels, seed: int = 0) -> pd.DataFrame:
    """Same-process neighbours along every dimension (SPN).

    For a process with frequency ``f`` (``n_p`` cells): order the cells by the dimension, count the neighbouring
    pairs in which both cells belong to the process, divide by ``n_p - 1`` (the most such pairs there can be) and
    score ``max(share - f, 0) / (1 - f)``.

    Parameters
    ----------
    codes
        Cells x dimensions representation.
    labels
        The category of every cell (at least two categories; each is a process), or a cells x processes table of
        0/1 indicators (a process per column, e.g. the cell types one-hot and one column for a condition).
    seed
        Seed of the random order given to cells tied on a dimension.

    Returns
    -------
    pandas.DataFrame
        Dimensions x processes, values in ``[0, 1]``.

    Examples
    --------
    >>> import numpy as np
    >>> labels = np.array(["a"] * 50 + ["b"] * 50)
    >>> z = np.column_stack([np.arange(100.0), np.zeros(100)])  # sorted by process; constant
    >>> same_process_neighbours(z, labels).round(3).to_numpy().tolist()
    [[1.0, 1.0], [0.0, 0.0]]
    """
    onehot, names = _processes(labels)
    z = _codes(codes, onehot.shape[0])
    n_p = onehot.sum(0)
    f = n_p / onehot.shape[0]
    tie_break = np.random.default_rng(seed).permutation(z.shape[0])
    out = np.zeros((z.shape[1], len(names)))
    for d in range(z.shape[1]):
        if np.ptp(z[:, d]) == 0:
            continue  # constant: any order is a random one
        order = np.lexsort((tie_break, z[:, d]))
        ordered = onehot[order]
        pairs = (ordered[:-1] * ordered[1:]).sum(0)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(n_p > 1, pairs / (n_p - 1), 0.0)
        out[d] = np.clip(share - f, 0.0, None) / (1.0 - f)
    return pd.DataFrame(out, columns=names)


def absolute_spearman(codes: np.ndarray, labels: Labels) -> pd.DataFrame:
    """``|Spearman correlation|`` of every dimension with every process's indicator (ASC; 0 for a constant one).

    Examples
    --------
    >>> import numpy as np
    >>> labels = np.array(["a"] * 5 + ["b"] * 5)
    >>> absolute_spearman(np.arange(10.0)[:, None], labels).round(3).to_numpy().tolist()
    [[0.87, 0.87]]
    """
    from scipy.stats import rankdata

    onehot, names = _processes(labels)
    z = _codes(codes, onehot.shape[0])
    ranks = np.column_stack([rankdata(z[:, d]) for d in range(z.shape[1])]) if z.shape[1] else z
    target = np.column_stack([rankdata(onehot[:, j]) for j in range(onehot.shape[1])])

    def standardise(a: np.ndarray) -> np.ndarray:
        a = a - a.mean(0)
        norm = np.sqrt((a**2).sum(0))
        return a / np.where(norm > 0, norm, np.inf)

    return pd.DataFrame(np.abs(standardise(ranks).T @ standardise(target)), columns=names)


def _matrix(similarity: np.ndarray | pd.DataFrame) -> np.ndarray:
    m = np.asarray(similarity, dtype=np.float64)
    if m.ndim != 2 or m.shape[1] == 0:
        raise ValueError(f"similarity must be dimensions x processes with at least one process, got {m.shape}.")
    return m


def latent_matching_score(similarity: np.ndarray | pd.DataFrame) -> float:
    """LMS: one dimension per process (Hungarian), the matched similarities summed over the processes.

    Examples
    --------
    >>> round(latent_matching_score([[0.9, 0.8], [0.1, 0.2]]), 3)  # the second process gets the weak dimension
    0.55
    """
    m = _matrix(similarity)
    if m.shape[0] == 0:
        return 0.0
    rows, cols = match_pairs(m)
    return float(m[rows, cols].sum() / m.shape[1])


def most_similar_averaging_score(similarity: np.ndarray | pd.DataFrame) -> float:
    """MSAS: the mean over processes of the best dimension's similarity.

    Examples
    --------
    >>> round(most_similar_averaging_score([[0.9, 0.8], [0.1, 0.2]]), 3)
    0.85
    """
    m = _matrix(similarity)
    return float(m.max(0).mean()) if m.shape[0] else 0.0


def most_similar_gap_score(similarity: np.ndarray | pd.DataFrame) -> float:
    """MSGS: the mean over processes of the best dimension's similarity minus the second best's.

    Examples
    --------
    >>> round(most_similar_gap_score([[0.9, 0.8], [0.1, 0.2]]), 3)
    0.7
    """
    m = _matrix(similarity)
    if m.shape[0] < 2:
        return float(m.max(0).mean()) if m.shape[0] else 0.0
    top = np.sort(m, axis=0)[::-1]
    return float((top[0] - top[1]).mean())


#: The similarities of :func:`label_disentanglement`, by name.
DISENTANGLEMENT_SIMILARITIES = {
    "SMI": scaled_mutual_information,
    "SPN": same_process_neighbours,
    "ASC": absolute_spearman,
}
#: The aggregations of :func:`label_disentanglement`, by name.
DISENTANGLEMENT_AGGREGATIONS = {
    "LMS": latent_matching_score,
    "MSAS": most_similar_averaging_score,
    "MSGS": most_similar_gap_score,
}


def label_disentanglement(
    codes: np.ndarray,
    labels: Labels,
    similarities: Sequence[str] = ("SMI", "SPN"),
    aggregations: Sequence[str] = ("LMS", "MSAS", "MSGS"),
) -> dict[str, float]:
    """Every aggregation of every similarity of a representation against labels, as ``"<AGG>-<SIM>"``.

    Parameters
    ----------
    codes
        Cells x dimensions representation (e.g. posterior means of the factors).
    labels
        The category of every cell (cell type, condition); each category is one process. Or a cells x processes
        table of 0/1 indicators (a DataFrame names its processes by its columns), for processes that are not the
        categories of one label: a binary condition is one process (its treated cells), not two complementary
        ones that would each claim a dimension.
    similarities
        Names in :data:`DISENTANGLEMENT_SIMILARITIES` (default the authors': SMI and SPN).
    aggregations
        Names in :data:`DISENTANGLEMENT_AGGREGATIONS`.

    Returns
    -------
    dict
        ``{"LMS-SMI": ..., "MSAS-SMI": ..., ...}``, each in ``[0, 1]``; higher is more disentangled.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> labels = rng.choice(["B", "NK", "T"], size=300)
    >>> z = np.column_stack([(labels == t) + 0.1 * rng.normal(size=300) for t in ("B", "NK", "T")])
    >>> scores = label_disentanglement(z, labels)
    >>> round(scores["LMS-SPN"], 2) > 0.9, sorted(scores)[:2]
    (True, ['LMS-SMI', 'LMS-SPN'])
    """
    unknown = [s for s in similarities if s not in DISENTANGLEMENT_SIMILARITIES]
    unknown += [a for a in aggregations if a not in DISENTANGLEMENT_AGGREGATIONS]
    if unknown:
        raise ValueError(
            f"Unknown similarity or aggregation {unknown}; similarities: {list(DISENTANGLEMENT_SIMILARITIES)}, "
            f"aggregations: {list(DISENTANGLEMENT_AGGREGATIONS)}."
        )
    scores = {}
    for name in similarities:
        matrix = DISENTANGLEMENT_SIMILARITIES[name](codes, labels)
        for agg in aggregations:
            scores[f"{agg}-{name}"] = DISENTANGLEMENT_AGGREGATIONS[agg](matrix)
    return scores
