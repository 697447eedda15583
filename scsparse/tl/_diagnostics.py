"""Plain per-factor diagnostics: programme size, anchors, best gene set, broad and overlapping factors."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from anndata import AnnData

from scsparse.results import OVERLAP_FRACTION, FitResults, jaccard_matrix, read_results

from ._top_genes import expression_source, looks_like_counts

__all__ = ["BROAD_FRACTION", "STUDY_SHIFT", "factor_diagnostics"]

#: A programme holding more than this fraction of the model's genes (``p* > 0.5``) is called *broad*: sparse
#: programmes hold a few percent of the genes, catch-all columns a fifth to a half
#: (:doc:`/user-guide/reading-programmes`).
BROAD_FRACTION = 0.2
#: A study-specific factor is *shifted* when its mean over its study's cells exceeds this many standard deviations
#: (of the same cells): it is then nearly constant in its study, a shift of the whole study rather than variation
#: among its cells, as when technical batches are fitted as studies without a batch covariate
#: (:doc:`/user-guide/multistudy`).
STUDY_SHIFT = 2.0


def _library_corr(res: FitResults, factor: str, k: int, log_library: np.ndarray | None) -> float:
    """Spearman correlation of a factor's activity with the log library size (its own cells only)."""
    if log_library is None:
        return float("nan")
    from scipy.stats import spearmanr

    cells = res.cell_masks.get(factor)
    z = np.asarray(res.Z[:, k], dtype=np.float64)
    z, lib = (z, log_library) if cells is None else (z[cells], log_library[cells])
    if z.size < 3 or np.ptp(z) <= 1e-12 or np.ptp(lib) <= 1e-12:
        return float("nan")
    return float(spearmanr(z, lib)[0])


def _study_shift(res: FitResults, factor: str, k: int) -> float:
    """Mean over standard deviation of a study-specific factor over its study's cells (NaN for shared factors)."""
    cells = res.cell_masks.get(factor)
    if cells is None:
        return float("nan")
    z = np.asarray(res.Z[np.asarray(cells, dtype=bool), k], dtype=np.float64)
    if z.size < 3:
        return float("nan")
    mean, sd = float(z.mean()), float(z.std())
    if sd > 1e-12:
        return mean / sd
    return float("nan") if abs(mean) <= 1e-12 else float(np.copysign(np.inf, mean))


def _overlaps(res: FitResults, names: list[str], included: np.ndarray) -> dict[str, dict[str, object]]:
    """For each factor, the other factor sharing most of its genes and the one whose activity correlates most.

    Gene overlap is the Jaccard index ``|A & B| / |A | B|`` of the genes with ``p*`` above the threshold;
    activity correlation is Pearson's r of the two columns of ``Z`` over the cells both factors are defined on.
    """
    cols = [res.factor_names.index(f) for f in names]
    jaccard = jaccard_matrix(included[:, cols])
    corr = _activity_correlations(res, names, cols)
    out: dict[str, dict[str, object]] = {}
    for i, f in enumerate(names):
        best = {"overlap_factor": "", "gene_jaccard": 0.0, "corr_factor": "", "activity_corr": float("nan")}
        if jaccard[i].max() > 0:
            j = int(jaccard[i].argmax())
            best.update(overlap_factor=names[j], gene_jaccard=float(jaccard[i, j]))
        if np.isfinite(corr[i]).any():
            j = int(np.nanargmax(np.abs(corr[i])))
            best.update(corr_factor=names[j], activity_corr=float(corr[i, j]))
        out[f] = best
    return out


def _activity_correlations(res: FitResults, names: list[str], cols: list[int]) -> np.ndarray:
    """Pearson's r of every pair of factors' activities over the cells both are defined on (NaN: undefined).

    Symmetric, NaN on the diagonal and where fewer than 3 shared cells or a constant activity leave r undefined.
    """
    masks = res.cell_masks
    corr = np.full((len(names), len(names)), np.nan)
    for i, j in zip(*np.triu_indices(len(names), k=1), strict=True):
        cells = np.ones(res.Z.shape[0], dtype=bool)
        for m in (masks.get(names[i]), masks.get(names[j])):
            if m is not None:
                cells &= np.asarray(m, dtype=bool)
        zi = np.asarray(res.Z[cells, cols[i]], dtype=np.float64)
        zj = np.asarray(res.Z[cells, cols[j]], dtype=np.float64)
        if zi.size < 3 or np.ptp(zi) <= 1e-12 or np.ptp(zj) <= 1e-12:
            continue
        corr[i, j] = corr[j, i] = np.corrcoef(zi, zj)[0, 1]
    return corr


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
    overlap_fraction: float = OVERLAP_FRACTION,
    study_shift: float = STUDY_SHIFT,
) -> pd.DataFrame:
    """Flag factors that are hard to interpret: *broad* programmes without any enriched gene set, factors that
    *overlap* another one, and study-specific factors that are a *shift* of their whole study.

    A sparse programme holds a small fraction of the genes. A factor whose programme includes a large part of
    the model's genes (``n_genes / G > broad_fraction``, genes with ``p* > pip_threshold``) and for which no
    gene set is enriched (no term with adjusted p at most ``max_p_adj`` in either direction) usually captures a
    global effect rather than a biological programme: library size or RNA content, ribosomal or mitochondrial
    load, ambient RNA, or a catch-all column the prior has not sparsified yet. Such a factor is flagged
    ``broad_unenriched``; read its top genes with care before calling it a programme. ``library_size_corr`` helps
    to check it against the library size (a strong correlation alone does not flag a factor: cell types differ in
    RNA content). Two factors whose programmes are largely the same genes (Jaccard index above
    ``overlap_fraction``) are flagged ``overlaps``: the model has merged programmes into overlapping columns or
    duplicated one. This is how a poor optimum of the non-convex objective shows without ground truth; compare
    fits from other seeds (:func:`scsparse.model.select_best`, :func:`scsparse.tl.stability`) before reading the
    two factors as separate programmes. The activity correlation with the closest other factor is reported
    too, but does not flag: programmes of the same cells co-vary in real data.

    For a multi-study fit, a study-specific factor whose mean over its study's cells exceeds ``study_shift`` standard
    deviations is flagged ``shifted`` ("study-wide shift"): it is nearly constant over that study, so it encodes how
    the study differs from the others on its genes more than variation among the study's cells. The model has no
    other place for such a difference: a shared factor cannot hold it, and without a batch covariate the decoder has
    no per-study offset. How to read it depends on what the studies are. Technical batches (chemistries, platforms,
    labs): a batch effect; fit again with the study column also as ``batch_key``, which gives each study its own
    offset outside the masks (on three 10x PBMC chemistries the shifted factors then went, and the specific block
    kept a 5'-only immediate-early programme, FOS, EGR1, DUSP2). Biological conditions: the shift can be the
    finding (on the embedded Kang data the stimulated condition's interferon factor, IFIT2, IFIT3, RTP4, had a shift
    of 4.1: the response is present in nearly every stimulated cell). Nothing about the model changes.

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
        one, or with an empty one (nothing tested), ``enriched`` is missing (``<NA>``) and no factor is flagged.
    broad_fraction
        Fraction of the model's genes above which a programme counts as broad.
    max_p_adj
        Adjusted p-value (the table's ``p_adj``: within factor and direction) at which a gene set counts.
    pip_threshold
        Inclusion threshold (default: the fit's, ``uns[key]["pip_threshold"]``).
    layer
        Counts for ``library_size_corr`` (default: the model's training layer, else ``X``).
    overlap_fraction
        Jaccard index of two programmes' genes above which the factors overlap. Only the factors diagnosed
        (``factors``) are compared with each other.
    study_shift
        Mean over standard deviation (within its study's cells) above which a study-specific factor is shifted.

    Returns
    -------
    pandas.DataFrame
        One row per factor: ``factor``, ``n_genes`` (``p* > pip_threshold``), ``gene_fraction`` (``n_genes / G``),
        ``n_anchor`` (genes whose only programme it is), ``broad``, ``best_term``, ``best_direction`` and
        ``best_p_adj`` (the most significant gene set, if any term was tested), ``library_size_corr`` (Spearman
        correlation of the factor's activity with the log library size, over the cells the factor is defined on;
        NaN when the data are not counts), ``enriched`` (a term at
        ``p_adj <= max_p_adj``), ``broad_unenriched`` (broad and not enriched), ``overlap_factor`` and
        ``gene_jaccard`` (the other factor with the most similar gene set, and the Jaccard index), ``corr_factor``
        and ``activity_corr`` (the other factor whose activity correlates most, and Pearson's r), ``overlaps``
        (``gene_jaccard > overlap_fraction``), ``study_shift`` (mean over standard deviation of a study-specific
        factor within its study's cells; NaN for other factors), ``shifted`` (``|study_shift| > study_shift``) and
        ``diagnostic`` (a short text joining ``"broad"``, ``"no gene set"``, ``"overlaps <factor>"`` and
        ``"study-wide shift"``, or ``"ok"``). ``table.attrs`` records ``broad_fraction``, ``max_p_adj``,
        ``overlap_fraction`` and ``study_shift``.

    Raises
    ------
    KeyError
        No results under ``key``.
    ValueError
        ``broad_fraction`` or ``overlap_fraction`` outside ``(0, 1]``, or ``study_shift`` not positive.

    Examples
    --------
    >>> scsparse.tl.enrich(adata, "hallmark_human")
    >>> diag = scsparse.tl.factor_diagnostics(adata)
    >>> diag[diag.broad_unenriched][["factor", "n_genes", "gene_fraction"]]
    """
    for name, value in (("broad_fraction", broad_fraction), ("overlap_fraction", overlap_fraction)):
        if not 0.0 < float(value) <= 1.0:
            raise ValueError(f"{name} must be in (0, 1], got {value!r}.")
    if not float(study_shift) > 0.0:
        raise ValueError(f"study_shift must be positive, got {study_shift!r}.")
    res = read_results(adata, key)
    names = res.resolve(factors)
    thr = res.pip_threshold if pip_threshold is None else float(pip_threshold)
    if enrichment is None and f"{key}_enrichment" in adata.uns:
        enrichment = adata.uns[f"{key}_enrichment"]
    if enrichment is not None and not isinstance(enrichment, pd.DataFrame):
        enrichment = pd.DataFrame(enrichment)
    if enrichment is not None and not len(enrichment):  # nothing was tested (e.g. no gene of any set in the data)
        enrichment = None
    mat, _ = expression_source(adata, layer, res.setup_layer)
    log_library = np.log1p(np.asarray(mat.sum(1), dtype=np.float64).ravel()) if looks_like_counts(mat) else None
    included = res.pip > thr
    per_gene = included.sum(1)
    n_genes_total = included.shape[0]
    overlaps = _overlaps(res, list(names), included)
    rows = []
    for f in names:
        k = res.factor_names.index(f)
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
            **overlaps[f],
            "study_shift": _study_shift(res, f, k),
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
    table["overlaps"] = table["gene_jaccard"] > overlap_fraction
    table["shifted"] = (table["study_shift"].abs() > study_shift).to_numpy(dtype=bool)
    no_set = (enriched == False).fillna(False).to_numpy(dtype=bool)  # noqa: E712
    flags = zip(table["broad"], no_set, table["overlaps"], table["overlap_factor"], table["shifted"], strict=True)
    table["diagnostic"] = [
        ", ".join(
            t
            for t in (
                "broad" if b else "",
                "no gene set" if ns else "",
                f"overlaps {o}" if ov else "",
                "study-wide shift" if sh else "",
            )
            if t
        )
        or "ok"
        for b, ns, ov, o, sh in flags
    ]
    table["enriched"] = enriched
    table.attrs.update(
        broad_fraction=float(broad_fraction),
        max_p_adj=float(max_p_adj),
        overlap_fraction=float(overlap_fraction),
        study_shift=float(study_shift),
    )
    return table
