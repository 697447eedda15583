"""The demo pipeline behind ``scsparse demo``: fit, embed, plot and write a report on the embedded Kang PBMCs."""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scsparse._text import format_p

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

# numpy, pandas, scanpy and the models are imported inside the functions: the CLI reads DEFAULT_MAX_EPOCHS
# from this module when it builds its parser, and `scsparse --help` must stay fast.

__all__ = [
    "DEFAULT_LR",
    "DEFAULT_MAX_EPOCHS",
    "DEFAULT_N_HIDDEN",
    "add_diagnostics",
    "factor_table",
    "run_demo",
]

#: Training settings of the default demo (``scsparse demo``, ``make demo``), chosen so that it finishes in a
#: couple of minutes on 2 CPU cores (about 70 s for the whole demo). The masked decoder evaluates a
#: (cells x genes x hidden) tensor per minibatch, so the width is the main cost: 64 hidden units instead of the
#: model's 128. With ``lr=1e-2`` (the paper's rate and the model's default; ``1e-3`` moves ``W`` too little in so
#: few epochs) 60 epochs over the embedded 1975 x 2004 data (batch 128) give a sparse mask (8 of 20 factors active,
#: the rest switched off by the prior) whose factors are recognisable programmes (interferon response, NK
#: cytotoxicity, B cells, FCGR3A+ and CD14+ monocytes, HLA class II).
DEFAULT_MAX_EPOCHS = 60
DEFAULT_N_HIDDEN = 64
DEFAULT_LR = 1e-2

KEY = "sparsevae"
FIGURES = ("loadings_heatmap.png", "factors_umap.png", "umap_celltype_condition.png")
#: Gene sets of the demo's enrichment: MSigDB Hallmark v2025 (human), shipped inside the package
#: (``scsparse/data/genesets/human_hallmark_v2025.gmt``), so the demo never needs the network.
GENE_SETS = "hallmark_human"
ENRICHMENT_FIGURE = "enrichment_dotplot.png"
ENRICHMENT_TABLE = "enrichment.csv"
HISTORY_FIGURE = "training_history.png"
RESPONSE_FIGURE = "factor_responses.png"


def _say(msg: str, verbose: bool) -> None:
    if verbose:
        print(f"[scsparse demo] {msg}", flush=True)


def factor_table(adata, key: str = KEY, factors: list[str] | None = None, n_top: int = 10) -> pd.DataFrame:
    """One row per factor: genes with ``p* > threshold``, ``eta``, mean activity by condition and cell type.

    Parameters
    ----------
    adata
        AnnData with results under ``key`` and ``obs`` columns ``condition`` and ``cell_type``.
    key
        The ``key_added`` of the fit.
    factors
        Factors to describe (default: the active factors).
    n_top
        Top genes listed per factor.

    Returns
    -------
    pandas.DataFrame
        Indexed by factor.

    Examples
    --------
    >>> factor_table(adata).loc["factor_0", "top_genes"]
    """
    import pandas as pd

    from scsparse.results import read_results

    res = read_results(adata, key)
    names = res.factor_names
    factors = res.active_factors if factors is None else factors
    thr = res.pip_threshold
    Z = pd.DataFrame(res.Z, index=adata.obs_names, columns=names)
    pip = res.pip
    tops = {f: res.programme_genes(f, n_top) for f in factors}
    by_cond = Z.groupby(adata.obs["condition"].astype(str).to_numpy()).mean()
    by_type = Z.groupby(adata.obs["cell_type"].astype(str).to_numpy()).mean()
    rows = []
    for f in factors:
        k = names.index(f)
        row = {
            "factor": f,
            "n_genes": int((pip[:, k] > thr).sum()),
            "eta": float(res.eta[k]),
        }
        for cond in by_cond.index:
            row[f"mean_{cond}"] = float(by_cond.loc[cond, f])
        sd = float(Z[f].std()) or 1.0
        if {"stimulated", "control"} <= set(by_cond.index):
            row["shift_sd"] = float(by_cond.loc["stimulated", f] - by_cond.loc["control", f]) / sd
        row["highest_in"] = str(by_type[f].idxmax())
        row["highest_mean"] = float(by_type[f].max())
        row["lowest_in"] = str(by_type[f].idxmin())
        row["top_genes"] = ", ".join(tops[f])
        rows.append(row)
    return pd.DataFrame(rows).set_index("factor") if rows else pd.DataFrame()


def add_diagnostics(table: pd.DataFrame, diagnostics: pd.DataFrame) -> pd.DataFrame:
    """The factor table with ``gene_fraction`` (after ``n_genes``) and ``diagnostic`` from
    :func:`scsparse.tl.factor_diagnostics`.

    Parameters
    ----------
    table
        The output of :func:`factor_table` (indexed by factor).
    diagnostics
        The output of :func:`scsparse.tl.factor_diagnostics` for the same factors.

    Returns
    -------
    pandas.DataFrame
        A copy of ``table`` with the two columns (rows of factors without a diagnostic get none).

    Examples
    --------
    >>> add_diagnostics(factor_table(adata), scsparse.tl.factor_diagnostics(adata))["diagnostic"]
    """
    if not len(table):
        return table
    diag = diagnostics.set_index("factor")
    out = table.copy()
    position = list(out.columns).index("n_genes") + 1 if "n_genes" in out.columns else len(out.columns)
    out.insert(position, "gene_fraction", diag["gene_fraction"].reindex(out.index).to_numpy())
    out["diagnostic"] = diag["diagnostic"].reindex(out.index).fillna("").to_numpy()
    return out


def _diagnostic_lines(summary: dict[str, Any], n_genes: int) -> list[str]:
    """The report's paragraph on broad factors without an enriched gene set."""
    from scsparse.tl import BROAD_FRACTION

    diag = summary.get("diagnostics")
    if diag is None or not len(diag):
        return []
    fraction = float(diag.attrs.get("broad_fraction", BROAD_FRACTION))
    lines = [
        "",
        "### Broad factors without a gene set",
        "",
        f"A factor is *broad* when more than {fraction:.0%} of the {n_genes} model genes have p* > 0.5 in it "
        "(`gene_fraction` in the table above). A sparse programme holds a small part of the genes; a broad factor "
        "with no enriched gene set (no term at adj. p <= 0.05 in either direction; column `diagnostic`: "
        '"broad, no gene set") usually captures something global rather than a biological programme: RNA '
        "content or library size, ribosomal, mitochondrial or ferritin load, ambient RNA, or a catch-all column "
        "that the prior has not sparsified yet. Its top genes are then mostly highly expressed housekeeping genes, "
        "lncRNAs and unannotated clones (RP11-..., AC...). Read such a factor with care: check it against the "
        "library size, and do not call it a programme from its top genes alone. The flag is only a reading aid: "
        "the model is not changed.",
        "",
    ]
    flagged = diag[diag["broad_unenriched"]]
    broad_ok = diag[diag["broad"] & ~diag["broad_unenriched"]]
    if len(flagged):
        for _, row in flagged.iterrows():
            best = (
                f" (best: {row['best_term']}, adj. p {format_p(float(row['best_p_adj']))})"
                if row["best_term"] and float(row["best_p_adj"]) < 1.0
                else ""
            )
            rho = float(row.get("library_size_corr", float("nan")))
            lib = f"; Spearman correlation with the log library size {rho:+.2f}" if rho == rho else ""
            lines.append(
                f"- **{row['factor']}**: {int(row['n_genes'])} of {n_genes} genes ({row['gene_fraction']:.0%}) with "
                f"p* > 0.5, {int(row['n_anchor'])} anchor genes; no gene set at adj. p <= 0.05{best}{lib}."
            )
    else:
        lines.append("- No active factor is broad without an enriched gene set.")
    if len(broad_ok):
        names = ", ".join(f"{r.factor} ({r.gene_fraction:.0%})" for r in broad_ok.itertuples())
        lines.append(f"- Broad but enriched (interpretable, yet not sparse): {names}.")
    if "overlaps" in diag.columns and diag["overlaps"].any():
        pairs = sorted({tuple(sorted((r.factor, r.overlap_factor))) for r in diag[diag["overlaps"]].itertuples()})
        listed = "; ".join(f"{a} and {b}" for a, b in pairs)
        lines.append(
            f'- Overlapping factors (most of their genes in common; column `diagnostic`: "overlaps ..."): {listed}. '
            "One programme may be duplicated or several merged: compare fits from other seeds before reading them "
            "as separate programmes."
        )
    return lines


def _fmt_table(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| factor | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for idx, row in df.iterrows():
        cells = [f"{v:.3g}" if isinstance(v, float) else str(v) for v in row.to_numpy()]
        lines.append(f"| {idx} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_report(path: Path, adata, summary: dict[str, Any], table: pd.DataFrame, key: str = KEY) -> None:
    """Write the Markdown report of a demo run.

    Parameters
    ----------
    path
        Output file.
    adata
        The result AnnData.
    summary
        The dictionary returned by :func:`run_demo` (metrics and settings).
    table
        The output of :func:`factor_table`.
    key
        The ``key_added`` of the fit.
    """
    from scsparse.tl import BROAD_FRACTION, OVERLAP_FRACTION

    uns = adata.uns[key]
    params = dict(uns.get("params", {}))
    train = dict(uns.get("train_params", {}))
    versions = dict(uns.get("versions", {}))
    acc, acc_all = summary["celltype_accuracy"], summary["celltype_accuracy_all"]
    n_active = len(summary["active_factors"])
    lines = [
        "# scsparse demo: sparse VAE on Kang et al. (2018) PBMCs",
        "",
        f"Data: embedded `scsparse.data.kang_pbmc()`, {adata.n_obs} cells x {adata.n_vars} genes (raw counts, "
        "IFN-beta stimulated and control PBMCs).",
        "",
        "## Settings",
        "",
        f"- model: {uns.get('model', 'SparseVAE')}, n_latent={params.get('n_latent')}, "
        f"gene_likelihood={params.get('gene_likelihood')!r}, n_hidden={params.get('n_hidden')}, "
        f"n_layers={params.get('n_layers')}, lambda0={params.get('lambda0')}, lambda1={params.get('lambda1')}, "
        f"a={params.get('a')}, b={params.get('b')}",
        f"- training: {uns.get('n_epochs_trained')} epochs (max_epochs={train.get('max_epochs')}), "
        f"batch_size={train.get('batch_size')}, train_size={train.get('train_size')}, "
        f"layer={dict(uns.get('setup_args', {})).get('layer')!r}",
        f"- seed: {uns.get('seed')}",
        f"- data hash (sha256 of the training counts): `{uns.get('data_hash')}`",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()),
        f"- wall time: {summary['time_s']:.0f} s",
        "",
        "## Results",
        "",
        f"- active factors: {n_active} of {params.get('n_latent')} (at least one gene with "
        f"p* > {float(uns.get('pip_threshold', 0.5))})",
        *_sparsity_note(table, adata.n_vars),
        f"- held-out NLL (importance-sampled -log p(x) per cell, 20 samples, "
        f"{summary['n_heldout']} held-out cells): {summary['heldout_nll']:.1f}",
        f"- held-out cell-type accuracy of a multinomial logistic regression on the standardised factors "
        f"(stratified 70/30 split, seed {summary['seed']}): **{acc['accuracy']:.3f}** on the {n_active} active "
        f"factors (balanced {acc['balanced_accuracy']:.3f}); {acc_all['accuracy']:.3f} on all "
        f"{params.get('n_latent')} factors; majority class {acc['chance']:.3f}",
        "",
        "## Active factors",
        "",
        "`n_genes`: genes with p* > 0.5; `gene_fraction`: `n_genes` over all model genes; `eta`: prior fraction "
        "of genes in the factor's slab; `mean_*`: mean "
        "factor activity (posterior mean z) by condition; `shift_sd`: (stimulated - control) in units of the "
        "factor's standard deviation; `highest_in` / `lowest_in`: cell types with the highest and lowest mean "
        "activity (factors are oriented so that their top genes go up with them; where a factor's genes go down "
        "with it, that programme is highest in `lowest_in`, see the direction below); "
        "`top_genes`: by "
        '|W| among genes with p* > 0.5; `diagnostic`: "broad" when the factor holds more than '
        f'{BROAD_FRACTION:.0%} of the genes, "no gene set" when no Hallmark set is enriched (adj. p <= 0.05), '
        f'"overlaps <factor>" when the Jaccard index of the two factors\' genes exceeds {OVERLAP_FRACTION:g}, "ok" '
        "otherwise (see below).",
        "",
    ]
    lines.append(_fmt_table(table) if len(table) else "_No factor is active: train longer (--max-epochs)._")
    lines += _diagnostic_lines(summary, adata.n_vars)
    lines += _interpretation_lines(summary)
    lines += [
        "",
        "## Files",
        "",
        "- `result.h5ad`: the AnnData with `obsm['X_sparsevae']`, `varm['sparsevae_W']`, `varm['sparsevae_pip']`, "
        "`uns['sparsevae']`, the neighbour graph and `obsm['X_umap']` (computed on the active factors, "
        "`obsm['X_sparsevae_active']`)",
        "- `loadings_heatmap.png`: |W| of the top 5 genes of each active factor, red where the gene goes up "
        "with the factor and blue where it goes down",
        "- `factors_umap.png`: activity of each active factor on the UMAP",
        "- `umap_celltype_condition.png`: the UMAP coloured by cell type and condition",
        f"- `{HISTORY_FIGURE}`: negative ELBO and number of active factors per epoch",
    ]
    if summary.get("response_figure"):
        lines.append(
            f"- `{RESPONSE_FIGURE}`: decoded expression of the 6 genes of each active factor's programme (p* > 0.5) "
            "that change most along it (`model.get_factor_response()`: the factor set to quantiles of its values "
            "in 500 cells, the rest of each cell kept)"
        )
    if summary.get("enrichment") is not None:
        lines += [
            f"- `{ENRICHMENT_TABLE}`: the full enrichment table (also in `uns['{key}_enrichment']` of `result.h5ad`)",
            f"- `{ENRICHMENT_FIGURE}`: the best gene sets of each factor and direction",
        ]
    lines.append("")
    path.write_text("\n".join(lines))


def _interpretation_lines(summary: dict[str, Any]) -> list[str]:
    """The report's section on what each factor is (genes, gene sets, associations)."""
    lines = ["", "## What each factor is", ""]
    lines.append(
        "Direction: a gene is *up* with a factor when its normalised expression is higher in cells where the "
        "factor's activity is high (positive correlation across cells), *down* when lower. The sign of the "
        "loading w is not used for this: the nonlinear decoder can flip it. A factor's own sign is a symmetry of "
        'the model, fixed after training so that its top genes (weighted by |w|) go up with it; "up with '
        "factor_k\" always refers to the activity stored in `obsm['X_sparsevae']`. Genes are listed by "
        "decreasing |w|."
    )
    lines.append("")
    note = summary.get("enrichment_note")
    if note:
        lines += [f"_{note}_", ""]
    lines += summary.get("factor_descriptions", []) or ["_No factor to describe._"]
    assoc = summary.get("association_table")
    if assoc is not None and len(assoc):
        lines += [
            "",
            "### Factor-condition and factor-cell-type associations",
            "",
            "Per factor: Cohen's d of stimulated vs control cells (`condition_d`, positive: higher in stimulated "
            "cells), and the cell types where the factor is highest and lowest compared with all other cells (d of "
            "that type vs the rest). Tests: Mann-Whitney U, Benjamini-Hochberg adjusted over all factor x group "
            "tests.",
            "",
            _fmt_table(assoc),
        ]
    return lines


def _association_table(adata, key: str, factors: list[str]) -> pd.DataFrame:
    """One row per factor: stimulated-vs-control effect and the most different cell type."""
    import pandas as pd

    rows = []
    cond = adata.uns.get(f"{key}_association_condition")
    ctype = adata.uns.get(f"{key}_association_cell_type")
    for f in factors:
        row: dict[str, Any] = {"factor": f}
        if cond is not None and len(cond):
            c = cond[cond["factor"] == f]
            stim = c[c["group"] == "stimulated"]
            pick = stim.iloc[0] if len(stim) else c.iloc[0]
            row["condition_d"] = float(pick["cohens_d"]) if len(stim) else float("nan")
            row["condition_adj_p"] = format_p(float(pick["p_adj"]))
        if ctype is not None and len(ctype):
            t = ctype[ctype["factor"] == f]
            hi, lo = t.loc[t["cohens_d"].idxmax()], t.loc[t["cohens_d"].idxmin()]
            row["highest_cell_type"] = str(hi["group"])
            row["highest_d"] = float(hi["cohens_d"])
            row["highest_adj_p"] = format_p(float(hi["p_adj"]))
            row["lowest_cell_type"] = str(lo["group"])
            row["lowest_d"] = float(lo["cohens_d"])
        rows.append(row)
    return pd.DataFrame(rows).set_index("factor") if rows else pd.DataFrame()


def _run_enrichment(adata, key: str, factors: list[str], out: Path, verbose: bool) -> tuple[Any, str]:
    """Hallmark ORA of the factors; ``(table or None, note for the report)``. Never raises."""
    from scsparse import tl

    try:
        table = tl.enrich(adata, GENE_SETS, key=key, factors=factors)
    except Exception as exc:  # a demo must finish: report why there is no enrichment instead
        _say(f"enrichment skipped: {exc}", verbose)
        return None, f"Gene-set enrichment skipped: {type(exc).__name__}: {exc}"
    table.to_csv(out / ENRICHMENT_TABLE, index=False)
    dense = sorted(set(table.loc[table["selection"].str.startswith("top"), "factor"])) if len(table) else []
    tested = sorted(set(table["factor"])) if len(table) else []
    top_rule = f"the {tl.DEFAULT_N_TOP} genes with largest |w| per direction"
    if dense and len(dense) == len(tested):
        rule = f"{top_rule}, as every factor has more than 500 genes with p* > 0.5 (W not sparse yet)"
    elif dense:
        rule = f"genes with p* > 0.5; {top_rule} for factors with more than 500 such genes ({', '.join(dense)})"
    else:
        rule = "genes with p* > 0.5"
    note = (
        "Gene sets: MSigDB Hallmark v2025 (human, 50 sets; CC BY 4.0, Liberzon et al. 2015 Cell Syst 1:417). "
        f"Over-representation (hypergeometric test) of each factor's programme ({rule}), genes up and genes down "
        f"tested separately, against the {adata.n_vars} model genes as background; adj. p: Benjamini-Hochberg "
        "within factor and direction."
    )
    return table, note


def run_demo(
    out_dir: str | Path = "scsparse_demo",
    max_epochs: int = DEFAULT_MAX_EPOCHS,
    n_latent: int = 20,
    seed: int = 0,
    *,
    n_hidden: int = DEFAULT_N_HIDDEN,
    lr: float = DEFAULT_LR,
    verbose: bool = True,
) -> dict[str, Any]:
    """Fit a sparse VAE on the embedded Kang PBMC data and write the result, figures and a report.

    Steps: load :func:`scsparse.data.kang_pbmc`, fit with :func:`scsparse.tl.sparse_vae` (NB likelihood on
    ``layers["counts"]``), compute a neighbour graph and UMAP on the active factors, draw
    ``loadings_heatmap.png``, ``factors_umap.png``, ``umap_celltype_condition.png`` and ``training_history.png``;
    test the factors for MSigDB Hallmark gene sets (:func:`scsparse.tl.enrich`, genes up and down separately;
    the gene sets ship with the package, so no download) into ``enrichment.csv`` and ``enrichment_dotplot.png``,
    and for association with condition and cell type (:func:`scsparse.tl.factor_association`); write
    ``result.h5ad`` and ``report.md`` (per active factor: top genes, genes with ``p* > 0.5``, ``eta``, mean
    activity by condition and the cell type where it is highest; what each factor is: genes up and down with it,
    its gene sets, the condition and cell type where it differs most; held-out NLL and cell-type accuracy from
    the factors). If the enrichment fails, the report says why and the rest is written as usual.

    Parameters
    ----------
    out_dir
        Output folder (created if needed; existing files are replaced).
    max_epochs
        Training epochs.
    n_latent
        Number of factors (upper bound).
    seed
        Seed of the model, the split, the UMAP and the classifier.
    n_hidden
        Width of the hidden layers (the model's default is 128; see :data:`DEFAULT_N_HIDDEN` for why the demo
        uses less).
    lr
        Adam learning rate.
    verbose
        Print progress and a short summary.

    Returns
    -------
    dict
        ``out_dir``, ``result`` (path), ``report`` (path), ``figures`` (paths), ``active_factors``,
        ``heldout_nll``, ``n_heldout``, ``celltype_accuracy`` (dict for the active factors),
        ``celltype_accuracy_all`` (all factors), ``factor_table`` (DataFrame, with the ``gene_fraction`` and
        ``diagnostic`` of :func:`scsparse.tl.factor_diagnostics`), ``enrichment`` (DataFrame or ``None``),
        ``enrichment_note``, ``factor_descriptions`` (Markdown lines), ``association_table``, ``diagnostics``
        (the table of :func:`scsparse.tl.factor_diagnostics`), ``time_s``,
        ``seed``,
        ``max_epochs``, ``adata`` and ``model``.

    Examples
    --------
    >>> from scsparse._demo import run_demo
    >>> out = run_demo("scsparse_demo", max_epochs=5)
    >>> out["active_factors"], out["celltype_accuracy"]["accuracy"]
    """
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "pdf", "svg", "ps", "cairo"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import scanpy as sc

    from scsparse import data, pl, tl
    from scsparse.generic.metrics import label_accuracy
    from scsparse.results import factors_key, read_results

    warnings.filterwarnings("ignore", message=".*does not have many workers.*")
    start = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    adata = data.kang_pbmc()
    _say(
        f"data: {adata.n_obs} cells x {adata.n_vars} genes; fitting SparseVAE (n_latent={n_latent}, "
        f"n_hidden={n_hidden}, NB, lr={lr:g}, {max_epochs} epochs, seed {seed})",
        verbose,
    )
    model = tl.sparse_vae(
        adata,
        layer="counts",
        n_latent=n_latent,
        gene_likelihood="nb",
        max_epochs=max_epochs,
        seed=seed,
        key_added=KEY,
        overwrite=True,
        model_kwargs={"n_hidden": n_hidden},
        train_kwargs={"batch_size": 128, "lr": lr, "enable_progress_bar": verbose},
    )
    res = read_results(adata, KEY)
    active = res.active_factors
    shown = active or res.factor_names
    active_key = factors_key(KEY, "active")
    adata.obsm[active_key] = res.Z[:, [res.factor_names.index(f) for f in shown]]

    _say(f"{len(active)} active factors; held-out NLL and cell-type accuracy", verbose)
    n_heldout = len(model.validation_indices) if model.validation_indices is not None else 0
    nll = model.get_heldout_nll(n_mc_samples=20)
    labels = adata.obs["cell_type"].to_numpy()
    acc = label_accuracy(adata.obsm[active_key], labels, seed=seed)
    acc_all = label_accuracy(res.Z, labels, seed=seed)

    _say("neighbours and UMAP on the active factors; figures", verbose)
    sc.pp.neighbors(adata, use_rep=active_key, random_state=seed)
    sc.tl.umap(adata, random_state=seed)
    fallback = {} if active else {"factors": shown, "pip_threshold": 0.0}
    figures = [out / name for name in FIGURES]
    ax = pl.loadings_heatmap(adata, key=KEY, n_top_genes=5, use="directed", show=False, save=figures[0], **fallback)
    plt.close(ax.figure)
    axes = pl.factor_embedding(adata, key=KEY, basis="umap", factors=shown, show=False, save=figures[1])
    plt.close((axes[0] if isinstance(axes, list) else axes).figure)
    axes = pl.factor_embedding(
        adata,
        key=KEY,
        basis="umap",
        factors=[],
        color_extra=["cell_type", "condition"],
        ncols=2,
        show=False,
        save=figures[2],
    )
    plt.close(axes[0].figure)

    ax_list = pl.training_history(model, show=False, save=out / HISTORY_FIGURE)
    plt.close(ax_list[0].figure)
    figures.append(out / HISTORY_FIGURE)

    response_figure = bool(active)
    if response_figure:
        axes = pl.factor_response(
            model.get_factor_response(seed=seed), n_genes=6, show=False, save=out / RESPONSE_FIGURE
        )
        plt.close(axes[0].figure)
        figures.append(out / RESPONSE_FIGURE)

    _say(f"interpretation: gene-set enrichment ({GENE_SETS}) and associations with condition and cell type", verbose)
    enrichment, enrichment_note = _run_enrichment(adata, KEY, shown, out, verbose)
    if enrichment is not None and len(enrichment):
        try:
            ax = pl.enrichment_dotplot(adata, key=KEY, n_terms=2, show=False, save=out / ENRICHMENT_FIGURE)
            plt.close(ax.figure)
            figures.append(out / ENRICHMENT_FIGURE)
        except ValueError as exc:  # nothing to draw
            _say(f"no enrichment plot: {exc}", verbose)
    description = tl.describe_factors(
        adata, key=KEY, factors=shown, groupby=["condition", "cell_type"], enrichment=enrichment
    )
    descriptions = tl.factor_report(description)

    table = factor_table(adata, KEY, shown if not active else None)
    diagnostics = tl.factor_diagnostics(adata, key=KEY, factors=shown, enrichment=enrichment)
    table = add_diagnostics(table, diagnostics)
    result_path = out / "result.h5ad"
    adata.write_h5ad(result_path)
    summary: dict[str, Any] = {
        "out_dir": out,
        "result": result_path,
        "report": out / "report.md",
        "figures": figures,
        "response_figure": response_figure,
        "active_factors": active,
        "heldout_nll": nll,
        "n_heldout": n_heldout,
        "celltype_accuracy": acc,
        "celltype_accuracy_all": acc_all,
        "factor_table": table,
        "enrichment": enrichment,
        "enrichment_note": enrichment_note,
        "factor_descriptions": descriptions,
        "association_table": _association_table(adata, KEY, shown),
        "diagnostics": diagnostics,
        "seed": seed,
        "max_epochs": max_epochs,
        "time_s": time.perf_counter() - start,
        "adata": adata,
        "model": model,
    }
    write_report(summary["report"], adata, summary, table if active else table.iloc[:0])
    summary["time_s"] = time.perf_counter() - start
    if verbose:
        _print_summary(summary)
    return summary


def _sparsity_note(table: pd.DataFrame, n_genes: int) -> list[str]:
    """A warning line when the active factors still include most genes (training too short to sparsify W)."""
    if not len(table) or "n_genes" not in table:
        return []
    median = float(table["n_genes"].median())
    if median <= 0.5 * n_genes:
        return []
    return [
        f"- **note: W is not sparse yet**: the median active factor includes {median:.0f} of {n_genes} genes "
        "(p* > 0.5). The factors and their top genes are still informative, "
        "but train longer (`--max-epochs`) for sparse, identifiable programmes."
    ]


def _print_summary(summary: dict[str, Any]) -> None:
    table: pd.DataFrame = summary["factor_table"]
    active = summary["active_factors"]
    print(
        f"\nscsparse demo: {len(active)} active factors, held-out NLL {summary['heldout_nll']:.1f}, "
        f"cell-type accuracy {summary['celltype_accuracy']['accuracy']:.3f} "
        f"(majority class {summary['celltype_accuracy']['chance']:.3f}), {summary['time_s']:.0f} s"
    )
    for line in _sparsity_note(table, summary["adata"].n_vars):
        print(line.replace("**", "").removeprefix("- "))
    if active and len(table):
        from scsparse import tl

        # list each factor's top genes by the direction they take with its activity (a factor can have both)
        tops = tl.top_genes(summary["adata"], key=KEY, n_top=5, factors=list(table.index))
        for f, row in table.iterrows():
            g = tops[tops["factor"] == f]
            genes = "; ".join(
                f"genes {label} with it: {', '.join(g.loc[g['direction'] == d, 'gene'])}"
                for d, label in (("positive", "up"), ("negative", "down"))
                if (g["direction"] == d).any()
            )
            shift = f", stim-ctrl {row['shift_sd']:+.2f} sd" if "shift_sd" in row else ""
            flag = row.get("diagnostic", "")
            flag = f" [{flag}]" if flag and flag != "ok" else ""
            print(
                f"  {f}: {row['n_genes']} genes{flag}, activity highest in {row['highest_in']}, "
                f"lowest in {row['lowest_in']}{shift}; {genes}"
            )
    enrichment = summary.get("enrichment")
    if enrichment is not None and len(enrichment):
        best = enrichment[enrichment["p_adj"] <= 0.05].sort_values("p_adj").drop_duplicates("factor").head(5)
        terms = "; ".join(
            f"{r.factor} {'up' if r.direction == 'positive' else 'down'}: {r.term} (adj. p {r.p_adj:.1e})"
            for r in best.itertuples()
        )
        print(f"best gene sets: {terms}" if terms else "no gene set at adj. p <= 0.05")
    elif summary.get("enrichment_note"):
        print(summary["enrichment_note"])
    print(
        f"wrote {summary['result']}, {summary['report']} and {len(summary['figures'])} figures in {summary['out_dir']}"
    )
