"""Writing model results into AnnData (h5ad-safe) and recording provenance."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import scipy.sparse as sp
from anndata import AnnData

from scsparse._provenance import package_versions

from ._validation import InvalidInputError, get_matrix, iter_row_chunks

__all__ = [
    "check_keys_free",
    "data_hash",
    "h5ad_safe",
    "multistudy_result_keys",
    "package_versions",
    "sparse_vae_result_keys",
    "study_key_name",
]


def data_hash(adata: AnnData, layer: str | None) -> str:
    """SHA-256 of the data a model saw: shape, cell and gene names and the matrix values.

    Dense and sparse storage of the same values give the same hash (blocks are hashed as CSR float64
    with sorted indices), so the hash identifies the data, not its storage.
    """
    h = hashlib.sha256()
    h.update(np.asarray(adata.shape, dtype=np.int64).tobytes())
    h.update("\x1f".join(map(str, adata.obs_names)).encode())
    h.update("\x1e".join(map(str, adata.var_names)).encode())
    for block in iter_row_chunks(get_matrix(adata, layer)):
        csr = sp.csr_matrix(block, dtype=np.float64)
        csr.eliminate_zeros()
        csr.sort_indices()
        h.update(csr.indptr.astype(np.int64).tobytes())
        h.update(csr.indices.astype(np.int64).tobytes())
        h.update(csr.data.tobytes())
    return h.hexdigest()


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


def sparse_vae_result_keys(key: str) -> dict[str, list[str]]:
    """AnnData keys written by :meth:`SparseVAE.write_results <scsparse.model.SparseVAE.write_results>`."""
    return {"obsm": [f"X_{key}"], "varm": [f"{key}_W", f"{key}_pip"], "uns": [key]}


def study_key_name(study: str) -> str:
    """A study name usable inside an AnnData key (characters other than letters, digits, ``-_.`` become ``_``)."""
    return "".join(c if (c.isalnum() or c in "-_.") else "_" for c in str(study))


def multistudy_result_keys(key: str, studies: list[str]) -> dict[str, list[str]]:
    """AnnData keys written by :meth:`MultiStudySparseVAE.write_results
    <scsparse.model.MultiStudySparseVAE.write_results>` for these studies.
    """
    varm = [f"{key}_W_shared", f"{key}_pip_shared"]
    for study in studies:
        name = study_key_name(study)
        varm += [f"{key}_W_{name}", f"{key}_pip_{name}"]
    return {"obsm": [f"X_{key}_shared", f"X_{key}_specific"], "varm": varm, "uns": [key]}
