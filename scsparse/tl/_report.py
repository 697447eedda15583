"""A fit's report in Markdown: settings and provenance, the active factors, diagnostics and what each factor is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from os import PathLike

import numpy as np
import pandas as pd
from anndata import AnnData

from scsparse._io import write_text
from scsparse._text import format_p, markdown_rows
from scsparse.results import OVERLAP_FRACTION, factors_key, read_results

from ._describe import describe_factors, factor_report
from ._diagnostics import BROAD_FRACTION, factor_diagnostics

__all__ = ["diagnostics_report", "fit_report"]

#: A factor whose programme holds more than this fraction of the genes makes the report say that ``W`` is not
#: sparse yet (the median over the active factors).
NOT_SPARSE_FRACTION = 0.5


def _markdown_table(df: pd.DataFrame) -> str:
    rows = (
        [idx, *(f"{v:.3g}" if isinstance(v, float) else str(v) for v in row.to_numpy())] for idx, row in df.iterrows()
    )
    return "\n".join(markdown_rows([df.index.name or "", *df.columns], rows))


def diagnostics_report(diagnostics: pd.DataFrame, n_genes: int) -> list[str]:
    """Markdown lines on broad factors without a gene set and on overlapping factors.

    Parameters
    ----------
    diagnostics
        The output of :func:`factor_diagnostics`.
    n_genes
        Number of genes of the model.

    Returns
    -------
    list of str
        Where gene sets were tested (``enriched`` not missing), a ``### Broad factors without a gene set``
        section: what the flag means, one line per flagged factor and the broad factors that are enriched; then
        the pairs of overlapping factors. Empty when there is nothing to say.

    Examples
    --------
    >>> scsparse.tl.enrich(adata, "hallmark_human")
    >>> diag = scsparse.tl.factor_diagnostics(adata)  # reads adata.uns["sparsevae_enrichment"]
    >>> for line in scsparse.tl.diagnostics_report(diag, adata.n_vars):
    ...     print(line)
    """
    if diagnostics is None or not len(diagnostics):
        return []
    diag = diagnostics.reset_index() if "factor" not in diagnostics.columns else diagnostics
    lines = _broad_lines(diag, n_genes) if diag["enriched"].notna().any() else []
    if "overlaps" in diag.columns and diag["overlaps"].any():
        pairs = sorted({tuple(sorted((r.factor, r.overlap_factor))) for r in diag[diag["overlaps"]].itertuples()})
        listed = "; ".join(f"{a} and {b}" for a, b in pairs)
        lines += [] if lines else ["### Overlapping factors", ""]
        lines.append(
            f'- Overlapping factors (most of their genes in common; diagnostic "overlaps ..."): {listed}. One '
            "programme may be duplicated or several merged: compare fits from other seeds before reading them as "
            "separate programmes."
        )
    return lines


def _broad_lines(diag: pd.DataFrame, n_genes: int) -> list[str]:
    fraction = float(diag.attrs.get("broad_fraction", BROAD_FRACTION))
    lines = [
        "### Broad factors without a gene set",
        "",
        f"A factor is *broad* when more than {fraction:.0%} of the {n_genes} model genes have p* > 0.5 in it "
        "(`gene_fraction`). A sparse programme holds a small part of the genes; a broad factor with no enriched "
        'gene set (no term at adj. p <= 0.05 in either direction; diagnostic "broad, no gene set") usually '
        "captures something global rather than a biological programme: RNA content or library size, ribosomal, "
        "mitochondrial or ferritin load, ambient RNA, or a catch-all column that the prior has not sparsified yet. "
        "Its top genes are then mostly highly expressed housekeeping genes, lncRNAs and unannotated clones "
        "(RP11-..., AC...). Read such a factor with care: check it against the library size, and do not call it a "
        "programme from its top genes alone. The flag is only a reading aid: the model is not changed.",
        "",
    ]
    flagged = diag[diag["broad_unenriched"]]
    broad_ok = diag[diag["broad"] & ~diag["broad_unenriched"]]
    for _, row in flagged.iterrows():
        best = (
            f" (best: {row['best_term']}, adj. p {format_p(float(row['best_p_adj']))})"
            if row["best_term"] and float(row["best_p_adj"]) < 1.0
            else ""
        )
        rho = float(row.get("library_size_corr", np.nan))
        lib = f"; Spearman correlation with the log library size {rho:+.2f}" if np.isfinite(rho) else ""
        lines.append(
            f"- **{row['factor']}**: {int(row['n_genes'])} of {n_genes} genes ({row['gene_fraction']:.0%}) with "
            f"p* > 0.5, {int(row['n_anchor'])} anchor genes; no gene set at adj. p <= 0.05{best}{lib}."
        )
    if not len(flagged):
        lines.append("- No active factor is broad without an enriched gene set.")
    if len(broad_ok):
        names = ", ".join(f"{r.factor} ({r.gene_fraction:.0%})" for r in broad_ok.itertuples())
        lines.append(f"- Broad but enriched (interpretable, yet not sparse): {names}.")
    return lines


def _settings_lines(uns: Mapping) -> list[str]:
    params = dict(uns.get("params", {}))
    train = dict(uns.get("train_params", {}))
    shown = ("n_latent", "gene_likelihood", "n_hidden", "n_layers", "lambda0", "lambda1", "a", "b")
    model = ", ".join(f"{name}={params[name]!r}" for name in shown if name in params)
    versions = dict(uns.get("versions", {}))
    lines = [
        f"- model: {uns.get('model', 'SparseVAE')}" + (f", {model}" if model else ""),
        f"- training: {uns.get('n_epochs_trained')} epochs (max_epochs={train.get('max_epochs')}), "
        f"batch_size={train.get('batch_size')}, train_size={train.get('train_size')}, "
        f"layer={dict(uns.get('setup_args', {})).get('layer')!r}",
        f"- seed: {uns.get('seed')}",
    ]
    if uns.get("data_hash"):
        lines.append(f"- data hash (sha256 of the training counts): `{uns['data_hash']}`")
    if versions:
        lines.append("- versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    return lines


def _consensus_lines(consensus: pd.DataFrame | None, uns: Mapping) -> list[str]:
    """Markdown lines on how reproducible each programme of a consensus fit is (none for a single fit)."""
    if consensus is None:
        return []
    params = dict(uns.get("consensus_params", {}))
    n_restarts = int(params.get("n_restarts", 0))
    share = float(params.get("min_share", np.nan))
    kept = consensus[consensus["kept"].astype(bool)]
    dropped = consensus[~consensus["kept"].astype(bool)]
    identifiable = kept[kept["identifiable"].astype(bool)]
    every = kept[kept["reproducibility"].astype(float) >= 1.0 - 1e-9]
    lines = [
        "### How reproducible each programme is",
        "",
        f"Consensus of {n_restarts} restarts with different seeds: the active programmes of every restart were "
        f"pooled and grouped by the similarity of their loadings (cosine distance, cut at "
        f"{float(params.get('distance', np.nan)):g}); a group is kept when at least {share:.0%} of the restarts "
        "contribute to it, and its genes are those more than half of its members hold. The model was then "
        "refitted with one factor per kept programme and those genes held fixed. `reproducibility`: share of the "
        "restarts with a programme in the group; `agreement`: mean Jaccard index of the members' genes with the "
        "consensus genes; `n_genes`: genes with consensus p* > 0.5; `n_anchor_genes`: of those, genes in no other "
        "kept programme; `identifiable`: at least two anchor genes.",
        "",
        f"- kept: {len(kept)} of {len(consensus)} groups"
        + (f" ({', '.join(kept['factor'].astype(str))})" if len(kept) else ""),
        f"- found by every restart (the ones to read; the others are leads): {len(every)} of the {len(kept)} "
        "kept" + (f" ({', '.join(every['factor'].astype(str))})" if len(every) else ""),
        f"- identifiable (two anchor genes or more): {len(identifiable)} of the {len(kept)} kept",
    ]
    if len(dropped):
        lines.append(
            f"- not kept (too few restarts): {', '.join(dropped['programme'].astype(str))}; a programme one seed "
            "finds and most others do not is not a finding."
        )
    return [*lines, "", _markdown_table(consensus.set_index("programme")), ""]


def _guided_lines(guided: pd.DataFrame | None) -> list[str]:
    """Markdown lines on the factors guided by gene sets: what each kept of its set (none without gene sets)."""
    if guided is None or guided.empty:
        return []
    supported = guided[guided["status"].isin(["kept", "extended"])]
    unsupported = guided[guided["status"].isin(["not supported", "switched off"])]
    lines = [
        "### Factors guided by gene sets",
        "",
        "Each set's genes had a raised prior inclusion in a factor of its own; the data kept some, dropped others and "
        "added genes outside the set. `retention`: share of the set kept; `share_in_set`: share of the programme in "
        "the set; `jaccard`: the programme against the set (1: the programme is the set); `status`: `kept`, "
        "`extended` (most of the set kept, more genes added), `departed` (the factor became another programme), "
        "`not supported` (fewer than 3 set genes kept), `switched off` (no gene).",
        "",
        f"- supported by the data: {len(supported)} of {len(guided)} sets"
        + (f" ({', '.join(supported['gene_set'].astype(str))})" if len(supported) else ""),
    ]
    if len(unsupported):
        lines.append(f"- not supported: {', '.join(unsupported['gene_set'].astype(str))}")
    columns = ["factor", "gene_set", "set_size", "n_set_genes_kept", "n_genes_added", "retention", "share_in_set"]
    shown = guided[[*columns, "jaccard", "status"]].set_index("factor")
    return [*lines, "", _markdown_table(shown), ""]


def _group_cell(row: pd.Series, column: str, side: str) -> str:
    group = row.get(f"{column}_{side}", "")
    return f"{group} ({float(row[f'{column}_{side}_d']):+.2f})" if group else ""


def _factor_table(
    description: pd.DataFrame, diagnostics: pd.DataFrame | None, eta: pd.Series, n_genes: int
) -> pd.DataFrame:
    table = pd.DataFrame(index=description.index)
    table["n_genes"] = description["n_genes"].astype(int)
    table["gene_fraction"] = table["n_genes"] / n_genes
    table["eta"] = eta.reindex(table.index).astype(float)
    for column in description.attrs.get("groupby", []):
        for side in ("highest", "lowest"):
            table[f"{column}_{side}"] = [_group_cell(row, column, side) for _, row in description.iterrows()]
    if diagnostics is not None and len(diagnostics):
        diag = diagnostics.set_index("factor") if "factor" in diagnostics.columns else diagnostics
        table["diagnostic"] = diag["diagnostic"].reindex(table.index).fillna("").to_numpy()
    return table


def fit_report(
    adata: AnnData,
    *,
    key: str = "sparsevae",
    factors: Sequence[str | int] | None = None,
    groupby: Sequence[str] | str = (),
    enrichment: pd.DataFrame | None = None,
    enrichment_note: str | None = None,
    diagnostics: pd.DataFrame | None = None,
    description: pd.DataFrame | None = None,
    title: str | None = None,
    intro: str | None = None,
    metrics: Sequence[str] = (),
    files: Mapping[str, str] | None = None,
    path: str | PathLike[str] | None = None,
) -> str:
    """A Markdown report of a fit: settings, active factors, diagnostics and what each factor is.

    Reads everything from the AnnData: the provenance in ``uns[key]`` (model, parameters, training, seed, data
    hash, versions), :func:`describe_factors` (genes up and down with each factor, its best gene sets, the
    ``groupby`` groups where it is highest and lowest) and :func:`factor_diagnostics` (broad factors without a
    gene set, overlapping factors); a consensus fit adds how reproducible each programme is, a fit with gene sets
    what each guided factor kept of its set (``uns[key]["guided_factors"]``). ``scsparse demo`` and
    ``scsparse fit --figures`` write their reports with it.

    Parameters
    ----------
    adata
        AnnData with results of :func:`sparse_vae` or :func:`multistudy_sparse_vae` under ``key``.
    key
        The ``key_added`` of the fit.
    factors
        Factors to describe (default: the active factors; all factors when none is active).
    groupby
        ``obs`` columns to relate the factors to (as :func:`factor_association` does; nothing is stored).
    enrichment
        A table of :func:`enrich` (``adata.uns[f"{key}_enrichment"]``; ``None``: no gene-set column, and the
        diagnostics find no gene set).
    enrichment_note
        A sentence on the gene sets and the test, printed above the per-factor lines.
    diagnostics
        The output of :func:`factor_diagnostics` (default: computed with ``enrichment``).
    description
        The output of :func:`describe_factors` for these factors (default: computed with ``groupby`` and
        ``enrichment``).
    title
        First heading (default ``"Sparse VAE fit '<key>'"``).
    intro
        A paragraph under the title (e.g. the data).
    metrics
        Extra Markdown lines listed under *Results* (e.g. held-out NLL, label accuracy).
    files
        Output files and what they hold, listed under *Files*.
    path
        Also write the report to this file.

    Returns
    -------
    str
        The Markdown text.

    Examples
    --------
    >>> scsparse.tl.enrich(adata, "hallmark_human")
    >>> hallmark = adata.uns["sparsevae_enrichment"]
    >>> text = scsparse.tl.fit_report(adata, groupby=["cell_type"], enrichment=hallmark, path="report.md")
    """
    res = read_results(adata, key)
    shown = res.resolve(factors) if factors is not None else (res.active_factors or res.factor_names)
    uns = adata.uns[key]
    n_latent = len(res.factor_names)
    if diagnostics is None:
        diagnostics = factor_diagnostics(adata, key=key, factors=shown, enrichment=enrichment)
    if description is None:
        description = describe_factors(adata, key=key, factors=shown, groupby=groupby, enrichment=enrichment)
    eta = pd.Series(np.asarray(res.eta, dtype=float), index=res.factor_names)
    table = _factor_table(description, diagnostics, eta, adata.n_vars)

    lines = [f"# {title or f'Sparse VAE fit {key!r}'}", ""]
    if intro:
        lines += [intro, ""]
    lines += ["## Settings", "", *_settings_lines(uns), "", "## Results", ""]
    lines.append(
        f"- active factors: {len(res.active_factors)} of {n_latent} (at least one gene with p* > {res.pip_threshold:g})"
    )
    active = table.loc[table.index.isin(res.active_factors)]
    if len(active) and float(active["n_genes"].median()) > NOT_SPARSE_FRACTION * adata.n_vars:
        lines.append(
            f"- **note: W is not sparse yet**: the median active factor includes {active['n_genes'].median():.0f} of "
            f"{adata.n_vars} genes (p* > 0.5). The factors and their top genes are still informative, but train "
            "longer (`max_epochs`) for sparse, identifiable programmes."
        )
    lines += [*metrics, ""]
    lines += _consensus_lines(res.consensus, uns)
    lines += _guided_lines(res.guided)
    lines += ["## Active factors" if res.active_factors else "## Factors (none is active)", ""]
    groups = ", ".join(f"`{c}_highest` / `{c}_lowest`" for c in description.attrs.get("groupby", []))
    lines.append(
        "`n_genes`: genes with p* > 0.5; `gene_fraction`: `n_genes` over all model genes; `eta`: prior fraction of "
        "genes in the factor's slab"
        + (f"; {groups}: the groups where the factor is highest and lowest (Cohen's d)" if groups else "")
        + '; `diagnostic`: "broad" when the factor holds more than '
        f'{float(diagnostics.attrs.get("broad_fraction", BROAD_FRACTION)):.0%} of the genes, "no gene set" when '
        'no gene set is enriched (adj. p <= 0.05), "overlaps <factor>" when the Jaccard index of the two '
        f'factors\' genes exceeds {float(diagnostics.attrs.get("overlap_fraction", OVERLAP_FRACTION)):g}, "ok" '
        "otherwise."
    )
    lines += ["", _markdown_table(table) if len(table) else "_No factor to describe._", ""]
    broad = diagnostics_report(diagnostics, adata.n_vars)
    if broad:
        lines += [*broad, ""]
    lines += [
        "## What each factor is",
        "",
        "Direction: a gene is *up* with a factor when its normalised expression is higher in cells where the "
        "factor's activity is high (positive correlation across cells), *down* when lower. The sign of the loading "
        "w is not used for this: the nonlinear decoder can flip it. A factor's own sign is a symmetry of the model, "
        'fixed after training so that its top genes (weighted by |w|) go up with it; "up with factor_k" always '
        f"refers to the activity stored in `obsm[{factors_key(key)!r}]`. Genes are listed by decreasing |w|.",
        "",
    ]
    if enrichment_note:
        lines += [f"_{enrichment_note}_", ""]
    lines += factor_report(description) or ["_No factor to describe._"]
    if files:
        lines += ["", "## Files", "", *(f"- `{name}`: {what}" for name, what in files.items())]
    text = "\n".join(lines) + "\n"
    if path is not None:
        write_text(path, text)
    return text
