"""Scores of a fit on real cells that several benchmarks share: label transfer and the interferon programme."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from scsparse.tl import predict_labels

if TYPE_CHECKING:  # pragma: no cover
    from anndata import AnnData

__all__ = ["interferon_enrichment", "transfer_accuracy", "transfer_predictions"]


def transfer_predictions(z: np.ndarray, labels: np.ndarray, train: np.ndarray, test: np.ndarray) -> np.ndarray:
    """Labels of the test cells predicted by a multinomial logistic regression on standardised factors.

    The classifier of :func:`transfer_accuracy`: :func:`scsparse.tl.predict_labels` (at most 2,000
    solver iterations) fitted on the training cells.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.array([[0.0], [0.1], [1.0], [1.1], [0.05], [1.05]])
    >>> labels = np.array(["a", "a", "b", "b", "a", "b"])
    >>> transfer_predictions(z, labels, np.arange(4), np.arange(4, 6)).tolist()
    ['a', 'b']
    """
    return predict_labels(z[train], labels[train], z[test], max_iter=2000)


def transfer_accuracy(z: np.ndarray, labels: np.ndarray, train: np.ndarray, test: np.ndarray) -> float:
    """Held-out accuracy of a multinomial logistic regression on standardised factors.

    Parameters
    ----------
    z
        Factors, ``(n_cells, K)``.
    labels
        Cell labels, ``(n_cells,)``.
    train, test
        Boolean masks (or indices) of the training and test cells.

    Returns
    -------
    float
        Fraction of the test cells whose label is predicted correctly (:func:`transfer_predictions`).
    """
    return float(np.mean(transfer_predictions(z, labels, train, test) == labels[test]))


def interferon_enrichment(adata: AnnData, model: Any, n_top: int, key: str = "ms") -> pd.DataFrame:
    """MSigDB Hallmark over-representation of every active factor of a fitted multi-study model.

    Writes the model's results into ``adata`` under ``key`` and runs :func:`scsparse.tl.enrich` (ORA,
    ``n_top`` genes by ``|w|`` among ``p* > 0.5`` per direction, background the model's genes).

    Parameters
    ----------
    adata
        The AnnData the model was trained on.
    model
        A fitted :class:`~scsparse.model.MultiStudySparseVAE`.
    n_top
        Genes per factor and direction.
    key
        Key the results are written under (replaced if present).

    Returns
    -------
    pandas.DataFrame
        The table of :func:`scsparse.tl.enrich`, sorted by ``p_adj``.
    """
    from scsparse import tl

    model.write_results(adata, key_added=key, overwrite=True)
    tl.enrich(adata, "hallmark_human", key=key, n_top=n_top, factors=model.active_factors())
    table = adata.uns[f"{key}_enrichment"]
    return table.sort_values("p_adj", kind="stable").reset_index(drop=True) if len(table) else table
