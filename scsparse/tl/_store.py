"""Where a tool's table goes: scanpy's convention, written once for every tool of :mod:`scsparse.tl` that keeps one."""

from __future__ import annotations

import logging

import pandas as pd
from anndata import AnnData

from scsparse._checks import InvalidInputError

__all__ = ["store_table"]

logger = logging.getLogger(__name__)


def store_table(adata: AnnData, name: str, table: pd.DataFrame, *, copy: bool) -> AnnData | None:
    """Put ``table`` in ``adata.uns[name]`` and return ``None``; with ``copy``, in a copy of ``adata``, returned.

    Examples
    --------
    >>> import anndata as ad, numpy as np, pandas as pd
    >>> adata = ad.AnnData(np.zeros((2, 2)))
    >>> store_table(adata, "result", pd.DataFrame({"a": [1]}), copy=False) is None
    True
    >>> out = store_table(adata, "other", pd.DataFrame({"a": [2]}), copy=True)
    >>> "other" in out.uns, "other" in adata.uns
    (True, False)
    """
    if not isinstance(name, str) or not name:
        raise InvalidInputError(f"key_added must be a non-empty string, got {name!r}.")
    target = adata.copy() if copy else adata
    target.uns[name] = table
    logger.info("added adata.uns[%r] (%d rows)", name, len(table))
    return target if copy else None
