"""The ``summary.md`` of the multistudy_real benchmark: its lines (:func:`summary_lines`), which ``_run`` writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from scsparse.utils import markdown_rows

from .. import _report as report
from .._fits import bias_words
from .._tables import format_mean_sd
from ._checks import (
    PBMC_MARKERS,
    largest_confusion,
)

__all__ = ["confusion_section", "summary_lines"]


def _df_markdown(table: pd.DataFrame) -> str:
    """A factor table as markdown (top genes shortened to five)."""
    cols = list(table.columns)
    rows = []
    for _, row in table.iterrows():
        cells = []
        for c in cols:
            v = row[c]
            if c == "top_genes":
                v = ", ".join(str(v).split(", ")[:5])
            elif isinstance(v, float):
                v = f"{v:.3g}"
            cells.append(v)
        rows.append(cells)
    return "\n".join(markdown_rows(cols, rows))


def confusion_section(confusion: Mapping[str, pd.DataFrame]) -> list[str]:
    """Summary lines: where the Kang cell-type transfer fails (seed 0), one confusion table per representation."""
    lines = [
        "",
        "## Kang: where the cell-type transfer fails (seed 0)",
        "",
        "Stimulated cells by their label (rows) and the label predicted by the classifier trained on control "
        "cells (columns). The labels are the study's own; a representation that removes the stimulation can "
        "only be as right as the labels are stable across conditions.",
    ]
    for name, table in confusion.items():
        true, predicted, n, n_true = largest_confusion(table)
        counts = table.to_numpy()
        total = max(int(counts.sum()), 1)
        acc = float(np.trace(counts)) / total
        merged = (float(np.trace(counts)) + n + int(table.loc[predicted, true])) / total
        lines += [
            "",
            f"{name} (accuracy {acc:.3f}); the largest error: {n} of the {n_true} stimulated cells labelled "
            f"{true} are predicted {predicted} (accuracy with those two labels counted as one: {merged:.3f}):",
            "",
            _df_markdown(table.reset_index()),
        ]
    return lines


def _model_words(c: Mapping[str, Any]) -> str:
    """The multi-study model of a dataset's fit, as the summary writes its call."""
    return (
        f"`MultiStudySparseVAE(n_latent_shared={c['n_latent_shared']}, "
        f"n_latent_specific={c['n_latent_specific']}, encode_study={c['encode_study']})`"
    )


def _network_words(c: Mapping[str, Any]) -> str:
    """The likelihood and the decoder of a dataset's fit: ``"NB, 32 hidden units, ..."``."""
    return f"NB, {c['n_hidden']} hidden units{bias_words(c)}"


def _training_words(c: Mapping[str, Any]) -> str:
    """The optimiser's settings of a dataset's fit: ``"lr 0.01, batch 128, 100 epochs"``."""
    return f"lr {c['lr']:g}, batch {c['batch_size']}, {c['max_epochs']} epochs"


def _what_ran(
    details: Mapping[str, list[dict[str, Any]]], cfgs: Mapping[str, Mapping[str, Any]], quick: bool
) -> list[str]:
    """One item per dataset that ran: its data, its model and what each of its metrics measures."""
    lines = []
    if "kang" in details:
        c, d0 = cfgs["kang"], details["kang"][0]
        lines.append(
            f"- Kang PBMC (`scsparse.data.kang_pbmc()`, {d0['n_cells']} cells x {d0['n_genes']} genes"
            f"{', a random subset of cells (quick mode)' if quick else ''}), study = `condition` (control, "
            f"stimulated): {_model_words(c)}: control is the reference condition"
            f"{'' if (d0['factor_table']['study'] == 'control').any() else ' and gets no specific factor'}, "
            f"{_network_words(c)}, {_training_words(c)}, initial |W| = {c['w_init']:g}. "
            "(i) For every active stimulated-specific factor: the genes with p* > 0.5, at most the "
            f"{c['n_top_genes']} largest |W| per direction (up and down with the factor), tested for "
            "over-representation of the MSigDB Hallmark v2025 sets (`scsparse.tl.enrich`, hypergeometric, "
            "background = all model genes, Benjamini-Hochberg within factor and direction); `ifn_padj` = the "
            "smallest adjusted p of HALLMARK_INTERFERON_ALPHA_RESPONSE / GAMMA_RESPONSE over those factors (nan: no "
            "active stimulated-specific factor or no IFN hit). "
            "(ii) `celltype_acc_control_to_stimulated`: multinomial logistic regression on the standardised "
            "shared factors (all shared columns), trained on control cells, accuracy on stimulated cells; "
            "`celltype_acc_pca_reference`: the same protocol on 20 principal components of the log-normalised "
            "counts of the same genes, and `celltype_acc_genes_reference` on the log-normalised counts of all "
            "those genes themselves (references without any model; they do not depend on the seed; the second "
            "shows what the same linear classifier makes of the data itself); `celltype_acc_scvi_reference` on "
            "the latent space of `scvi.model.SCVI` with the condition as its batch covariate (the standard "
            "integration model; same latent size, widths, epochs, learning rate and batch size, same seed)."
        )
    if "cellbench" in details:
        c, d0 = cfgs["cellbench"], details["cellbench"][0]
        lines.append(
            f"- CellBench 3 cell lines (`scsparse.data.cellbench('3cl')`, {d0['n_cells']} cells; the "
            f"{d0['n_genes']} most variable genes, scanpy seurat_v3 with technology as batch, among genes seen "
            f"in >= 3 cells), study = `technology` (CEL-seq2, Drop-seq): {_model_words(c)}, {_network_words(c)}, "
            f"{_training_words(c)}. `cellline_acc_celseq2_to_dropseq`: logistic "
            "regression on the shared factors trained on CEL-seq2 cells, accuracy on Drop-seq cells; "
            "`cellline_acc_pca_reference` and `cellline_acc_genes_reference`: the same on 20 principal "
            "components of the log-normalised counts and on the log-normalised counts themselves; "
            "`cellline_acc_scvi_reference` on `scvi.model.SCVI` with the technology as its batch covariate "
            "(same sizes and training)."
        )
    if "cellbench_query" in details:
        c, d0 = cfgs["cellbench_query"], details["cellbench_query"][0]
        lines.append(
            f"- CellBench query mapping (`scsparse.data.cellbench('5cl')`, demuxlet doublets removed, "
            f"{d0['n_cells']} cells on three CEL-seq2 plates; the {d0['n_genes']} most variable genes, seurat_v3 "
            "with the plate as batch), study = plate: a reference `MultiStudySparseVAE` (settings as CellBench "
            f"above, {c['max_epochs']} epochs) on plates other than {c['query_study']}, then "
            f"`MultiStudySparseVAE.load_query_data` with the {d0['n_query']} cells of plate {c['query_study']} "
            f"({c['n_latent_specific']} new specific factors; only the new parts train, same epochs). "
            "`cellline_acc_query_mapped`: logistic regression on the shared factors of the reference cells "
            f"(from the reference), accuracy on the {c['query_study']} cells' shared factors (from the query "
            "model); `cellline_acc_joint_fit`: the same split on one model fitted on all three plates; "
            "`n_active_query_specific`: active factors in the new block (the plates hold the same five lines, "
            "so nothing is specific to one: ideally 0)."
        )
    if "pbmc_3batch" in details:
        c, d0 = cfgs["pbmc_3batch"], details["pbmc_3batch"][0]
        lines.append(
            f"- PBMC chemistries (`scsparse.data.pbmc_3batch()`, {d0['n_cells']} cells: 10x 3' v2, 3' v3 and 5', "
            f"no annotation; the {d0['n_genes']} most variable genes, seurat_v3 per chemistry), study = chemistry, "
            f"fitted as `scsparse fit --study-key batch` does: `MultiStudySparseVAE(n_latent_shared="
            f"{c['n_latent_shared']}, n_latent_specific={c['n_latent_specific']})`, {_network_words(c)}, "
            f"initial |W| = {c['w_init']:g}, {_training_words(c)}; `study_*`: the study only, `study_and_batch_*`: "
            f"the study column also as `batch_key`. `*_same_batch_share`: mean fraction of each cell's "
            f"{c['n_neighbors']} nearest neighbours "
            "(Euclidean, in the active shared factors) from its own chemistry (`random_same_batch_share`: perfectly "
            "mixed; `pca_*`: 20 principal components of the log-normalised counts, no correction); "
            "`*_marker_agreement`: the same for a marker label (each cell's highest z-scored marker set: "
            f"{', '.join(PBMC_MARKERS)}); `*_n_shifted_specific`: active specific factors flagged as a study-wide "
            "shift by `scsparse.tl.factor_diagnostics` (mean over sd within the study > 2). Descriptive, no target."
        )
    return lines


def _results_lines(df: pd.DataFrame, quick: bool) -> list[str]:
    """The results section: one row per dataset and metric, its value over seeds, target and verdict."""
    lines = ["", "## Results (mean ± sd over seeds)", ""]
    if quick:
        lines += ["Quick mode: few epochs on reduced inputs; the numbers only show that everything runs.", ""]
    rows = []
    for (dataset, metric), g in df.groupby(["dataset", "metric"], sort=False):
        vals = g["value"].to_numpy(dtype=np.float64)
        if metric == "ifn_padj":
            finite = vals[np.isfinite(vals)]
            text = ", ".join(f"{v:.2e}" for v in vals) if len(vals) else "n/a"
            text = f"per seed: {text}" + (f" (median {np.median(finite):.2e})" if finite.size > 1 else "")
        else:
            text = format_mean_sd(vals, 3)
        target = g["target"].iloc[0]
        n_met = sum(m is True for m in g["met"].tolist())
        verdict = ""
        if target and quick:
            verdict = report.NOT_ASSESSED_QUICK
        elif target:
            verdict = report.count_verdict(n_met, len(g))
            if len(g) > 1:
                verdict += f" ({n_met}/{len(g)} seeds)"
        rows.append([dataset, metric, text, target, verdict])
    return [*lines, *markdown_rows(["dataset", "metric", "value", "target", "met"], rows)]


def _kang_lines(kang: list[dict[str, Any]]) -> list[str]:
    """Kang, per seed: the stimulated-specific factors' Hallmark hits, where the interferon response went, and
    (seed 0) where the cell-type transfer fails.
    """
    lines = ["", "## Kang: stimulated-specific factors and where the interferon genes went, per seed", ""]
    for s_i, det in enumerate(kang):
        if not det["genes"]:
            lines.append(f"- seed {s_i}: no stimulated-specific factor is active.")
        for f, genes in det["genes"].items():
            res = det["enrichment"][f]
            top = "; ".join(
                f"{r['term']} ({'up' if r['direction'] == 'positive' else 'down'}, {r['overlap']} genes, adj. p "
                f"{r['p_adj']:.1e})"
                for _, r in res[res["overlap"] > 0].head(3).iterrows()
            )
            top = top or "no Hallmark hit"
            shown = ", ".join(genes[:12]) + (" ..." if len(genes) > 12 else "")
            lines.append(f"- seed {s_i}, `{f}` ({len(genes)} genes: {shown}): {top}")
        ifn_any = det.get("ifn_by_factor", {})
        if ifn_any:
            ranked = sorted(ifn_any.items(), key=lambda kv: kv[1])[:3]
            text = ", ".join(f"`{f}` {p:.1e}" for f, p in ranked)
            lines.append(f"  - seed {s_i}, best IFN adj. p over all active factors (any block): {text}")
    where = [min(d["ifn_by_factor"], key=d["ifn_by_factor"].get) for d in kang if d["ifn_by_factor"]]
    n_ctrl = sum(f.startswith("control_") for f in where)
    return [
        *lines,
        "",
        f"In {n_ctrl} of {len(kang)} seeds the factor most enriched for the interferon response (any "
        "block) is a control-specific factor. The decoder has no study intercept and the specific factors of "
        "the other study are exactly zero, so a shift present in every cell of one condition can be encoded "
        "as a near-constant specific factor of either condition: '+ISGs in stimulated cells' or '-ISGs in "
        "control cells' (a control factor with negative weights on the ISGs and a posterior mean far from 0 "
        "in all control cells). `ifn_padj` only looks at the stimulated block, as the target asks.",
        *confusion_section(kang[0]["confusion"]),
    ]


def _factor_table_lines(caption: str, table: pd.DataFrame) -> list[str]:
    """A factor table of seed 0 under its caption."""
    return ["", caption, "", _df_markdown(table)]


def summary_lines(
    df: pd.DataFrame,
    prov: dict[str, Any],
    details: dict[str, list[dict[str, Any]]],
    cfgs: Mapping[str, Mapping[str, Any]],
    quick: bool,
) -> list[str]:
    """The lines of ``summary.md``: what ran on each dataset, the metrics with their targets, Kang's factors and
    failures, and the factor tables of seed 0.
    """
    lines = [
        *report.summary_head(
            "# Multi-study sparse VAE on real data: Kang et al. (2018), CellBench (with query mapping), PBMC "
            "chemistries",
            prov,
        ),
        "## What ran",
        "",
        *_what_ran(details, cfgs, quick),
        *_results_lines(df, quick),
    ]
    if "kang" in details:
        lines += _kang_lines(details["kang"])
        lines += _factor_table_lines("Factor table (seed 0):", details["kang"][0]["factor_table"])
    if "cellbench_query" in details:
        lines += _factor_table_lines(
            "CellBench query mapping, the query model's factor table (seed 0):",
            details["cellbench_query"][0]["factor_table"],
        )
    if "cellbench" in details:
        lines += _factor_table_lines("CellBench factor table (seed 0):", details["cellbench"][0]["factor_table"])
    if "pbmc_3batch" in details:
        for variant, table in details["pbmc_3batch"][0]["factor_tables"].items():
            caption = f"PBMC chemistries, `{variant}` factor table (seed 0, with each factor's study shift):"
            lines += _factor_table_lines(caption, table)
    return [*lines, ""]
