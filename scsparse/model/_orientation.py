"""The sign convention of the factors: each programme's top genes go up with its factor.

Flipping the sign of factor ``k`` (``z_k -> -z_k``) together with its column of ``W`` leaves the model unchanged:
the decoder sees ``w_j ⊙ z``, the Spike-and-Slab Lasso prior depends on ``|w_jk|`` and the prior on ``z`` is
symmetric (for a learned ``Sigma_z``, row and column ``k`` flip with it). Training therefore ends with an
arbitrary sign per factor, and a programme such as the interferon response can come out as "down with its
factor". The sign is fixed from the data: factor ``k`` is oriented so that

``s_k = sum_{j in T_k} |w_jk| r_jk >= 0``,

where ``T_k`` are the factor's top genes (the ``n_top`` genes of largest ``|w_jk|`` among those with
``p*_jk > t``, the genes a factor is reported by) and ``r_jk`` is the Pearson correlation across cells between
the factor's posterior mean and gene ``j``'s normalised expression
(:func:`scsparse.results.expression_factor_correlation`, the correlation behind
:func:`scsparse.tl.factor_gene_correlation`). A factor with no gene above ``t`` keeps its
sign. Like the convention of PCA implementations that make each component's largest loading positive, this
orients a factor by its strongest genes: a factor that contrasts two programmes (natural killer cell genes
against many weaker monocyte genes, say) is oriented so that its top genes go up, and the genes of the other
side go down with it.
"""

from __future__ import annotations

import numpy as np

from scsparse.results import rank_genes

__all__ = ["orientation_signs"]


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
