"""Where a tool's table goes: scanpy's convention, written once for every tool of :mod:`scsparse.tl` that keeps one."""

from __future__ import annotations

import logging

import pandas as pd
from anndata import AnnData

from scsparse._checks import InvalidInputError, check_key_added

__all__ = ["check_table_key", "store_table"]

logger = logging.getLogger(__name__)


def check_table_key(
    adata: AnnData, name: str, *, overwrite: bool, default_name: str, columns: list[str] | None = None
) -> None:
    """Refuse a ``key_added`` a file cannot hold, or one whose ``uns`` entry this tool did not write.

    A tool's earlier table may be replaced: a DataFrame under the tool's own key ``default_name``, or one with the
    new table's ``columns`` (``None``, before the table is computed: any DataFrame). Anything else, such as a fit's
    record, only with ``overwrite=True``.

    Raises
    ------
    InvalidInputError
        Naming what the key holds and the two ways out.
    """
    check_key_added(name)
    if overwrite or name not in adata.uns:
        return
    previous = adata.uns[name]
    if isinstance(previous, pd.DataFrame) and (
        columns is None or name == default_name or list(previous.columns) == list(columns)
    ):
        return
    what = (
        "a fit's record (its factors, top genes and provenance)"
        if isinstance(previous, dict) and "factor_names" in previous
        else f"a {type(previous).__name__} this tool did not write"
    )
    raise InvalidInputError(
        f"adata.uns[{name!r}] already holds {what}. Choose another key_added"
        + (f" (the default is {default_name!r})" if default_name else "")
        + ", or pass overwrite=True to replace it."
    )


def store_table(
    adata: AnnData, name: str, table: pd.DataFrame, *, copy: bool, overwrite: bool = False, default_name: str = ""
) -> AnnData | None:
    """Put ``table`` in ``adata.uns[name]`` and return ``None``; with ``copy``, in a copy of ``adata``, returned.

    A table the same tool wrote before is replaced; any other value under ``name``, such as a fit's record, only
    with ``overwrite=True`` (:func:`check_table_key`).

    Raises
    ------
    InvalidInputError
        If ``name`` cannot be a key of a written file, or holds something else than this tool's table and
        ``overwrite`` is false.

    Examples
    --------
    >>> import anndata as ad, numpy as np, pandas as pd
    >>> adata = ad.AnnData(np.zeros((2, 2)))
    >>> store_table(adata, "result", pd.DataFrame({"a": [1]}), copy=False) is None
    True
    >>> out = store_table(adata, "other", pd.DataFrame({"a": [2]}), copy=True)
    >>> "other" in out.uns, "other" in adata.uns
    (True, False)
    >>> adata.uns["fit"] = {"factor_names": ["factor_0"]}
    >>> store_table(adata, "fit", pd.DataFrame({"a": [1]}), copy=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    scsparse._checks.InvalidInputError: adata.uns['fit'] already holds a fit's record ...
    """
    check_table_key(adata, name, overwrite=overwrite, default_name=default_name, columns=list(table.columns))
    target = adata.copy() if copy else adata
    target.uns[name] = table
    logger.info("added adata.uns[%r] (%d rows)", name, len(table))
    return target if copy else None
