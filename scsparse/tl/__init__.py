"""Tools on AnnData (scanpy style).

- :func:`sparse_vae` — fit a :class:`~scsparse.model.SparseVAE` and write factors, loadings and inclusion
  probabilities into the AnnData.
- :func:`result_keys` — the keys a fit writes for a given ``key_added``.
"""

from ._sparse_vae import result_keys, sparse_vae

__all__ = ["result_keys", "sparse_vae"]
