"""The demo pipeline behind ``scsparse demo``: fit, embed, plot and write a report on the embedded Kang PBMCs."""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import pandas as pd

# numpy, pandas, scanpy and the models are imported inside the functions: the CLI reads DEFAULT_MAX_EPOCHS
# from this module when it builds its parser, and `scsparse --help` must stay fast.

__all__ = ["DEFAULT_LR", "DEFAULT_MAX_EPOCHS", "DEFAULT_N_HIDDEN", "celltype_accuracy", "factor_table", "run_demo"]

#: Training settings of the default demo, chosen so that ``scsparse demo`` takes about 4 minutes on 2 idle CPU
#: cores. The masked decoder evaluates a (cells x genes x hidden) tensor per minibatch; on the 1975 x 2004
#: embedded data (batch 128, 14 steps per epoch) one epoch of ``SparseVAE(adata, n_latent=20)`` (``n_hidden=128``)
#: took 20-36 s on 2 shared cores, which leaves room for ~10 epochs: too few for the default ``lr=1e-3`` to
#: move the mask ``W`` (initialised at 1), and the top genes were noise. With ``n_hidden=64`` an epoch takes
#: about 6.5 s on idle cores (25-30 s when the machine is oversubscribed), and ``lr=1e-2`` (the paper's rate)
#: gives recognisable programmes (interferon response, NK cytotoxicity, monocyte S100A8/9) in 25 epochs. ``W``
#: is not sparse yet at that length (every factor keeps almost every gene); the report says so.
DEFAULT_MAX_EPOCHS = 25
DEFAULT_N_HIDDEN = 64
DEFAULT_LR = 1e-2

KEY = "sparsevae"
FIGURES = ("loadings_heatmap.png", "factors_umap.png", "umap_celltype_condition.png")


def _say(msg: str, verbose: bool) -> None:
    if verbose:
        print(f"[scsparse demo] {msg}", flush=True)


def celltype_accuracy(
    factors: np.ndarray, labels: np.ndarray, seed: int = 0, test_size: float = 0.3
) -> dict[str, float]:
    """Held-out accuracy of a multinomial logistic regression predicting labels from standardised factors.

    Parameters
    ----------
    factors
        Cells x factors matrix.
    labels
        Cell labels (e.g. cell types).
    seed
        Seed of the stratified train/test split.
    test_size
        Fraction of cells held out.

    Returns
    -------
    dict
        ``accuracy``, ``balanced_accuracy`` and ``chance`` (the majority-class frequency in the test set).

    Examples
    --------
    >>> celltype_accuracy(adata.obsm["X_sparsevae"], adata.obs["cell_type"].to_numpy(), seed=0)
    """
    import numpy as np
    import pandas as pd
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    labels = np.asarray(labels).astype(str)
    stratify = labels if pd.Series(labels).value_counts().min() >= 2 else None
    x_tr, x_te, y_tr, y_te = train_test_split(
        np.asarray(factors), labels, test_size=test_size, stratify=stratify, random_state=seed
    )
    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)).fit(x_tr, y_tr)
    pred = clf.predict(x_te)
    return {
        "accuracy": float(np.mean(pred == y_te)),
        "balanced_accuracy": float(balanced_accuracy_score(y_te, pred)),
        "chance": float(pd.Series(y_te).value_counts(normalize=True).iloc[0]),
    }


def factor_table(adata, key: str = KEY, factors: list[str] | None = None, n_top: int = 10) -> pd.DataFrame:
    """One row per factor: genes with ``p* > threshold``, ``eta``, mean activity by condition, top cell type.

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
    import numpy as np
    import pandas as pd

    from scsparse.pl import top_genes_per_factor

    uns = adata.uns[key]
    names = [str(f) for f in uns["factor_names"]]
    factors = [str(f) for f in uns["active_factors"]] if factors is None else factors
    thr = float(uns.get("pip_threshold", 0.5))
    Z = pd.DataFrame(np.asarray(adata.obsm[f"X_{key}"]), index=adata.obs_names, columns=names)
    pip = np.asarray(adata.varm[f"{key}_pip"])
    tops = top_genes_per_factor(adata, key, factors, n_top)
    by_cond = Z.groupby(adata.obs["condition"].astype(str).to_numpy()).mean()
    by_type = Z.groupby(adata.obs["cell_type"].astype(str).to_numpy()).mean()
    rows = []
    for f in factors:
        k = names.index(f)
        row = {
            "factor": f,
            "n_genes": int((pip[:, k] > thr).sum()),
            "eta": float(np.asarray(uns["eta"])[k]),
        }
        for cond in by_cond.index:
            row[f"mean_{cond}"] = float(by_cond.loc[cond, f])
        sd = float(Z[f].std()) or 1.0
        if {"stimulated", "control"} <= set(by_cond.index):
            row["shift_sd"] = float(by_cond.loc["stimulated", f] - by_cond.loc["control", f]) / sd
        row["highest_in"] = str(by_type[f].idxmax())
        row["highest_mean"] = float(by_type[f].max())
        row["top_genes"] = ", ".join(tops[f])
        rows.append(row)
    return pd.DataFrame(rows).set_index("factor") if rows else pd.DataFrame()


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
        "`n_genes`: genes with p* > 0.5; `eta`: prior fraction of genes in the factor's slab; `mean_*`: mean "
        "factor activity (posterior mean z) by condition; `shift_sd`: (stimulated - control) in units of the "
        "factor's standard deviation; `highest_in`: cell type with the highest mean activity; `top_genes`: by "
        "|W| among genes with p* > 0.5.",
        "",
    ]
    lines.append(_fmt_table(table) if len(table) else "_No factor is active: train longer (--max-epochs)._")
    lines += [
        "",
        "## Files",
        "",
        "- `result.h5ad`: the AnnData with `obsm['X_sparsevae']`, `varm['sparsevae_W']`, `varm['sparsevae_pip']`, "
        "`uns['sparsevae']`, the neighbour graph and `obsm['X_umap']` (computed on the active factors, "
        "`obsm['X_sparsevae_active']`)",
        "- `loadings_heatmap.png`: W of the top 5 genes of each active factor",
        "- `factors_umap.png`: activity of each active factor on the UMAP",
        "- `umap_celltype_condition.png`: the UMAP coloured by cell type and condition",
        "",
    ]
    path.write_text("\n".join(lines))


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
    ``loadings_heatmap.png``, ``factors_umap.png`` and ``umap_celltype_condition.png``, write ``result.h5ad``
    and ``report.md`` (per active factor: top genes, genes with ``p* > 0.5``, ``eta``, mean activity by
    condition and the cell type where it is highest; held-out NLL and cell-type accuracy from the factors).

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
        ``celltype_accuracy_all`` (all factors), ``factor_table`` (DataFrame), ``time_s``, ``seed``,
        ``max_epochs``, ``adata`` and ``model``.

    Examples
    --------
    >>> from scsparse._demo import run_demo
    >>> out = run_demo("scsparse_demo", max_epochs=5)
    >>> out["active_factors"], out["celltype_accuracy"]["accuracy"]
    """
    import matplotlib
    import numpy as np

    if matplotlib.get_backend().lower() not in ("agg", "pdf", "svg", "ps", "cairo"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import scanpy as sc

    from scsparse import data, pl, tl

    warnings.filterwarnings("ignore", message=".*does not have many workers.*")
    warnings.filterwarnings("ignore", message=".*smaller than the logging interval.*")
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
    uns = adata.uns[KEY]
    names = [str(f) for f in uns["factor_names"]]
    active = [str(f) for f in uns["active_factors"]]
    shown = active or names
    idx = [names.index(f) for f in shown]
    adata.obsm[f"X_{KEY}_active"] = np.asarray(adata.obsm[f"X_{KEY}"])[:, idx]

    _say(f"{len(active)} active factors; held-out NLL and cell-type accuracy", verbose)
    n_heldout = len(model.validation_indices) if model.validation_indices is not None else 0
    nll = model.get_heldout_nll(n_mc_samples=20)
    labels = adata.obs["cell_type"].to_numpy()
    acc = celltype_accuracy(adata.obsm[f"X_{KEY}_active"], labels, seed=seed)
    acc_all = celltype_accuracy(adata.obsm[f"X_{KEY}"], labels, seed=seed)

    _say("neighbours and UMAP on the active factors; figures", verbose)
    sc.pp.neighbors(adata, use_rep=f"X_{KEY}_active", random_state=seed)
    sc.tl.umap(adata, random_state=seed)
    fallback = {} if active else {"factors": shown, "pip_threshold": 0.0}
    figures = [out / name for name in FIGURES]
    ax = pl.loadings_heatmap(adata, key=KEY, n_top_genes=5, show=False, save=figures[0], **fallback)
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

    table = factor_table(adata, KEY, shown if not active else None)
    result_path = out / "result.h5ad"
    adata.write_h5ad(result_path)
    summary: dict[str, Any] = {
        "out_dir": out,
        "result": result_path,
        "report": out / "report.md",
        "figures": figures,
        "active_factors": active,
        "heldout_nll": nll,
        "n_heldout": n_heldout,
        "celltype_accuracy": acc,
        "celltype_accuracy_all": acc_all,
        "factor_table": table,
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
        for f, row in table.iterrows():
            genes = ", ".join(str(row["top_genes"]).split(", ")[:5])
            shift = f", stim-ctrl {row['shift_sd']:+.2f} sd" if "shift_sd" in row else ""
            print(f"  {f}: {row['n_genes']} genes, highest in {row['highest_in']}{shift}: {genes}")
    print(
        f"wrote {summary['result']}, {summary['report']} and {len(summary['figures'])} figures in {summary['out_dir']}"
    )
