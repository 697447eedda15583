"""Dataset checks of the multi-study real-data benchmark: fits, label transfer, references and enrichment."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from scsparse.generic.metrics import neighbour_agreement, random_agreement
from scsparse.utils import torch_threads

from .._cell_scores import interferon_enrichment, transfer_accuracy, transfer_predictions
from .._fits import paper_model_kwargs, scvi_tools_fit, train_fixed_epochs
from .._real_data import INTERFERON_TERMS, variable_genes

if TYPE_CHECKING:  # pragma: no cover
    from anndata import AnnData

__all__ = ["confusion_table", "largest_confusion"]

#: Marker genes of the PBMC types used to label the unannotated PBMC chemistries (:func:`marker_labels`).
PBMC_MARKERS: dict[str, tuple[str, ...]] = {
    "T": ("CD3E", "CD3D", "IL7R"),
    "CD14 monocyte": ("CD14", "LYZ", "S100A8"),
    "FCGR3A monocyte": ("FCGR3A", "MS4A7"),
    "B": ("MS4A1", "CD79A", "CD79B"),
    "NK": ("NKG7", "GNLY", "KLRD1"),
    "DC": ("FCER1A", "CST3"),
    "platelet": ("PPBP", "PF4"),
}


def _fit_real(
    adata: AnnData, study_key: str, cfg: Mapping[str, Any], seed: int, batch_key: str | None = None
) -> tuple[Any, float]:
    from scsparse.model import MultiStudySparseVAE

    t0 = time.perf_counter()
    MultiStudySparseVAE.setup_anndata(adata, study_key=study_key, layer="counts", batch_key=batch_key)
    model = MultiStudySparseVAE(
        adata,
        n_latent_shared=cfg["n_latent_shared"],
        n_latent_specific=cfg["n_latent_specific"],
        seed=seed,
        encode_study=cfg["encode_study"],
        **paper_model_kwargs(cfg),
    )
    train_fixed_epochs(model, cfg)
    return model, time.perf_counter() - t0


def lognormalised_genes(adata: AnnData) -> np.ndarray:
    """Log-normalised counts of every gene of ``adata``: ``log1p(1e4 * counts / library)``, dense.

    A reference representation without any model (``layers["counts"]``, all cells together).
    """
    import scanpy as sc
    from anndata import AnnData as _AnnData

    tmp = _AnnData(X=adata.layers["counts"].copy())
    with torch_threads(None):  # scanpy's numba kernels can reset torch's thread count
        sc.pp.normalize_total(tmp, target_sum=1e4)
        sc.pp.log1p(tmp)
    x = tmp.X
    return np.asarray(x.toarray() if hasattr(x, "toarray") else x, dtype=np.float64)


def pca_reference(x: np.ndarray, n_comps: int = 20) -> np.ndarray:
    """A reference representation: the first ``n_comps`` principal components of ``x`` (cells x genes).

    ``scanpy.pp.pca(n_comps, random_state=0)``; ``x`` is :func:`lognormalised_genes` of the model's genes, all
    cells together.
    """
    import scanpy as sc

    with torch_threads(None):  # scanpy's numba kernels can reset torch's thread count
        pcs = sc.pp.pca(x, n_comps=min(n_comps, min(x.shape) - 1), random_state=0)
    return np.asarray(pcs, dtype=np.float64)


def scvi_reference(adata: AnnData, study_key: str, settings: Mapping[str, Any], seed: int) -> np.ndarray:
    """The latent space of the standard integration model: ``scvi.model.SCVI`` with the study as its batch.

    A reference for the shared factors from a model that is built to remove the study: scVI on
    ``layers["counts"]`` with ``batch_key=study_key``, the multi-study model's sizes (``n_latent_shared``
    latent dimensions, ``n_hidden``, ``n_layers``, ``dropout_rate``), negative binomial, and its training
    settings (epochs, learning rate, batch size, all cells). It is fitted on a copy, so ``adata`` keeps its
    own scvi-tools registration.

    Returns
    -------
    numpy.ndarray
        Posterior means, ``(n_cells, n_latent_shared)``.
    """
    import scvi
    from anndata import AnnData as _AnnData

    tmp = _AnnData(X=adata.layers["counts"].copy(), obs=adata.obs[[study_key]].copy())
    network = {
        "n_latent": int(settings["n_latent_shared"]),
        "n_hidden": int(settings["n_hidden"]),
        "n_layers": int(settings["n_layers"]),
        "dropout_rate": float(settings["dropout_rate"]),
        "gene_likelihood": "nb",
    }
    train = {
        "max_epochs": int(settings["max_epochs"]),
        "batch_size": int(settings["batch_size"]),
        "train_size": 1.0,
        "plan_kwargs": {"lr": float(settings["lr"])},
        "enable_progress_bar": False,
    }
    with scvi_tools_fit(scvi.model.SCVI, tmp, seed, setup={"batch_key": study_key}, model=network, train=train) as fit:
        return np.asarray(fit.model.get_latent_representation(), dtype=np.float64)


def _reference_predictions(
    adata: AnnData, labels: np.ndarray, train: np.ndarray, test: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`transfer_predictions` on 20 PCs of the log-normalised genes and on those genes themselves."""
    x = lognormalised_genes(adata)
    return (
        transfer_predictions(pca_reference(x), labels, train, test),
        transfer_predictions(x, labels, train, test),
    )


def confusion_table(truth: np.ndarray, predicted: np.ndarray) -> pd.DataFrame:
    """Counts of test cells by true (rows) and predicted (columns) label, over the union of both label sets.

    Examples
    --------
    >>> import numpy as np
    >>> confusion_table(np.array(["a", "a", "b"]), np.array(["a", "b", "b"])).to_numpy().tolist()
    [[1, 1], [0, 1]]
    """
    names = sorted(set(truth.tolist()) | set(predicted.tolist()))
    table = pd.crosstab(pd.Categorical(truth, names), pd.Categorical(predicted, names), dropna=False)
    table.index.name, table.columns.name = "true", "predicted"
    return table


def largest_confusion(table: pd.DataFrame) -> tuple[str, str, int, int]:
    """The off-diagonal cell of :func:`confusion_table` with the most cells: ``(true, predicted, n, n_true)``."""
    off = table.to_numpy().copy()
    np.fill_diagonal(off, -1)
    i, j = np.unravel_index(int(np.argmax(off)), off.shape)
    return str(table.index[i]), str(table.columns[j]), int(off[i, j]), int(table.iloc[i].sum())


def _metric_rows(dataset: str, seed: int, fit_seconds: float, values: Mapping[str, float]) -> list[dict[str, Any]]:
    """One ``results.csv`` row per metric of one dataset and seed."""
    return [
        {"dataset": dataset, "seed": seed, "metric": metric, "value": value, "fit_seconds": fit_seconds}
        for metric, value in values.items()
    ]


def kang_check(seed: int, cfg: Mapping[str, Any], quick: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from scsparse.data import kang_pbmc

    adata = kang_pbmc()
    if quick:
        rng = np.random.default_rng(seed)
        adata = adata[np.sort(rng.choice(adata.n_obs, size=600, replace=False))].copy()
        adata = adata[:, np.asarray(adata.layers["counts"].sum(0)).ravel() > 0].copy()
    model, secs = _fit_real(adata, "condition", cfg, seed)
    from scsparse.results import read_results

    table = interferon_enrichment(adata, model, n_top=cfg["n_top_genes"])
    stim = [f for f in model.active_factors() if f.startswith("stimulated_")]
    programmes = read_results(adata, "ms")
    genes = {f: programmes.programme_genes(f) for f in stim}
    enrich = {f: table[table["factor"] == f] for f in stim}
    ifn = table[table["term"].isin(INTERFERON_TERMS)] if len(table) else table
    ifn_by_factor = {str(f): float(p) for f, p in ifn.groupby("factor")["p_adj"].min().items()} if len(ifn) else {}
    stim_ifn = {f: p for f, p in ifn_by_factor.items() if f in stim}
    best_factor = min(stim_ifn, key=stim_ifn.get) if stim_ifn else None
    best = stim_ifn[best_factor] if best_factor is not None else math.nan
    z_shared = model.get_latent_representation(kind="shared")
    cond = adata.obs["condition"].astype(str).to_numpy()
    cell_type = adata.obs["cell_type"].astype(str).to_numpy()
    train, test = cond == "control", cond == "stimulated"
    pred = transfer_predictions(z_shared, cell_type, train, test)
    pred_pca, pred_genes = _reference_predictions(adata, cell_type, train, test)
    pred_scvi = transfer_predictions(scvi_reference(adata, "condition", cfg, seed), cell_type, train, test)
    acc, acc_pca, acc_genes, acc_scvi = (
        float(np.mean(p == cell_type[test])) for p in (pred, pred_pca, pred_genes, pred_scvi)
    )
    table = model.factor_table()
    rows = _metric_rows(
        "kang",
        seed,
        secs,
        {
            "ifn_padj": best,
            "celltype_acc_control_to_stimulated": acc,
            "celltype_acc_pca_reference": acc_pca,
            "celltype_acc_genes_reference": acc_genes,
            "celltype_acc_scvi_reference": acc_scvi,
            "n_active_shared": float(((table["kind"] == "shared") & table["active"]).sum()),
            "n_active_specific_stimulated": float(len(stim)),
            "n_active_specific_control": float(((table["study"] == "control") & table["active"]).sum()),
        },
    )
    detail = {
        "factor_table": table,
        "genes": genes,
        "enrichment": enrich,
        "best_factor": best_factor,
        "ifn_by_factor": ifn_by_factor,
        "confusion": {
            "shared factors": confusion_table(cell_type[test], pred),
            "log-normalised genes": confusion_table(cell_type[test], pred_genes),
            "scVI (condition as batch)": confusion_table(cell_type[test], pred_scvi),
        },
        "n_genes": adata.n_vars,
        "n_cells": adata.n_obs,
    }
    return rows, detail


def _cellbench_adata(n_genes: int) -> AnnData:
    """CellBench's three cell lines on CEL-seq2 and Drop-seq, ``n_genes`` HVGs (technology as batch)."""
    from scsparse.data import cellbench

    return variable_genes(cellbench("3cl"), n_genes, "technology")


def cellbench_check(seed: int, cfg: Mapping[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    adata = _cellbench_adata(int(cfg["n_genes"]))
    model, secs = _fit_real(adata, "technology", cfg, seed)
    z_shared = model.get_latent_representation(kind="shared")
    tech = adata.obs["technology"].astype(str).to_numpy()
    line = adata.obs["cell_line"].astype(str).to_numpy()
    train, test = tech == "CEL-seq2", tech == "Drop-seq"
    acc = transfer_accuracy(z_shared, line, train, test)
    references = _reference_predictions(adata, line, train, test)
    acc_pca, acc_genes = (float(np.mean(p == line[test])) for p in references)
    acc_scvi = transfer_accuracy(scvi_reference(adata, "technology", cfg, seed), line, train, test)
    table = model.factor_table()
    rows = _metric_rows(
        "cellbench",
        seed,
        secs,
        {
            "cellline_acc_celseq2_to_dropseq": acc,
            "cellline_acc_pca_reference": acc_pca,
            "cellline_acc_genes_reference": acc_genes,
            "cellline_acc_scvi_reference": acc_scvi,
            "n_active_shared": float(((table["kind"] == "shared") & table["active"]).sum()),
            "n_active_specific": float(((table["kind"] == "specific") & table["active"]).sum()),
        },
    )
    return rows, {"factor_table": table, "n_genes": adata.n_vars, "n_cells": adata.n_obs}


def _cellbench_plates_adata(n_genes: int) -> AnnData:
    """CellBench's five cell lines on three CEL-seq2 plates, demuxlet doublets removed, ``n_genes`` HVGs."""
    from scsparse.data import cellbench

    adata = cellbench("5cl")
    return variable_genes(adata[adata.obs["demuxlet_cls"].astype(str) != "DBL"], n_genes, "batch")


def cellbench_query_check(seed: int, cfg: Mapping[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Reference on two plates, the third added with ``load_query_data``, beside a joint fit of all three."""
    from scsparse.model import MultiStudySparseVAE

    adata = _cellbench_plates_adata(int(cfg["n_genes"]))
    plate = adata.obs["batch"].astype(str).to_numpy()
    line = adata.obs["cell_line"].astype(str).to_numpy()
    is_query = plate == cfg["query_study"]
    ref, query = adata[~is_query].copy(), adata[is_query].copy()
    reference, secs = _fit_real(ref, "batch", cfg, seed)
    t0 = time.perf_counter()
    mapped = MultiStudySparseVAE.load_query_data(
        query, reference, n_latent_specific=cfg["n_latent_specific"], seed=seed
    )
    train_fixed_epochs(mapped, cfg)
    secs += time.perf_counter() - t0
    z = np.zeros((adata.n_obs, cfg["n_latent_shared"]))
    z[~is_query] = reference.get_latent_representation(ref, kind="shared")
    z[is_query] = mapped.get_latent_representation(query, kind="shared")
    joint, _ = _fit_real(adata.copy(), "batch", cfg, seed)
    z_joint = joint.get_latent_representation(kind="shared")
    table = mapped.factor_table()
    new_block = table["study"] == cfg["query_study"]
    rows = _metric_rows(
        "cellbench_query",
        seed,
        secs,
        {
            "cellline_acc_query_mapped": transfer_accuracy(z, line, ~is_query, is_query),
            "cellline_acc_joint_fit": transfer_accuracy(z_joint, line, ~is_query, is_query),
            "n_active_query_specific": float((new_block & table["active"]).sum()),
            "n_active_reference_shared": float(((table["kind"] == "shared") & table["active"]).sum()),
        },
    )
    return rows, {
        "factor_table": table,
        "n_genes": adata.n_vars,
        "n_cells": adata.n_obs,
        "n_query": int(is_query.sum()),
    }


def marker_labels(adata: AnnData, markers: Mapping[str, Sequence[str]] = PBMC_MARKERS) -> np.ndarray:
    """Each cell's marker set with the highest score: mean log-normalised expression, z-scored over the cells.

    A crude label for data without annotation (``layers["counts"]``; marker genes absent from ``adata`` are
    skipped, sets with none present are left out).

    Examples
    --------
    >>> import anndata as ad, scipy.sparse as sp
    >>> a = ad.AnnData(sp.csr_matrix(np.array([[9.0, 0, 1], [0, 9.0, 1], [8.0, 1, 1]])))
    >>> a.var_names = ["CD3E", "MS4A1", "ACTB"]
    >>> a.layers["counts"] = a.X.copy()
    >>> marker_labels(a, {"T": ["CD3E"], "B": ["MS4A1"]}).tolist()
    ['T', 'B', 'T']
    """
    x = lognormalised_genes(adata)
    genes = list(map(str, adata.var_names))
    names, scores = [], []
    for name, set_genes in markers.items():
        cols = [genes.index(g) for g in set_genes if g in genes]
        if cols:
            names.append(name)
            scores.append(x[:, cols].mean(1))
    if not names:
        raise ValueError("None of the marker genes is in adata.var_names.")
    z = np.column_stack(scores)
    z = (z - z.mean(0)) / np.where(z.std(0) > 0, z.std(0), 1.0)
    return np.asarray(names, dtype=object)[z.argmax(1)]


def _pbmc_3batch_adata(n_genes: int, n_cells: int | None) -> tuple[AnnData, np.ndarray]:
    """The three chemistries (``n_cells`` at random, all by default), ``n_genes`` HVGs, and marker labels."""
    from scsparse.data import pbmc_3batch

    adata = pbmc_3batch()
    if n_cells is not None and n_cells < adata.n_obs:
        keep = np.sort(np.random.default_rng(0).choice(adata.n_obs, int(n_cells), replace=False))
        adata = adata[keep].copy()
    labels = marker_labels(adata)  # on all genes: markers need not be among the variable ones
    return variable_genes(adata, n_genes, "batch"), labels


def pbmc_3batch_check(seed: int, cfg: Mapping[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The chemistries as studies, without and with the study as the batch covariate, beside PCA."""
    from scsparse.tl import factor_diagnostics

    adata, labels = _pbmc_3batch_adata(int(cfg["n_genes"]), cfg["n_cells"])
    batch = adata.obs["batch"].astype(str).to_numpy()
    k = int(cfg["n_neighbors"])
    pca = pca_reference(lognormalised_genes(adata))
    values: dict[str, float] = {
        "random_same_batch_share": random_agreement(batch),
        "pca_same_batch_share": neighbour_agreement(pca, batch, k),
        "pca_marker_agreement": neighbour_agreement(pca, labels, k),
    }
    tables, seconds = {}, 0.0
    for variant, batch_key in (("study", None), ("study_and_batch", "batch")):
        model, secs = _fit_real(adata.copy(), "batch", cfg, seed, batch_key=batch_key)
        seconds += secs
        written = adata.copy()  # factors, factor table and diagnostics all read from one write_results
        model.write_results(written, key_added="ms")
        table = written.uns["ms"]["factor_table"]
        shared = table["kind"] == "shared"
        active_shared = table.loc[shared & table["active"], "factor"].tolist()
        z = np.asarray(written.obsm["X_ms_shared"])
        rep = z[:, [model.factor_names.index(f) for f in active_shared]] if active_shared else z
        diag = factor_diagnostics(written, key="ms") if table["active"].any() else None
        shifted = 0 if diag is None else int(diag["shifted"].sum())  # only specific factors can be shifted
        values.update(
            {
                f"{variant}_same_batch_share": neighbour_agreement(rep, batch, k),
                f"{variant}_marker_agreement": neighbour_agreement(rep, labels, k),
                f"{variant}_n_active_shared": float(len(active_shared)),
                f"{variant}_n_active_specific": float((~shared & table["active"]).sum()),
                f"{variant}_n_shifted_specific": float(shifted),
            }
        )
        if diag is not None:
            table = table.merge(diag[["factor", "study_shift"]], on="factor", how="left")
        tables[variant] = table
    rows = _metric_rows("pbmc_3batch", seed, seconds, values)
    return rows, {"factor_tables": tables, "n_genes": adata.n_vars, "n_cells": adata.n_obs}
