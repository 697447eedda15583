"""The ``summary.md`` of the semisynthetic benchmark: its lines (:func:`summary_lines`), which ``_run`` writes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from scsparse.generic.datasets import TextCorpus
from scsparse.utils import markdown_rows

from .. import _report as report
from .._documents_summary import (
    QUICK_READING,
    all_runs_lines,
    beaten_by,
    lambda_lines,
    must_show_verdict,
    network_words,
    nll_lines,
    paper_comparison_table,
    reduced_line,
    run_labels,
    summary_opening,
    unigram_lines,
    verdict_best,
)
from .._paper import no_active_factor_note
from ._settings import PAPER_SEMISYNTHETIC_LAMBDA1, PAPER_SEMISYNTHETIC_NLL, SEMISYNTHETIC_SETTINGS

__all__ = ["summary_lines"]


def summary_lines(
    df: pd.DataFrame,
    prov: dict[str, Any],
    cfg: Mapping[str, Any],
    corpus: TextCorpus,
    levels: Mapping[str, float],
    *,
    quick: bool,
    seeds: int,
    total_seconds: float,
) -> list[str]:
    """The lines of ``summary.md``: what ran, Table 2 beside the paper's, the verdict per shift level, a reading."""
    names = list(levels)
    _, verdict, detail = must_show_verdict(df, quick, "shift")
    per_level = []
    for lv in names:
        sub = df[df["shift"] == lv]
        met, d = verdict_best(sub)
        why = "" if quick or met else f"; {beaten_by(sub)}"
        per_level.append(f"  - {lv}: {report.target_verdict(met, assessed=not quick)} ({d}{why})")
    corr = df.groupby("shift", sort=False)[["train_pair_corr", "test_pair_corr"]].mean()
    lengths = corpus.counts.sum(1)
    return [
        *summary_opening(
            "# Semi-synthetic text benchmark: shifted topic correlations (Moran et al. 2022, Table 2)",
            prov,
            quick=quick,
            total_seconds=total_seconds,
        ),
        f"- Base corpus: **NeurIPS 2023-2025 abstracts** (registry `text_neurips`, the PeerRead stand-in): "
        f"{corpus.n_docs} documents x {corpus.n_words} words (vocabulary as in the `text` benchmark); "
        f"document lengths (vocabulary tokens) median {np.median(lengths):.0f}, mean {lengths.mean():.1f}. The paper "
        "built its data on ~11,000 PeerRead abstracts; the absolute NLLs depend on the document lengths, which "
        "the paper does not state (its values of ~50 nats suggest shorter documents than ours), so only the "
        "ordering of the methods is comparable.",
        f"- Construction (App. C.1): LDA with K = {cfg['n_topics']} (scikit-learn defaults, random_state 0) on the "
        f"corpus gives theta and beta; training factors = first {cfg['n_topics'] // 2} columns of theta plus "
        "logit-noised copies of them, logit theta~_k = logit theta_k + N(0, sigma^2), rows renormalised; test "
        "factors = theta; documents x_d ~ Mult(n_d, theta_d beta) with n_d the real document's length. Seed s "
        "draws the 80/20 document split, the noise and the counts; the held-out documents are the same at every "
        "shift level of a seed.",
        "- Shift levels (sigma not given in the paper; ours) and the resulting mean correlation of paired topics "
        "k and k + K/2 in the training factors vs the test factors:",
        "",
        *markdown_rows(
            ["shift", "sigma", "train pair correlation", "test pair correlation"],
            (
                [
                    lv,
                    f"{levels[lv]:g}",
                    f"{corr.loc[lv, 'train_pair_corr']:.3f}",
                    f"{corr.loc[lv, 'test_pair_corr']:.3f}",
                ]
                for lv in names
                if lv in corr.index
            ),
        ),  # fmt: skip
        "",
        f"- Settings (Table 6, semi-synthetic PeerRead): {network_words(cfg)}; beta-VAE beta in "
        f"{list(cfg['betas'])} (best by mean NLL shown in the paper table); OI-VAE each word its own group, p = "
        f"{cfg['oivae_p']}, lambda = {cfg['oivae_lambda']:g}; VSC alpha = {cfg['vsc_alpha']:g}; NMF unregularised "
        "(KL divergence).",
        *lambda_lines(cfg, PAPER_SEMISYNTHETIC_LAMBDA1),
        f"- Methods in this run: {', '.join(dict.fromkeys(df['method']))}.",
        reduced_line(cfg, SEMISYNTHETIC_SETTINGS, f"; seeds 0..{seeds - 1} (the paper: five semi-simulated data sets)"),
        *nll_lines(cfg),
        "## Table 2: held-out NLL per document (mean ± sd over seeds)",
        "",
        paper_comparison_table(df, PAPER_SEMISYNTHETIC_NLL, "shift", names, names),
        "",
        *all_runs_lines(
            df,
            ["shift", "method"],
            ["heldout_nll", "n_active", "fit_seconds"],
            {"heldout_nll": 2, "n_active": 1, "fit_seconds": 1},
        ),
        "## Must show",
        "",
        f"- SparseVAE best at all three shift levels: **{verdict}** ({detail}).",
        *per_level,
        *no_active_factor_note(df.loc[df["method"] == "SparseVAE", "n_active"]),
        "",
        *_reading(df, names, quick),
        "",
        "Per-seed values are in `results.csv`; `semisynthetic.png` plots the NLL against the shift level.",
        "",
    ]


def _reading(df: pd.DataFrame, levels: Sequence[str], quick: bool) -> list[str]:
    """Per shift level, the ordering of the methods and the unigram reference; the SparseVAE's gap to the VAE."""
    if quick:
        return [QUICK_READING]
    lines = ["## Reading the result", ""]
    for lv in levels:
        sub = df[df["shift"] == lv]
        means = sub["heldout_nll"].groupby(run_labels(sub), sort=False).mean().sort_values()
        lines.append(f"- {lv}: " + " < ".join(f"{m} ({v:.1f})" for m, v in means.items()))
        lines += [f"  {line}" for line in unigram_lines(sub)]
    if {"SparseVAE", "VAE"} <= set(df["method"]):
        gaps = []
        for lv in levels:
            nll = df[df["shift"] == lv].groupby("method")["heldout_nll"].mean()
            gaps.append(f"{lv} {nll['SparseVAE'] - nll['VAE']:+.2f}")
        lines.append(f"- SparseVAE minus VAE: {', '.join(gaps)} (paper: -2.2, -3.1, -2.2).")
    return lines
