"""Agreement of a representation's nearest neighbours with a cell label (batch mixing, label conservation)."""

from __future__ import annotations

import numpy as np

__all__ = ["neighbour_agreement", "random_agreement"]


def neighbour_agreement(representation: np.ndarray, labels: np.ndarray, n_neighbors: int = 30) -> float:
    """Mean fraction of each point's nearest neighbours that carry its own label.

    With a batch label this measures mixing (lower is better mixed; :func:`random_agreement` is the value of
    perfectly mixed batches); with a cell-type label, how well the representation keeps the types apart (higher is
    better).

    Parameters
    ----------
    representation
        Points x dimensions (e.g. cells x factors); Euclidean distances.
    labels
        One label per point.
    n_neighbors
        Neighbours per point, the point itself not counted.

    Returns
    -------
    float
        In ``[0, 1]``.

    Raises
    ------
    ValueError
        Shapes that do not match, or ``n_neighbors`` not in ``[1, n_points - 1]``.

    Examples
    --------
    >>> x = np.array([[0.0], [0.1], [0.2], [5.0], [5.1], [5.2]])
    >>> neighbour_agreement(x, np.array(["a", "a", "a", "b", "b", "b"]), n_neighbors=2)
    1.0
    >>> neighbour_agreement(x, np.array(["a", "b", "a", "b", "a", "b"]), n_neighbors=2)
    0.3333333333333333
    """
    from sklearn.neighbors import NearestNeighbors

    x = np.asarray(representation, dtype=np.float64)
    labels = np.asarray(labels)
    if x.ndim != 2 or labels.shape != (x.shape[0],):
        raise ValueError(
            f"representation must be points x dimensions and labels one per point; got {x.shape} and {labels.shape}."
        )
    if not 1 <= int(n_neighbors) < x.shape[0]:
        raise ValueError(f"n_neighbors must be in [1, {x.shape[0] - 1}], got {n_neighbors}.")
    index = NearestNeighbors(n_neighbors=int(n_neighbors) + 1).fit(x).kneighbors(x, return_distance=False)
    # drop each point itself (the first neighbour, unless duplicates tie with it)
    rows = np.arange(x.shape[0])[:, None]
    own = index == rows
    keep = np.where(own.any(1)[:, None], ~own, np.arange(index.shape[1])[None, :] < n_neighbors)
    neighbours = index[keep].reshape(x.shape[0], int(n_neighbors))
    return float(np.mean(labels[neighbours] == labels[:, None]))


def random_agreement(labels: np.ndarray) -> float:
    """The :func:`neighbour_agreement` expected of neighbours drawn at random: the sum of squared label shares.

    Examples
    --------
    >>> random_agreement(np.array(["a", "a", "b", "b"]))
    0.5
    """
    _, counts = np.unique(np.asarray(labels), return_counts=True)
    share = counts / counts.sum()
    return float(np.sum(share**2))
