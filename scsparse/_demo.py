"""The demo pipeline behind ``scsparse demo``: fit, embed, plot and write a report on the embedded Kang PBMCs."""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scsparse._checks import InvalidInputError, check_integer, check_real
from scsparse._io import write_csv, write_h5ad
from scsparse._text import format_p

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

# numpy, pandas, scanpy and the models are imported inside the functions: the CLI reads DEFAULT_MAX_EPOCHS
# from this module when it builds its parser, and `scsparse --help` must stay fast.

__all__ = ["DEFAULT_LR", "DEFAULT_MAX_EPOCHS", "DEFAULT_N_HIDDEN", "run_demo"]

#: Training settings of the default demo (``scsparse demo``, ``make demo``): a short preview, not a default fit,
#: chosen to finish in a fraction of a default fit's time on a CPU. The masked decoder evaluates a
#: (cells x genes x hidden) tensor per minibatch, so the width is the main cost: 64 hidden units instead of the
#: model's 128. With ``lr=1e-2`` (the paper's rate and the model's default; ``1e-3`` moves ``W`` too little in so
#: few epochs) 60 epochs over the embedded 1975 x 2004 data (batch 128) give a sparse mask (8 of 20 factors active,
#: the rest switched off by the prior) whose factors are recognisable programmes (interferon response, NK
#: cytotoxicity, B cells, FCGR3A+ and CD14+ monocytes, HLA class II). The demo trains exactly these epochs
#: (``stop_when_settled=False``); with the model's defaults ``train()`` runs until the fit has settled.
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
RESULT = "result.h5ad"
REPORT = "report.md"
#: Every file the demo may write into its folder.
OUTPUTS = (RESULT, REPORT, *FIGURES, HISTORY_FIGURE, RESPONSE_FIGURE, ENRICHMENT_FIGURE, ENRICHMENT_TABLE)


def _say(msg: str, verbose: bool) -> None:
    if verbose:
        print(f"[scsparse demo] {msg}", flush=True)


def _run_enrichment(adata, key: str, factors: list[str], out: Path, verbose: bool) -> tuple[Any, str]:
    """Hallmark ORA of the factors; ``(table or None, note for the report)``. Never raises."""
    from scsparse import tl

    try:
        tl.enrich(adata, GENE_SETS, key=key, factors=factors)
        table = adata.uns[f"{key}_enrichment"]
    except Exception as exc:  # a demo must finish: report why there is no enrichment instead
        _say(f"enrichment skipped: {exc}", verbose)
        return None, f"Gene-set enrichment skipped: {type(exc).__name__}: {exc}"
    write_csv(table, out / ENRICHMENT_TABLE, index=False)
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
    overwrite: bool = False,
    verbose: bool = True,
) -> dict[str, Any]:
    """Fit a sparse VAE on the embedded Kang PBMC data and write the result, figures and a report.

    Steps: load :func:`scsparse.data.kang_pbmc`, fit with :func:`scsparse.tl.sparse_vae` (NB likelihood on
    ``layers["counts"]``), compute a neighbour graph and UMAP on the active factors, draw
    ``loadings_heatmap.png``, ``factors_umap.png``, ``umap_celltype_condition.png`` and ``training_history.png``;
    test the factors for MSigDB Hallmark gene sets (:func:`scsparse.tl.enrich`, genes up and down separately;
    the gene sets ship with the package, so no download) into ``enrichment.csv`` and ``enrichment_dotplot.png``,
    and for association with condition and cell type (:func:`scsparse.tl.factor_association`); write
    ``result.h5ad`` and ``report.md`` (:func:`scsparse.tl.fit_report`: settings and provenance, held-out NLL and
    cell-type accuracy from the factors, per factor its genes, ``eta``, diagnostics, genes up and down with it, its
    gene sets and the condition and cell types where it is highest and lowest). If the enrichment fails, the
    report says why and the rest is written as usual.

    Parameters
    ----------
    out_dir
        Output folder (created if needed). Files of the demo already there are only replaced with
        ``overwrite=True``; other files are left alone.
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
    overwrite
        Replace the demo's files in an existing ``out_dir``.
    verbose
        Print progress and a short summary.

    Returns
    -------
    dict
        ``out_dir``, ``result`` (path), ``report`` (path), ``figures`` (paths), ``active_factors``,
        ``heldout_nll``, ``n_heldout``, ``celltype_accuracy`` (dict for the active factors),
        ``celltype_accuracy_all`` (all factors), ``description`` (:func:`scsparse.tl.describe_factors` by condition
        and cell type), ``diagnostics`` (:func:`scsparse.tl.factor_diagnostics`), ``enrichment`` (DataFrame or
        ``None``), ``enrichment_note``, ``time_s``, ``seed``, ``max_epochs``, ``adata`` and ``model``.

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
    from scsparse.results import factors_key, read_results

    out = Path(out_dir)
    _check_demo_options(out, max_epochs=max_epochs, n_latent=n_latent, seed=seed, n_hidden=n_hidden, lr=lr)
    _check_demo_folder(out, overwrite)
    warnings.filterwarnings("ignore", message=".*does not have many workers.*")
    start = time.perf_counter()
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
        # a fixed, short demonstration fit; model.train() with its defaults trains until the fit has settled
        train_kwargs={"batch_size": 128, "lr": lr, "enable_progress_bar": verbose, "stop_when_settled": False},
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
    acc = tl.label_accuracy(adata.obsm[active_key], labels, seed=seed)
    acc_all = tl.label_accuracy(res.Z, labels, seed=seed)

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

    if active:
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
    groupby = ["condition", "cell_type"]
    for column in groupby:  # kept in result.h5ad: uns["sparsevae_association_<column>"]
        tl.factor_association(adata, column, key=KEY, factors=shown)
    description = tl.describe_factors(adata, key=KEY, factors=shown, groupby=groupby, enrichment=enrichment)
    diagnostics = tl.factor_diagnostics(adata, key=KEY, factors=shown, enrichment=enrichment)
    result_path = out / RESULT
    write_h5ad(adata, result_path)
    summary: dict[str, Any] = {
        "out_dir": out,
        "result": result_path,
        "report": out / REPORT,
        "figures": figures,
        "active_factors": active,
        "heldout_nll": nll,
        "n_heldout": n_heldout,
        "celltype_accuracy": acc,
        "celltype_accuracy_all": acc_all,
        "description": description,
        "diagnostics": diagnostics,
        "enrichment": enrichment,
        "enrichment_note": enrichment_note,
        "seed": seed,
        "max_epochs": max_epochs,
        "adata": adata,
        "model": model,
    }
    summary["time_s"] = time.perf_counter() - start
    tl.fit_report(
        adata,
        key=KEY,
        factors=shown,
        groupby=groupby,
        enrichment=enrichment,
        enrichment_note=enrichment_note,
        diagnostics=diagnostics,
        description=description,
        title="scsparse demo: sparse VAE on Kang et al. (2018) PBMCs",
        intro=f"Data: embedded `scsparse.data.kang_pbmc()`, {adata.n_obs} cells x {adata.n_vars} genes (raw counts, "
        "IFN-beta stimulated and control PBMCs).",
        metrics=_metric_lines(summary, len(res.factor_names)),
        files=_file_notes(figures, enrichment is not None),
        path=summary["report"],
    )
    summary["time_s"] = time.perf_counter() - start
    if verbose:
        _print_summary(summary)
    return summary


def _check_demo_options(out: Path, **options: Any) -> None:
    """The demo's settings, checked before the data are loaded or a folder created."""
    check_integer("max_epochs", options["max_epochs"])
    check_integer("n_latent", options["n_latent"])
    check_integer("seed", options["seed"], minimum=0)
    check_integer("n_hidden", options["n_hidden"])
    check_real("lr", options["lr"], low=0, low_open=True, fix=f"The demo's default is {DEFAULT_LR:g}.")
    for part in (out, *out.parents):
        if part.exists():
            if not part.is_dir():
                raise InvalidInputError(
                    f"The demo's output folder {str(out)!r} cannot be made: {str(part)!r} is a file."
                )
            break


def _check_demo_folder(out: Path, overwrite: bool) -> None:
    """Without ``overwrite``, refuse an output folder that already holds files the demo writes."""
    if overwrite or not out.is_dir():
        return
    taken = sorted(name for name in OUTPUTS if (out / name).exists())
    if taken:
        raise InvalidInputError(
            f"{str(out)!r} already holds {', '.join(taken)}; pass overwrite=True (scsparse demo --overwrite) to "
            "replace them, or give another folder."
        )


def _metric_lines(summary: dict[str, Any], n_latent: int) -> list[str]:
    acc, acc_all = summary["celltype_accuracy"], summary["celltype_accuracy_all"]
    return [
        f"- held-out NLL (importance-sampled -log p(x) per cell, 20 samples, {summary['n_heldout']} held-out "
        f"cells): {summary['heldout_nll']:.1f}",
        f"- held-out cell-type accuracy of a multinomial logistic regression on the standardised factors "
        f"(stratified 70/30 split, seed {summary['seed']}): **{acc['accuracy']:.3f}** on the "
        f"{len(summary['active_factors'])} active factors (balanced {acc['balanced_accuracy']:.3f}); "
        f"{acc_all['accuracy']:.3f} on all {n_latent} factors; majority class {acc['chance']:.3f}",
        f"- wall time: {summary['time_s']:.0f} s",
    ]


def _file_notes(figures: list[Path], enriched: bool) -> dict[str, str]:
    notes = {
        "result.h5ad": f"the AnnData with `obsm['X_{KEY}']`, `varm['{KEY}_W']`, `varm['{KEY}_pip']`, `uns['{KEY}']`, "
        f"the neighbour graph and `obsm['X_umap']` (computed on the active factors, `obsm['X_{KEY}_active']`)",
        FIGURES[0]: "|W| of the top 5 genes of each active factor, red where the gene goes up with the factor and "
        "blue where it goes down",
        FIGURES[1]: "activity of each active factor on the UMAP",
        FIGURES[2]: "the UMAP coloured by cell type and condition",
        HISTORY_FIGURE: "negative ELBO and number of active factors per epoch",
        RESPONSE_FIGURE: "decoded expression of the 6 genes of each active factor's programme (p* > 0.5) that change "
        "most along it (`model.get_factor_response()`: the factor set to quantiles of its values in 500 cells, the "
        "rest of each cell kept)",
        ENRICHMENT_FIGURE: "the best gene sets of each factor and direction",
    }
    written = {path.name for path in figures}
    listed = {name: what for name, what in notes.items() if name in written or name == "result.h5ad"}
    if enriched:
        listed[ENRICHMENT_TABLE] = f"the full enrichment table (also in `uns['{KEY}_enrichment']` of `result.h5ad`)"
    return listed


def _print_summary(summary: dict[str, Any]) -> None:
    """The demo's closing lines: metrics, each factor's genes by direction and groups, the best gene sets."""
    description: pd.DataFrame = summary["description"]
    active = summary["active_factors"]
    acc = summary["celltype_accuracy"]
    print(
        f"\nscsparse demo: {len(active)} active factors, held-out NLL {summary['heldout_nll']:.1f}, "
        f"cell-type accuracy {acc['accuracy']:.3f} (majority class {acc['chance']:.3f}), {summary['time_s']:.0f} s"
    )
    diagnostic = summary["diagnostics"].set_index("factor")["diagnostic"]
    for f, row in description.loc[description.index.isin(active)].iterrows():
        genes = "; ".join(
            f"genes {label} with it: {row[column]}"
            for column, label in (("genes_up", "up"), ("genes_down", "down"))
            if row[column]
        )
        flag = diagnostic.get(f, "")
        flag = f" [{flag}]" if flag and flag != "ok" else ""
        where = ", ".join(
            f"{side} in {row[f'cell_type_{side}']}" for side in ("highest", "lowest") if row[f"cell_type_{side}"]
        )
        print(f"  {f}: {row['n_genes']} genes{flag}" + (f", activity {where}" if where else "") + f"; {genes}")
    enrichment = summary.get("enrichment")
    if enrichment is not None and len(enrichment):
        best = enrichment[enrichment["p_adj"] <= 0.05].sort_values("p_adj").drop_duplicates("factor").head(5)
        terms = "; ".join(
            f"{r.factor} {'up' if r.direction == 'positive' else 'down'}: {r.term} (adj. p {format_p(r.p_adj)})"
            for r in best.itertuples()
        )
        print(f"best gene sets: {terms}" if terms else "no gene set at adj. p <= 0.05")
    elif summary.get("enrichment_note"):
        print(summary["enrichment_note"])
    print(
        f"wrote {summary['result']}, {summary['report']} and {len(summary['figures'])} figures in {summary['out_dir']}"
    )
