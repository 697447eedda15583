"""The summary of ``scsparse bench speed`` (``summary.md``): its figures in words, and its targets."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from .. import _report as report
from ._consensus import consensus_summary, consensus_targets
from ._settled import settled_targets
from ._time_to_fit import time_to_fit_summary, time_to_fit_targets
from ._timing import SCVI_DEFAULT_LATENT

__all__ = ["summary_lines"]


def _value(df: pd.DataFrame, section: str, method: str, metric: str) -> float:
    sel = df[(df["section"] == section) & (df["method"] == method) & (df["metric"] == metric)]["value"]
    return float(sel.mean()) if len(sel) else math.nan


def summary_lines(df: pd.DataFrame, prov: dict[str, Any], sections: Sequence[str]) -> list[str]:
    """The lines of ``summary.md``: the figures of every section that ran (``sections`` when the run's options do
    not say), and the targets met or missed.
    """
    opts = prov["options"]
    ratio_loop = _value(df, "epoch", "per-gene loop / SparseVAE", "ratio")
    ratio_scvi = _value(df, "epoch", "SparseVAE / SCVI", "ratio")
    ratio_k10 = _value(df, "epoch", f"SparseVAE / SCVI, K = {SCVI_DEFAULT_LATENT}", "ratio")
    lowest = _value(df, "epoch", "SparseVAE / SCVI", "ratio_lowest")
    highest = _value(df, "epoch", "SparseVAE / SCVI", "ratio_highest")
    spread = f" (rounds {lowest:.2f}-{highest:.2f}x)" if opts.get("rounds", 1) > 1 else ""
    frac_peak = _value(df, "flops", "decoder / peak matmul", "fraction")
    frac_same = _value(df, "flops", "decoder / same-shape matmul", "fraction")
    diff = _value(df, "step", "vectorised vs loop", "abs_loss_difference")
    lines = [
        *report.summary_head("# Speed: scsparse SparseVAE vs the per-gene loop vs SCVI", prov, section=False),
        f"Simulated negative-binomial counts, {opts['n_cells']} cells x {opts['n_genes']} genes; batch size "
        f"{opts['batch_size']}, {opts['n_hidden']} hidden units, {opts['n_latent']} latent factors, one hidden "
        f"layer, for every method. Epoch times are medians over epochs 2..{opts['epochs']} (the first epoch is "
        "warm-up); the per-gene loop trains one epoch. SparseVAE and SCVI train in turn, a fresh model each, "
        f"{opts.get('rounds', 1)} round(s): an epoch time is the median of the rounds', a SparseVAE / SCVI ratio "
        "the median of the rounds' ratios (`ratio_lowest` and `ratio_highest` give their range). Times are "
        "wall-clock: on a shared machine compare the ratios, taken side by side in this process.",
        "",
        "## Measurements (mean over seeds)",
        "",
        "| section | method | metric | value | unit |",
        "|---|---|---|---|---|",
    ]
    measured = df[~df["section"].isin(["time_to_fit", "consensus"])]  # their own tables, per data set, below
    for (section, method, metric, unit), grp in measured.groupby(["section", "method", "metric", "unit"], sort=False):
        extra = ""
        if section in ("memory_genes", "cells_backed"):
            extra = f" (G={int(grp['n_genes'].iloc[0])}, N={int(grp['n_cells'].iloc[0])})"
            for _, r in grp.iterrows():
                lines.append(
                    f"| {section} | {method} (G={int(r['n_genes'])}, N={int(r['n_cells'])}) | {metric} | "
                    f"{r['value']:.4g} | {unit} |"
                )
            continue
        lines.append(f"| {section} | {method}{extra} | {metric} | {grp['value'].mean():.4g} | {unit} |")
    ran = set(opts.get("sections", sections))
    lines += ["", "## Targets", ""]
    if "epoch" in ran:
        lines += [
            _target(ratio_loop >= 20, f"SparseVAE >= 20x faster per epoch than the per-gene loop: {ratio_loop:.1f}x"),
            _target(
                diff < 1e-3, f"identical losses on the same weights and batch: |difference| = {diff:.2e} nats/cell"
            ),
            _target(
                ratio_scvi <= 3,
                f"SparseVAE epoch time <= 3x SCVI's: {ratio_scvi:.2f}x at K = {opts['n_latent']}{spread}"
                + (
                    f", {ratio_k10:.1f}x at K = {SCVI_DEFAULT_LATENT} (SCVI's default)"
                    if ratio_k10 == ratio_k10
                    else ""
                ),
            ),
        ]
    if "flops" in ran:
        lines.append(
            _target(
                frac_peak >= 0.25,
                f"decoder training step >= 25% of the same-run matmul peak: {frac_peak:.0%} of a square matmul "
                f"({frac_same:.0%} of a matmul of the decoder's own first-layer shape)",
            )
        )
    mem = df[(df["section"] == "memory_genes") & (df["metric"] == "peak_memory_mb")]
    if len(mem):
        big = mem[mem["n_genes"] == mem["n_genes"].max()]["value"].max()
        lines.append(
            _target(
                big <= 6 * 1024,
                f"G = {int(mem['n_genes'].max())} genes at batch {opts['batch_size']}: "
                f"peak memory {big / 1024:.2f} GB (target <= 6 GB)",
            )
        )
    cells = df[(df["section"] == "cells_backed") & (df["metric"] == "peak_memory_mb")]
    if len(cells) > 1:
        lo = cells.loc[cells["n_cells"].idxmin(), "value"]
        hi = cells.loc[cells["n_cells"].idxmax(), "value"]
        lines.append(
            _target(
                hi <= 1.2 * lo,
                f"backed .X: peak memory at {int(cells['n_cells'].max())} cells is "
                f"{hi / lo:.2f}x that at {int(cells['n_cells'].min())} cells (target <= 1.2x)",
            )
        )
        floor = df[(df["section"] == "cells_backed") & (df["metric"] == "rss_after_import_mb")]["value"]
        if len(floor):
            lines.append(
                f"  (peak RSS of a fresh process; {floor.max():.0f} MB of it is reached while importing torch and "
                "scvi-tools, so memory below that floor is not resolved)"
            )
    lines += [_target(ok, text) for ok, text in settled_targets(df)]
    lines += [_target(ok, text) for ok, text in time_to_fit_targets(df)]
    lines += [_target(ok, text) for ok, text in consensus_targets(df)]
    if {"flops", "sparsity"} <= ran:
        lines += _where_the_time_goes(df, opts)
    if "settled" in ran:
        cells, rounds = min(opts["sparsity_cells"], opts["n_cells"]), opts.get("rounds", 1)
        lines += [
            "",
            "## Once the mask has settled",
            "",
            f"Each model trained on all the cells with exact zeros and the decoder on its active set for as many "
            f"steps as {opts['sparsity_epochs']} epochs of {cells} cells take, then went on in the same fit for "
            f"{rounds} timed block(s) of {opts['epochs']} epochs (its check steps included). Then its settled "
            f"weights with every entry computed and SCVI fresh at the same K trained in turn, {rounds} round(s) "
            "(`scsparse.generic.benchmarks._speed._settled`).",
        ]
    return lines + time_to_fit_summary(df) + consensus_summary(df)


def _where_the_time_goes(df: pd.DataFrame, opts: dict[str, Any]) -> list[str]:
    """The summary's paragraphs on the decoder's cost and the learned sparsity (flops and sparsity sections)."""
    prune_ratio = _value(df, "sparsity", "dense / spike pruned", "ratio")
    change = _value(df, "sparsity", "spike pruned vs dense", "max_abs_output_change")
    slab = _value(df, "sparsity", "scsparse SparseVAE", "active_entries_fraction")
    multi = _value(df, "sparsity", "scsparse SparseVAE", "genes_with_2plus_active")
    biased = _value(df, "sparsity", "scsparse SparseVAE", "decoder_first_bias") == 1.0
    one_factor = (
        "a gene with one is exact in closed form through its factor's sorted kinks (`one_factor_outputs`)"
        if biased
        else "a gene with one is exact in closed form (ReLU is positively homogeneous)"
    )
    return [
        "",
        "## Where the time goes, and the route past it",
        "",
        "The decoder evaluates a hidden layer for every (cell, gene) pair: a `(genes, cells, hidden)` tensor of "
        f"{opts['n_genes']} x {opts['batch_size']} x {opts['n_hidden']} floats per step, against SCVI's "
        f"`(cells, hidden)` one; its first layer costs K = {opts['n_latent']} multiply-adds per entry. "
        f"{_decoder_path(opts['device'])}: "
        f"{_value(df, 'flops', 'scsparse decoder step', 'seconds_per_step') * 1e3:.1f} ms per decoder step "
        f"against {_value(df, 'flops', 'decoder step, autograd', 'seconds_per_step') * 1e3:.1f} ms through "
        "autograd op by op, same weights and batch; largest error of the outputs and gradients against float64 "
        f"{_value(df, 'flops', 'scsparse decoder step', 'max_relative_error_float64'):.1e} against "
        f"{_value(df, 'flops', 'decoder step, autograd', 'max_relative_error_float64'):.1e} (relative to the "
        "largest value)" + _memory_words(df) + ".",
        "",
        "The learned sparsity of W is the route past it. After training on "
        f"{min(opts['sparsity_cells'], opts['n_cells'])} of the cells for {opts['sparsity_epochs']} epochs, "
        f"{slab:.1%} of the entries "
        f"of W are in the slab and {multi:.1%} of the genes have two or more active factors. With the spike "
        "fixed at zero (`MaskedDecoder.prune_`, the `SpikePruning` callback), a gene with no active factor is a "
        f"constant and {one_factor}; the other genes run the network: the decoder step is {prune_ratio:.1f}x "
        "faster than with the dense W "
        "on the same weights and batch. Pruning a trained model drops spike entries that are small but not zero: "
        f"the decoder's outputs moved by up to {change:.3g} (logits). Training with exact zeros "
        "(`train(exact_zeros=True)`) gives the zeros during training and computes only the active entries, "
        "rechecking the others every few steps (the settled section below).",
    ]


def _decoder_path(device: str) -> str:
    """How the default decoder network ran on ``device``, in words."""
    from scsparse.nn import MaskedDecoder

    if MaskedDecoder(2, 2).uses_triton_kernel(device):
        return (
            "On this GPU the decoder runs as two Triton kernels (`TritonMaskedLayer`) that keep each gene's hidden "
            "layer in registers and recompute it in the backward pass"
        )
    return (
        "scsparse processes genes in cache-sized chunks, and with one hidden layer and ReLU on the CPU it runs the "
        "decoder as one autograd function that recomputes each chunk in the backward pass (`FusedMaskedLayer`) "
        "instead of storing the activations"
    )


def _memory_words(df: pd.DataFrame) -> str:
    ours = _value(df, "flops", "scsparse decoder step", "peak_memory_mb")
    if ours != ours:  # measured on GPUs only
        return ""
    theirs = _value(df, "flops", "decoder step, autograd", "peak_memory_mb")
    return f"; GPU memory of a step {ours:.0f} MB against {theirs:.0f} MB"


def _target(ok: bool, text: str) -> str:
    return f"- {'met' if ok else 'NOT met'}: {text}"
