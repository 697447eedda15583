"""Differential expression as scvi-tools does it, with the groups checked first and a default for minified data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from anndata import AnnData

from scsparse._checks import InvalidInputError, did_you_mean

from ._validation import obs_column

__all__ = ["CheckedDEMixin", "check_de_groups"]


def check_de_groups(
    adata: AnnData, groupby: str | None, group1: str | Sequence[str] | None, group2: str | None
) -> None:
    """``groupby`` is a column of ``adata.obs`` and ``group1`` / ``group2`` are values it takes.

    Raises
    ------
    InvalidInputError
        Naming the column or the group that is not there, and the closest name.
    """
    if groupby is None:
        if group1 is not None or group2 is not None:
            raise InvalidInputError(
                "group1/group2 name groups of a column: pass groupby='<obs column>' too (or idx1/idx2 for cells)."
            )
        return
    values = pd.Index(obs_column(adata, groupby, "groupby").astype(str).unique())
    wanted = [] if group1 is None else [group1] if isinstance(group1, str) else list(group1)
    wanted += [] if group2 is None else [group2]
    for group in wanted:
        if str(group) not in values:
            raise InvalidInputError(
                f"{group!r} is not a value of adata.obs[{groupby!r}]{did_you_mean(str(group), values)}. "
                f"Values: {', '.join(map(str, values[:20]))}."
            )


class CheckedDEMixin:
    """:meth:`differential_expression` of :class:`scvi.model.base.RNASeqMixin` with its groups checked first."""

    def differential_expression(
        self,
        adata: AnnData | None = None,
        groupby: str | None = None,
        group1: str | Sequence[str] | None = None,
        group2: str | None = None,
        **kwargs: Any,
    ) -> pd.DataFrame:
        """Differential expression between groups of cells, as :meth:`scvi.model.SCVI.differential_expression`.

        The arguments and the result are scvi-tools' (``idx1``/``idx2``, ``mode``, ``delta``, ``batch_correction``
        ...), with two differences: a ``groupby`` that is not a column of ``adata.obs``, or a ``group1`` /
        ``group2`` it does not take, raises :class:`~scsparse.model.InvalidInputError` naming the closest one; and
        on a minified model ``all_stats`` defaults to ``False``, since the count statistics need the counts the
        minified AnnData no longer holds (pass ``all_stats=True`` to compute them anyway).

        Parameters
        ----------
        adata
            Cells (default: the model's AnnData).
        groupby
            Column of ``adata.obs`` whose values define the groups.
        group1
            Value(s) of ``groupby`` tested (``None``: each value against the rest).
        group2
            Value of ``groupby`` compared with (``None``: all other cells).
        **kwargs
            scvi-tools' further arguments.

        Returns
        -------
        One row per gene (and per group with ``group1=None``): Bayes factors, probabilities, LFC and, with
        ``all_stats``, count statistics.

        Examples
        --------
        >>> de = model.differential_expression(groupby="cell_type", group1="B cells")
        """
        check_de_groups(adata if adata is not None else self.adata, groupby, group1, group2)
        if getattr(self, "minified_data_type", None) is not None:
            kwargs.setdefault("all_stats", False)
        return super().differential_expression(adata=adata, groupby=groupby, group1=group1, group2=group2, **kwargs)
