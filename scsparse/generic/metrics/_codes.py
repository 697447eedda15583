"""Statistics of inferred codes: redundancy, support consistency, posterior and feature collapse.

Definitions follow Fallah & Rozell, "Variational Sparse Coding with Learned Thresholding" (ICML 2022):
multi-information (Sec. 4.1.1), pairwise Jaccard consistency of supports (Sec. 4.1.2, Eq. 13),
posterior collapse (App. C, Eq. 15, after Lucas et al. 2019) and feature collapse (App. C, Eq. 16).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = [
    "active_atoms",
    "dictionary_collapse_rate",
    "feature_collapse_rate",
    "gaussian_kl_per_dim",
    "jaccard_consistency",
    "multi_information",
    "pairwise_jaccard_consistency",
    "posterior_collapse_rate",
]

#: Bin edges of the histogram estimator: 20 edges on [-2, 2] plus two edges that isolate exact zeros.
HISTOGRAM_EDGES: np.ndarray = np.sort(np.append(np.linspace(-2.0, 2.0, 20), [-1e-50, 1e-50]))


def _codes_2d(codes: Any, name: str = "codes") -> np.ndarray:
    z = np.asarray(codes, dtype=np.float64)
    if z.ndim != 2:
        raise ValueError(f"{name} must be 2-d (rows x latent dimensions), got shape {z.shape}.")
    if not np.all(np.isfinite(z)):
        raise ValueError(f"{name} contain NaN or infinite values.")
    return z


def _plugin_entropy(labels: np.ndarray) -> float:
    """Maximum-likelihood (plug-in) entropy in nats of discrete symbols (rows of ``labels`` if 2-d)."""
    _, counts = np.unique(labels, axis=0, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


def multi_information(
    codes: Any,
    method: str = "gaussian",
    base: float = math.e,
    bins: np.ndarray | None = None,
) -> float:
    """Multi-information (total correlation) ``sum_i h(z_i) - h(z)`` of codes (Fallah & Rozell 2022, Sec. 4.1.1).

    Zero when the latent dimensions are independent; larger for more redundant codes. The paper defines
    the quantity but not its estimator; two are offered:

    - ``"gaussian"``: the codes are approximated by a Gaussian with their sample covariance ``S``
      (``ddof=1``); then ``h(z_i) = 0.5 log(2 pi e S_ii)``, ``h(z) = 0.5 log((2 pi e)^d det S)`` and
      ``MI = -0.5 log det R`` with ``R`` the correlation matrix. Dimensions with zero variance are
      dropped (a constant is independent of everything); linearly dependent dimensions give ``inf``.
      This measures linear (second-order) redundancy only.
    - ``"histogram"``: what the authors' evaluation code computes: each dimension is discretised with
      the edges ``bins`` (default :data:`HISTOGRAM_EDGES`: 20 equally spaced edges on ``[-2, 2]`` plus
      two edges at ``±1e-50`` so that exact zeros get a bin of their own), and the plug-in (maximum
      likelihood) entropies of the marginal and joint symbol frequencies are used:
      ``MI = sum_i H(b_i) - H(b_1, ..., b_d)``. The joint entropy is bounded by ``log n``, so compare
      values only at the same ``n`` and ``d``. Their code reports bits (``base=2``).

    Parameters
    ----------
    codes
        Codes, shape ``(n_rows, d)``.
    method
        ``"gaussian"`` or ``"histogram"``.
    base
        Logarithm base of the result (``e``: nats; 2: bits).
    bins
        Bin edges of the histogram estimator.

    Returns
    -------
    float
        The multi-information (``>= 0``; ``inf`` for degenerate Gaussian codes).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a = rng.normal(size=5000)
    >>> z = np.column_stack([a, 0.6 * a + 0.8 * rng.normal(size=5000)])
    >>> r = np.corrcoef(z.T)[0, 1]
    >>> bool(np.isclose(multi_information(z), -0.5 * np.log(1 - r**2)))
    True
    >>> copies = np.repeat(np.array([[0.0], [1.0]]), 50, axis=0) @ np.ones((1, 2))  # z_1 = z_2
    >>> round(multi_information(copies, method="histogram", base=2), 6)  # H(z_1) = 1 bit
    1.0
    """
    z = _codes_2d(codes)
    if z.shape[0] < 2:
        raise ValueError("Need at least two rows of codes.")
    if method == "gaussian":
        keep = z.std(axis=0) > 0
        if keep.sum() < 2:
            return 0.0
        corr = np.atleast_2d(np.corrcoef(z[:, keep], rowvar=False))
        sign, logdet = np.linalg.slogdet(corr)
        mi = math.inf if sign <= 0 else max(-0.5 * float(logdet), 0.0)
    elif method == "histogram":
        edges = HISTOGRAM_EDGES if bins is None else np.sort(np.asarray(bins, dtype=np.float64))
        symbols = np.digitize(z, edges)
        marginal = sum(_plugin_entropy(symbols[:, i]) for i in range(z.shape[1]))
        mi = max(marginal - _plugin_entropy(symbols), 0.0)
    else:
        raise ValueError(f"method must be 'gaussian' or 'histogram', got {method!r}.")
    return mi / math.log(base)


def _select_dims(z: np.ndarray, dims: Any) -> np.ndarray:
    if dims is None:
        return z
    d = np.asarray(dims)
    if d.dtype == bool:
        if d.shape != (z.shape[-1],):
            raise ValueError(f"A boolean dims mask must have length {z.shape[-1]}, got shape {d.shape}.")
        return z[..., d]
    return z[..., d.astype(int)]


def active_atoms(dictionary: Any, threshold: float = 0.1) -> np.ndarray:
    """Boolean mask of the dictionary atoms (columns) with squared L2 norm above ``threshold``.

    Fallah & Rozell (2022, Sec. 4.1.2) measure Jaccard consistency on the latent dimensions whose atom
    ``a_i`` has ``||a_i||_2^2 > 0.1``.

    Examples
    --------
    >>> import numpy as np
    >>> active_atoms(np.array([[1.0, 0.1], [0.0, 0.2]]))  # squared norms 1.0 and 0.05
    array([ True, False])
    """
    a = np.asarray(dictionary, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"dictionary must be 2-d (features x atoms), got shape {a.shape}.")
    return (a**2).sum(0) > threshold


def _jaccard_rows(sa: np.ndarray, sb: np.ndarray) -> np.ndarray:
    inter = (sa & sb).sum(-1)
    union = (sa | sb).sum(-1)
    return np.where(union > 0, inter / np.maximum(union, 1), 1.0)


def jaccard_consistency(codes_a: Any, codes_b: Any, tol: float = 0.0, dims: Any = None) -> np.ndarray:
    """Jaccard index of the supports of two codes of the same rows (Fallah & Rozell 2022, Eq. 13).

    With ``S(z) = {i : |z_i| > tol}``: ``C(a, b) = |S(a) ∩ S(b)| / |S(a) ∪ S(b)|`` per row, and 1 when
    both supports are empty (identical sets).

    Parameters
    ----------
    codes_a, codes_b
        Codes of the same rows, shape ``(n_rows, d)`` (two forward passes, two seeds ...).
    tol
        Entries with ``|z| <= tol`` are outside the support (0: exact zeros, the paper's definition).
    dims
        Latent dimensions to consider (indices or a boolean mask, e.g. :func:`active_atoms`); all if
        ``None``.

    Returns
    -------
    numpy.ndarray
        Per-row Jaccard index, shape ``(n_rows,)``; average it for one number.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0]])
    >>> b = np.array([[1.0, 3.0, 0.0], [0.0, 0.0, 0.0]])
    >>> jaccard_consistency(a, b)  # {0, 2} vs {0, 1}: 1 / 3; two empty supports: 1
    array([0.33333333, 1.        ])
    """
    za, zb = _codes_2d(codes_a, "codes_a"), _codes_2d(codes_b, "codes_b")
    if za.shape != zb.shape:
        raise ValueError(f"codes_a and codes_b must have the same shape, got {za.shape} and {zb.shape}.")
    sa, sb = np.abs(_select_dims(za, dims)) > tol, np.abs(_select_dims(zb, dims)) > tol
    return _jaccard_rows(sa, sb)


def pairwise_jaccard_consistency(samples: Any, tol: float = 0.0, dims: Any = None) -> np.ndarray:
    """Average pairwise Jaccard index of ``J`` codes of each row (Fallah & Rozell 2022, Sec. 4.1.2).

    ``(1 / (J (J - 1))) sum_m sum_{n != m} C(z^m, z^n)`` per row, with ``C`` of
    :func:`jaccard_consistency`: how consistently the same latent dimensions are used over ``J`` forward
    passes (the paper uses ``J = 20`` posterior samples and the dimensions with
    ``||a_i||^2 > 0.1``, see :func:`active_atoms`), or over models fitted with ``J`` seeds.

    Parameters
    ----------
    samples
        Codes, shape ``(J, n_rows, d)`` with ``J >= 2``.
    tol, dims
        See :func:`jaccard_consistency`.

    Returns
    -------
    numpy.ndarray
        Per-row average, shape ``(n_rows,)``.

    Examples
    --------
    >>> import numpy as np
    >>> s = np.array([[[1.0, 0.0]], [[1.0, 0.0]], [[1.0, 1.0]]])  # J = 3 passes of one row
    >>> pairwise_jaccard_consistency(s)  # pairs: 1, 1/2, 1/2
    array([0.66666667])
    """
    z = np.asarray(samples, dtype=np.float64)
    if z.ndim != 3 or z.shape[0] < 2:
        raise ValueError(f"samples must have shape (J >= 2, n_rows, d), got {z.shape}.")
    if not np.all(np.isfinite(z)):
        raise ValueError("samples contain NaN or infinite values.")
    support = np.abs(_select_dims(z, dims)) > tol
    n_pass = support.shape[0]
    total = np.zeros(support.shape[1])
    for m in range(n_pass):
        for n in range(m + 1, n_pass):
            total += _jaccard_rows(support[m], support[n])
    return total / (n_pass * (n_pass - 1) / 2)


def gaussian_kl_per_dim(qz_mean: Any, qz_var: Any) -> np.ndarray:
    """``KL(N(m, v) || N(0, 1)) = 0.5 (m^2 + v - 1 - log v)`` per row and latent dimension.

    Examples
    --------
    >>> import numpy as np
    >>> gaussian_kl_per_dim(np.array([[0.0, 1.0]]), np.array([[1.0, 1.0]]))
    array([[0. , 0.5]])
    """
    m, v = np.asarray(qz_mean, dtype=np.float64), np.asarray(qz_var, dtype=np.float64)
    if m.shape != v.shape:
        raise ValueError(f"qz_mean and qz_var must have the same shape, got {m.shape} and {v.shape}.")
    if np.any(v <= 0):
        raise ValueError("qz_var must be positive.")
    return 0.5 * (m**2 + v - 1.0 - np.log(v))


def _collapse_fraction(collapsed_rows: np.ndarray, delta: float) -> float:
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta}.")
    share = collapsed_rows.mean(axis=0)  # per latent dimension: fraction of rows that are collapsed
    return float(np.mean(share >= 1.0 - delta))


def posterior_collapse_rate(
    qz_mean: Any = None,
    qz_var: Any = None,
    *,
    kl: Any = None,
    eps: float = 1e-2,
    delta: float = 0.05,
) -> float:
    """Fraction of latent dimensions whose posterior has collapsed to the prior (Fallah & Rozell 2022, Eq. 15).

    Dimension ``i`` is collapsed when ``P_x[KL(q(z_i | x) || p(z_i)) <= eps] >= 1 - delta``, the
    probability estimated by the fraction of rows (Lucas et al. 2019). The paper uses ``eps = 1e-2`` and
    ``delta = 5e-2`` and reports the percentage of collapsed dimensions (100 times this value).

    Parameters
    ----------
    qz_mean, qz_var
        Means and variances of a diagonal Gaussian posterior, shape ``(n_rows, d)``; the KL to
        ``N(0, 1)`` is :func:`gaussian_kl_per_dim`.
    kl
        Per-row, per-dimension KL divergences to the prior ``(n_rows, d)``, instead of ``qz_mean`` and
        ``qz_var`` (for posteriors that are not Gaussian).
    eps, delta
        Thresholds of the definition.

    Returns
    -------
    float
        In ``[0, 1]``.

    Examples
    --------
    >>> import numpy as np
    >>> mean = np.column_stack([np.zeros(100), np.ones(100)])  # dimension 0 equals the prior
    >>> posterior_collapse_rate(mean, np.ones_like(mean))
    0.5
    """
    if kl is None:
        if qz_mean is None or qz_var is None:
            raise ValueError("Give either kl or both qz_mean and qz_var.")
        kl_arr = gaussian_kl_per_dim(qz_mean, qz_var)
    else:
        kl_arr = np.asarray(kl, dtype=np.float64)
    if kl_arr.ndim != 2:
        raise ValueError(f"The KL divergences must be 2-d (rows x dimensions), got shape {kl_arr.shape}.")
    return _collapse_fraction(kl_arr <= eps, delta)


def feature_collapse_rate(codes: Any, eps: float = 1e-2, delta: float = 0.05) -> float:
    """Fraction of latent dimensions that are (almost) always zero (Fallah & Rozell 2022, Eq. 16).

    Dimension ``i`` is collapsed when ``P_x[|z_i| <= eps] >= 1 - delta``, the probability estimated by
    the fraction of rows; the paper uses ``eps = 1e-2``, ``delta = 5e-2`` on the inferred codes
    ``z_hat`` and reports the percentage.

    Parameters
    ----------
    codes
        Inferred codes (samples or posterior means), shape ``(n_rows, d)``.
    eps, delta
        Thresholds of the definition.

    Returns
    -------
    float
        In ``[0, 1]``.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.zeros((100, 3)); z[:, 0] = 1.0; z[:3, 1] = 1.0  # dim 1 non-zero on 3% of rows only
    >>> round(feature_collapse_rate(z), 4)  # dims 1 and 2 collapsed
    0.6667
    """
    z = _codes_2d(codes)
    return _collapse_fraction(np.abs(z) <= eps, delta)


def dictionary_collapse_rate(dictionary: Any, tol: float = 1e-2) -> float:
    """Fraction of dictionary atoms (columns of a features x atoms matrix) with L2 norm below ``tol``.

    A property of the generator rather than of the codes (compare :func:`feature_collapse_rate`): an atom
    with (near) zero norm cannot express anything whatever its code. For the sparse VAE pass ``W``; for
    a linear generator its weight matrix.

    Examples
    --------
    >>> import numpy as np
    >>> dictionary_collapse_rate(np.array([[1.0, 0.0, 0.001], [0.0, 0.0, 0.0]]))
    0.6666666666666666
    """
    a = np.asarray(dictionary, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"dictionary must be 2-d (features x atoms), got shape {a.shape}.")
    return float(np.mean(np.linalg.norm(a, axis=0) < tol))
