"""Association of factor activity with cell groups (condition, cell type, cluster, ...)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from anndata import AnnData

from scsparse._checks import did_you_mean
from scsparse.results import read_results

from ._enrich import bh_adjust
from ._store import check_table_key, store_table

__all__ = ["association_table", "factor_association"]


def _cohens_d(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's d of ``a`` vs ``b`` with the pooled standard deviation (0 when both are constant)."""
    na, nb = a.size, b.size
    if na < 1 or nb < 1:
        return float("nan")
    va = a.var(ddof=1) if na > 1 else 0.0
    vb = b.var(ddof=1) if nb > 1 else 0.0
    dof = na + nb - 2
    pooled = np.sqrt(((na - 1) * va + (nb - 1) * vb) / dof) if dof > 0 else 0.0
    diff = float(a.mean() - b.mean())
    if pooled <= 1e-12:
        return 0.0 if abs(diff) <= 1e-12 else float(np.sign(diff) * np.inf)
    return diff / float(pooled)


def factor_association(
    adata: AnnData,
    groupby: str,
    *,
    key: str = "sparsevae",
    factors: Sequence[str | int] | None = None,
    key_added: str | None = None,
    overwrite: bool = False,
    copy: bool = False,
) -> AnnData | None:
    """How strongly each factor's activity differs between the groups of an ``obs`` column.

    The table goes to ``adata.uns[f"{key}_association_{groupby}"]`` (or ``key_added``).

    For every factor and group: the mean activity (posterior mean ``z``, ``obsm[f"X_{key}"]``) in the group and in
    the other cells, Cohen's d of the group against the rest (pooled standard deviation; positive: higher in the
    group), and a two-sided Mann-Whitney U test of the group against the rest. Per factor, a Kruskal-Wallis test
    across all groups. P-values are Benjamini-Hochberg adjusted over all (factor, group) tests (``p_adj``) and over
    the factors (``kruskal_p_adj``).

    For a multi-study fit (:class:`~scsparse.model.MultiStudySparseVAE`), shared factors are compared over all
    cells; a study's specific factors only within that study's cells (they are zero in the other studies, so a
    comparison across studies would only find the study). A specific factor whose study holds a single group of
    ``groupby`` (e.g. ``groupby`` is the study column itself) is left out, with a warning.

    Parameters
    ----------
    adata
        AnnData with results of :func:`scsparse.tl.sparse_vae` under ``key``.
    groupby
        Categorical (or string) column of ``adata.obs``, e.g. ``"condition"`` or ``"cell_type"``.
    key
        The ``key_added`` of the fit.
    factors
        Factor names or indices (default: the active factors).
    key_added
        Where the table is stored in ``adata.uns`` (default ``f"{key}_association_{groupby}"``). An earlier
        association table there is replaced; anything else (e.g. a fit's record) only with ``overwrite=True``.
    overwrite
        Replace whatever ``adata.uns[key_added]`` holds.
    copy
        Store the table in a copy of ``adata`` and return the copy.

    Returns
    -------
    None or AnnData
        ``None`` (the table is in ``adata.uns[key_added]``), or the copy with it when ``copy=True``. The table has
        one row per factor and group: ``factor``, ``cells`` (``"all"``, or ``"study <name>"`` for a study-specific
        factor), ``group``, ``n_cells``, ``mean``, ``mean_rest``, ``cohens_d``,
        ``u_stat``, ``p``, ``p_adj``, ``kruskal_h``, ``kruskal_p``, ``kruskal_p_adj``; sorted by factor, then by
        decreasing ``cohens_d``.

    Raises
    ------
    KeyError
        No results under ``key`` or no column ``groupby``.
    ValueError
        Fewer than two groups (in the cells of every requested factor).

    Examples
    --------
    >>> scsparse.tl.factor_association(adata, "condition")
    >>> assoc = adata.uns["sparsevae_association_condition"]
    >>> assoc[assoc.group == "stimulated"].sort_values("cohens_d").tail(3)
    """
    default = f"{key}_association_{groupby}"
    name = default if key_added is None else key_added
    check_table_key(adata, name, overwrite=overwrite, default_name=default)  # before the work
    table = association_table(adata, groupby, key=key, factors=factors)
    return store_table(adata, name, table, copy=copy, overwrite=overwrite, default_name=default)


def association_table(
    adata: AnnData, groupby: str, *, key: str = "sparsevae", factors: Sequence[str | int] | None = None
) -> pd.DataFrame:
    """The table of :func:`factor_association`, computed without storing it (see there)."""
    from scipy.stats import kruskal, mannwhitneyu

    res = read_results(adata, key)
    names = res.resolve(factors)
    if groupby not in adata.obs.columns:
        raise KeyError(
            f"groupby={groupby!r} is not a column of adata.obs{did_you_mean(groupby, adata.obs.columns)} "
            f"(columns: {list(adata.obs.columns)})."
        )
    labels = adata.obs[groupby]
    groups = (
        [str(g) for g in labels.cat.categories if (labels == g).any()]
        if isinstance(labels.dtype, pd.CategoricalDtype)
        else sorted(labels.dropna().astype(str).unique())
    )
    lab = labels.astype(str).to_numpy()
    valid = labels.notna().to_numpy()
    if len(groups) < 2:
        raise ValueError(f"adata.obs[{groupby!r}] has {len(groups)} group(s); need at least two.")
    rows = []
    skipped = []
    for f in names:
        z = np.asarray(res.Z[:, res.factor_names.index(f)], dtype=np.float64)
        mask = res.cell_masks.get(f)
        cells = valid if mask is None else valid & np.asarray(mask, dtype=bool)
        present = [g for g in groups if (cells & (lab == g)).any()]
        if len(present) < 2:  # a study-specific factor whose study holds one group only: nothing to compare
            skipped.append(f)
            continue
        samples = [z[cells & (lab == g)] for g in present]
        constant = np.ptp(z[cells]) <= 1e-12
        h, pk = (0.0, 1.0) if constant else kruskal(*samples)
        scope = "all" if mask is None else f"study {f.rsplit('_', 1)[0]}"
        for g, zin in zip(present, samples, strict=True):
            zout = z[cells & (lab != g)]
            if constant or zin.size == 0 or zout.size == 0:
                u, p = float("nan"), 1.0
            else:
                u, p = mannwhitneyu(zin, zout, alternative="two-sided")
            rows.append(
                {
                    "factor": f,
                    "cells": scope,
                    "group": g,
                    "n_cells": int(zin.size),
                    "mean": float(zin.mean()) if zin.size else float("nan"),
                    "mean_rest": float(zout.mean()) if zout.size else float("nan"),
                    "cohens_d": _cohens_d(zin, zout),
                    "u_stat": float(u),
                    "p": float(p),
                    "kruskal_h": float(h),
                    "kruskal_p": float(pk),
                }
            )
    if not rows:
        raise ValueError(
            f"No factor can be tested against {groupby!r}: the cells of each requested factor ({', '.join(skipped)}) "
            "hold a single group (study-specific factors are tested within their own study's cells)."
        )
    if skipped:
        warnings.warn(
            f"factor_association: {', '.join(skipped)} not tested against {groupby!r}: their cells (their study's) "
            "hold a single group.",
            UserWarning,
            stacklevel=2,
        )
    table = pd.DataFrame(rows)
    table["p_adj"] = bh_adjust(table["p"].to_numpy())
    per_factor = table.drop_duplicates("factor")[["factor", "kruskal_p"]]
    table["kruskal_p_adj"] = table["factor"].map(
        dict(zip(per_factor["factor"], bh_adjust(per_factor["kruskal_p"].to_numpy()), strict=True))
    )
    order = {f: i for i, f in enumerate(names)}
    table = (
        table.assign(_f=table["factor"].map(order))
        .sort_values(["_f", "cohens_d"], ascending=[True, False], kind="stable")
        .drop(columns="_f")
        .reset_index(drop=True)
    )
    table = table[
        ["factor", "cells", "group", "n_cells", "mean", "mean_rest", "cohens_d", "u_stat", "p", "p_adj", "kruskal_h",
         "kruskal_p", "kruskal_p_adj"]
    ]  # fmt: skip
    return table
