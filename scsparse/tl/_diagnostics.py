"""Plain per-factor diagnostics: programme size relative to the genes, anchors, best gene set, broad-factor flag."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from anndata import AnnData

from ._top_genes import _expression_source, _factor_names, _looks_like_counts, _read_results

__all__ = ["BROAD_FRACTION", "factor_diagnostics"]

#: A programme holding more than this fraction of the model's genes (``p* > 0.5``) is called *broad*. On the
#: embedded Kang data (demo settings, seeds 0-2) the sparse programmes held at most 11% of the genes and the
#: catch-all columns 22-56%.
BROAD_FRACTION = 0.2


def _library_corr(res: dict, factor: str, k: int, log_library: np.ndarray | None) -> float:
    """Spearman correlation of a factor's activity with the log library size (its own cells only)."""
    if log_library is None:
        return float("nan")
    from scipy.stats import spearmanr

    cells = res["cell_masks"].get(factor)
    z = np.asarray(res["Z"][:, k], dtype=np.float64)
    z, lib = (z, log_library) if cells is None else (z[cells], log_library[cells])
    if z.size < 3 or np.ptp(z) <= 1e-12 or np.ptp(lib) <= 1e-12:
        return float("nan")
    return float(spearmanr(z, lib)[0])


def factor_diagnostics(
    adata: AnnData,
    *,
    key: str = "sparsevae",
    factors: Sequence[str | int] | None = None,
    enrichment: pd.DataFrame | None = None,
    broad_fraction: float = BROAD_FRACTION,
    max_p_adj: float = 0.05,
    pip_threshold: float | None = None,
    layer: str | None = None,
) -> pd.DataFrame:
    """Flag factors that are hard to interpret: *broad* programmes without any enriched gene set.

    A sparse programme holds a small fraction of the genes. A factor whose programme includes a large part of
    the model's genes (``n_genes / G > broad_fraction``, genes with ``p* > pip_threshold``) and for which no
    gene set is enriched (no term with adjusted p at most ``max_p_adj`` in either direction) usually captures a
    global effect rather than a biological programme: library size or RNA content, ribosomal or mitochondrial
    load, ambient RNA, or a catch-all column the prior has not sparsified yet. Such a factor is flagged
    ``broad_unenriched``; read its top genes with care before calling it a programme. ``library_size_corr`` helps
    to check it against the library size (a strong correlation alone does not flag a factor: cell types differ in
    RNA content). Nothing about the model changes.

    Parameters
    ----------
    adata
        AnnData with results of :func:`scsparse.tl.sparse_vae` (or a multi-study fit) under ``key``.
    key
        The ``key_added`` of the fit.
    factors
        Factor names or indices (default: the active factors).
    enrichment
        A table of :func:`scsparse.tl.enrich` (default: ``adata.uns[f"{key}_enrichment"]`` when present). Without
        one, ``enriched`` is missing (``<NA>``) and no factor is flagged.
    broad_fraction
        Fraction of the model's genes above which a programme counts as broad.
    max_p_adj
        Adjusted p-value (the table's ``p_adj``: within factor and direction) at which a gene set counts.
    pip_threshold
        Inclusion threshold (default: the fit's, ``uns[key]["pip_threshold"]``).
    layer
        Counts for ``library_size_corr`` (default: the model's training layer, else ``X``).

    Returns
    -------
    pandas.DataFrame
        One row per factor: ``factor``, ``n_genes`` (``p* > pip_threshold``), ``gene_fraction`` (``n_genes / G``),
        ``n_anchor`` (genes whose only programme it is), ``broad``, ``best_term``, ``best_direction`` and
        ``best_p_adj`` (the most significant gene set, if any term was tested), ``library_size_corr`` (Spearman
        correlation of the factor's activity with the log library size, over the cells the factor is defined on;
        NaN when the data are not counts), ``enriched`` (a term at
        ``p_adj <= max_p_adj``), ``broad_unenriched`` (broad and not enriched) and ``diagnostic`` (a short text:
        ``"ok"``, ``"broad"``, ``"no gene set"`` or ``"broad, no gene set"``). ``table.attrs["broad_fraction"]``
        and ``table.attrs["max_p_adj"]`` record the rule.

    Raises
    ------
    KeyError
        No results under ``key``.
    ValueError
        ``broad_fraction`` outside ``(0, 1]``.

    Examples
    --------
    >>> scsparse.tl.enrich(adata, "hallmark_human")
    >>> diag = scsparse.tl.factor_diagnostics(adata)
    >>> diag[diag.broad_unenriched][["factor", "n_genes", "gene_fraction"]]
    """
    if not 0.0 < float(broad_fraction) <= 1.0:
        raise ValueError(f"broad_fraction must be in (0, 1], got {broad_fraction!r}.")
    res = _read_results(adata, key)
    names = _factor_names(res, factors, key)
    thr = res["pip_threshold"] if pip_threshold is None else float(pip_threshold)
    if enrichment is None and f"{key}_enrichment" in adata.uns:
        enrichment = adata.uns[f"{key}_enrichment"]
    if enrichment is not None and not isinstance(enrichment, pd.DataFrame):
        enrichment = pd.DataFrame(enrichment)
    mat, _ = _expression_source(adata, layer, res["setup_layer"])
    log_library = np.log1p(np.asarray(mat.sum(1), dtype=np.float64).ravel()) if _looks_like_counts(mat) else None
    included = res["pip"] > thr
    per_gene = included.sum(1)
    n_genes_total = included.shape[0]
    rows = []
    for f in names:
        k = res["factor_names"].index(f)
        n = int(included[:, k].sum())
        row = {
            "factor": f,
            "n_genes": n,
            "gene_fraction": n / max(n_genes_total, 1),
            "n_anchor": int((included[:, k] & (per_gene == 1)).sum()),
            "broad": n > broad_fraction * n_genes_total,
            "best_term": "",
            "best_direction": "",
            "best_p_adj": float("nan"),
            "library_size_corr": _library_corr(res, f, k, log_library),
            "enriched": pd.NA,
        }
        if enrichment is not None:
            tested = enrichment[enrichment["factor"].astype(str) == f]
            p = pd.to_numeric(tested["p_adj"], errors="coerce")
            if len(tested) and p.notna().any():
                best = tested.loc[p.idxmin()]
                row.update(
                    best_term=str(best["term"]), best_direction=str(best["direction"]), best_p_adj=float(p.min())
                )
            row["enriched"] = bool(len(tested) and (p <= max_p_adj).any())
        rows.append(row)
    table = pd.DataFrame(rows)
    enriched = table["enriched"].astype("boolean")
    table["broad_unenriched"] = (table["broad"] & (enriched == False)).fillna(False).astype(bool)  # noqa: E712
    text = np.where(table["broad"], "broad", "")
    no_set = (enriched == False).fillna(False).to_numpy(dtype=bool)  # noqa: E712
    table["diagnostic"] = [
        ", ".join(t for t in (b, "no gene set" if ns else "") if t) or "ok" for b, ns in zip(text, no_set, strict=True)
    ]
    table["enriched"] = enriched
    table.attrs.update(broad_fraction=float(broad_fraction), max_p_adj=float(max_p_adj))
    return table
