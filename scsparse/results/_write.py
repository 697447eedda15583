"""Writing a fit into AnnData: h5ad-safe values, no silent overwrite, the hash of the data the model saw."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import scipy.sparse as sp
from anndata import AnnData

from scsparse._checks import InvalidInputError
from scsparse._matrix import get_matrix, iter_row_chunks

from ._keys import factors_key, loadings_key, pip_key, result_keys, study_key_name

__all__ = [
    "DataHasher",
    "check_keys_free",
    "data_hash",
    "fit_keys",
    "h5ad_safe",
    "remove_fit",
    "write_multistudy_results",
    "write_sparse_vae_results",
]


#: Values per piece when a block's indices and values are converted for the hash (bounded temporaries).
_HASH_PIECE = 2**20


def _feed(h: Any, values: np.ndarray, dtype: type) -> None:
    """Add ``values`` to ``h`` as contiguous ``dtype`` bytes, converting at most :data:`_HASH_PIECE` at a time."""
    if values.dtype == dtype and values.flags.c_contiguous:
        h.update(memoryview(values).cast("B"))
        return
    for start in range(0, values.size, _HASH_PIECE):
        h.update(np.ascontiguousarray(values[start : start + _HASH_PIECE], dtype=dtype))


class DataHasher:
    """SHA-256 of the data a model saw, fed one row block at a time (see :func:`data_hash`).

    The hash covers the shape, the cell and gene names and the matrix as CSR with sorted indices and no stored
    zeros: its row lengths, column indices (int64) and values (float64), each a stream of its own, so dense and
    sparse storage of the same values, float32 and float64, and any division into row blocks give the same hash.

    Examples
    --------
    >>> import anndata, numpy as np
    >>> from scsparse._matrix import iter_row_chunks
    >>> adata = anndata.AnnData(np.eye(3, dtype=np.float32))
    >>> hasher = DataHasher(adata)
    >>> for block in iter_row_chunks(adata.X, chunk_rows=2):
    ...     hasher.update(block)
    >>> hasher.hexdigest() == data_hash(adata, None)
    True
    """

    def __init__(self, adata: AnnData) -> None:
        self._head = hashlib.sha256()
        self._head.update(np.asarray(adata.shape, dtype=np.int64).tobytes())
        self._head.update("\x1f".join(map(str, adata.obs_names)).encode())
        self._head.update("\x1e".join(map(str, adata.var_names)).encode())
        self._row_lengths, self._indices, self._values = hashlib.sha256(), hashlib.sha256(), hashlib.sha256()

    def update(self, block: np.ndarray | sp.spmatrix) -> None:
        """Add the next block of rows (blocks as :func:`~scsparse._matrix.iter_row_chunks` yields them)."""
        csr = sp.csr_matrix(block)
        if not csr.has_sorted_indices or not csr.data.all():  # a copy only where the block needs one
            csr = csr.copy()
            csr.eliminate_zeros()
            csr.sort_indices()
        _feed(self._row_lengths, np.diff(csr.indptr), np.int64)
        _feed(self._indices, csr.indices, np.int64)
        _feed(self._values, csr.data, np.float64)

    def hexdigest(self) -> str:
        """The hash of the blocks added so far."""
        h = self._head.copy()
        for part in (self._row_lengths, self._indices, self._values):
            h.update(part.digest())
        return h.hexdigest()


def data_hash(adata: AnnData, layer: str | None) -> str:
    """SHA-256 of the data a model saw: shape, cell and gene names and the matrix values.

    Dense and sparse storage of the same values give the same hash, and so do float32 and float64 values and any
    division into row blocks (see :class:`DataHasher`): the hash identifies the data, not its storage.
    """
    hasher = DataHasher(adata)
    for block in iter_row_chunks(get_matrix(adata, layer)):
        hasher.update(block)
    return hasher.hexdigest()


def h5ad_safe(value: Any) -> Any:
    """Convert a parameter value into something ``AnnData.write_h5ad`` stores (``None`` becomes ``"None"``)."""
    if value is None:
        return "None"
    if isinstance(value, dict):
        return {str(k): h5ad_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if all(isinstance(v, int | float | bool | np.number) for v in value) and value:
            return np.asarray(value)
        return np.asarray([str(v) for v in value], dtype=object) if value else np.asarray([], dtype=float)
    if isinstance(value, bool | int | float | str | np.number | np.ndarray):
        return value
    return str(value)


def check_keys_free(adata: AnnData, keys: dict[str, list[str]], overwrite: bool) -> None:
    """Refuse to overwrite existing AnnData keys unless asked to.

    Parameters
    ----------
    adata
        Target AnnData.
    keys
        Mapping of attribute (``"obsm"``, ``"varm"``, ``"uns"``) to the keys about to be written.
    overwrite
        Whether existing keys may be replaced.
    """
    if overwrite:
        return
    taken = [f"adata.{attr}[{k!r}]" for attr, names in keys.items() for k in names if k in getattr(adata, attr)]
    if taken:
        raise InvalidInputError(
            f"{', '.join(taken)} already exist(s). Pass overwrite=True to replace them, or choose another key_added."
        )


def fit_keys(adata: AnnData, key: str) -> dict[str, list[str]]:
    """The keys of the fit stored under ``key`` (a single-study or multi-study fit, read from ``uns[key]``), or
    ``{}`` when ``uns[key]`` holds no fit.
    """
    record = adata.uns.get(key)
    if not isinstance(record, dict) or "factor_names" not in record:
        return {}
    study_keys = record.get("study_keys")
    if isinstance(study_keys, dict):
        return result_keys(key, [str(s) for s in study_keys])
    return result_keys(key)


def remove_fit(adata: AnnData, key: str) -> None:
    """Delete every key of the fit stored under ``key`` (``obsm``, ``varm`` and ``uns``: the whole set, a
    multi-study fit's per-study keys too), so that a fit written over it leaves none of the old one behind. Nothing
    is deleted when ``uns[key]`` holds no fit.
    """
    for attr, names in fit_keys(adata, key).items():
        mapping = getattr(adata, attr)
        for name in dict.fromkeys(names):
            if name in mapping:
                del mapping[name]


def write_sparse_vae_results(
    adata: AnnData, key: str, *, Z: np.ndarray, W: np.ndarray, pip: np.ndarray, uns: dict[str, Any], overwrite: bool
) -> None:
    """Store a :class:`~scsparse.model.SparseVAE` fit under ``key`` (nothing is written if a key is taken).

    Parameters
    ----------
    adata
        Target AnnData (cells and genes aligned with the arrays).
    key
        The ``key_added`` prefix.
    Z
        Cells x factors activities, to ``obsm[f"X_{key}"]``.
    W, pip
        Genes x factors mask and inclusion probabilities, to ``varm[f"{key}_W"]`` and ``varm[f"{key}_pip"]``.
    uns
        Factor names, active factors, top and anchor genes, provenance: to ``uns[key]``.
    overwrite
        Replace existing keys; the whole earlier fit under ``key`` is removed first (:func:`remove_fit`).
    """
    check_keys_free(adata, result_keys(key), overwrite)
    if overwrite:
        remove_fit(adata, key)
    adata.obsm[factors_key(key)] = Z
    adata.varm[loadings_key(key)] = W
    adata.varm[pip_key(key)] = pip
    adata.uns[key] = uns


def write_multistudy_results(
    adata: AnnData,
    key: str,
    *,
    Z_shared: np.ndarray,
    Z_specific: np.ndarray,
    W_shared: np.ndarray,
    pip_shared: np.ndarray,
    W_studies: dict[str, np.ndarray],
    pip_studies: dict[str, np.ndarray],
    uns: dict[str, Any],
    overwrite: bool,
) -> None:
    """Store a :class:`~scsparse.model.MultiStudySparseVAE` fit under ``key`` (nothing is written if a key is taken).

    Parameters
    ----------
    adata
        Target AnnData.
    key
        The ``key_added`` prefix.
    Z_shared, Z_specific
        Cells x factors activities of the shared factors and of all studies' specific factors (zero outside a
        factor's study), to ``obsm[f"X_{key}_shared"]`` and ``obsm[f"X_{key}_specific"]``.
    W_shared, pip_shared
        Genes x factors shared mask and inclusion probabilities, to ``varm[f"{key}_W_shared"]`` and
        ``varm[f"{key}_pip_shared"]``.
    W_studies, pip_studies
        Study name -> that study's specific mask and inclusion probabilities, to ``varm[f"{key}_W_{name}"]`` and
        ``varm[f"{key}_pip_{name}"]`` with ``name = study_key_name(study)``, recorded in
        ``uns[key]["study_keys"]``.
    uns
        Studies, factor names and table, top and anchor genes, provenance: to ``uns[key]``.
    overwrite
        Replace existing keys; the whole earlier fit under ``key`` is removed first (:func:`remove_fit`).
    """
    study_keys = {str(s): study_key_name(s) for s in W_studies}
    check_keys_free(adata, result_keys(key, list(study_keys)), overwrite)
    if overwrite:
        remove_fit(adata, key)
    adata.obsm[factors_key(key, "shared")] = Z_shared
    adata.obsm[factors_key(key, "specific")] = Z_specific
    adata.varm[loadings_key(key, "shared")] = W_shared
    adata.varm[pip_key(key, "shared")] = pip_shared
    for study, name in study_keys.items():
        adata.varm[loadings_key(key, name)] = W_studies[study]
        adata.varm[pip_key(key, name)] = pip_studies[study]
    adata.uns[key] = {**uns, "study_keys": study_keys}
