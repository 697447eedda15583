"""The ``summary.md`` of the multistudy benchmark: its lines (:func:`summary_lines`), which ``_run`` writes."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from scsparse.utils import markdown_rows

from .. import _report as report
from .._fits import bias_words
from .._restarts import RESTART_SEED_STEP
from .._tables import markdown_table, results_section
from ._settings import TARGET_FSCORE

__all__ = ["summary_lines"]


def _targets_section(
    df: pd.DataFrame, settings: Mapping[str, Any], quick: bool, *, ours_name: str, baselines: Sequence[str]
) -> list[str]:
    """The issue's targets beside our numbers, with an honest verdict for each (none in quick mode).

    ``ours_name`` is the multi-study model's method name, ``baselines`` the single-study methods it must beat.
    """
    # a smoke run on tiny data says nothing about the targets
    verdict = functools.partial(report.target_verdict, assessed=not quick, unassessed=report.NOT_ASSESSED_QUICK)
    data_settings = settings["simulate"]
    means = df.groupby("method", sort=False)[["shared_fscore", "specific_fscore"]].mean()
    lines = ["## Targets", ""]
    if quick:
        lines += ["Quick mode: tiny data and few epochs; the numbers only show that everything runs.", ""]
    header = ["target", "ours", "verdict"]
    if ours_name not in means.index:
        return [*lines, *markdown_rows(header, [["all", "the multi-study model did not run", "not assessed"]])]
    rows = []
    n_seeds = int((df["method"] == ours_name).sum())
    enough = n_seeds >= 5
    suffix = "" if enough else f" (only {n_seeds} seed{'s' if n_seeds != 1 else ''}: the target asks for 5)"
    for col, label in (("shared_fscore", "shared"), ("specific_fscore", "specific")):
        v = float(means.loc[ours_name, col])
        rows.append(
            [
                f"{label}-support F-score >= {TARGET_FSCORE} averaged over 5 seeds",
                f"{v:.3f}{suffix}",
                verdict(v >= TARGET_FSCORE) if enough else "not assessed",
            ]
        )
    others = [m for m in means.index if m in baselines]  # (d), query mapping, is (a) by other means
    for col, label in (("shared_fscore", "shared"), ("specific_fscore", "specific")):
        target = f"{label} F-score better than both baselines"
        if not others:
            rows.append([target, "no baseline ran", "not assessed"])
            continue
        v = float(means.loc[ours_name, col])
        vs = "; ".join(f"{m}: {float(means.loc[m, col]):.3f}" for m in others)
        better = all(v > float(means.loc[m, col]) for m in others)
        rows.append([target, f"ours {v:.3f} vs {vs}", verdict(better)])
    ours = df[df["method"] == ours_name]
    k_s = int(data_settings["n_shared"])
    k_spec = int(data_settings["n_specific"]) * int(data_settings["n_studies"])
    exact = int(((ours["n_active_shared"] == k_s) & (ours["n_active_specific"] == k_spec)).sum())
    rows.append(
        [
            f"extra factor columns switched off ({k_s} active shared of {settings['n_latent_shared']}, "
            f"{k_spec} active specific of {data_settings['n_studies']} x {settings['n_latent_specific']})",
            f"exactly right in {exact}/{len(ours)} seeds; mean active shared "
            f"{ours['n_active_shared'].mean():.2f}, specific {ours['n_active_specific'].mean():.2f}",
            report.NOT_ASSESSED_QUICK if quick else report.count_verdict(exact, len(ours)),
        ]
    )
    return [*lines, *markdown_rows(header, rows)]


def summary_lines(
    df: pd.DataFrame,
    prov: dict[str, Any],
    *,
    settings: Mapping[str, Any],
    seeds: int,
    quick: bool,
    total_seconds: float,
    ours_name: str,
    baselines: Sequence[str],
) -> list[str]:
    """The lines of ``summary.md``: what ran, the results table (mean ± sd over seeds) and the targets."""
    sim = settings["simulate"]
    n_prog = sim["n_shared"] + sim["n_studies"] * sim["n_specific"]
    n_used = n_prog * (sim["genes_per_programme"] - sim["overlap"]) + sim["overlap"]
    k_total = settings["n_latent_shared"] + sim["n_studies"] * settings["n_latent_specific"]
    table_df = df.assign(n_active_total=df["n_active_shared"] + df["n_active_specific"])
    metrics = [
        "shared_fscore",
        "specific_fscore",
        "factor_corr",
        "n_active_shared",
        "n_active_specific",
        "n_active_total",
        "fit_seconds",
    ]
    table = markdown_table(
        table_df,
        ["method"],
        metrics,
        digits={"fit_seconds": 1, "n_active_shared": 2, "n_active_specific": 2, "n_active_total": 2},
    )
    return [
        *report.summary_head(
            "# Multi-study benchmark: shared and study-specific programmes (simulated counts)",
            prov,
            total_seconds=total_seconds,
            mode=f"{'quick' if quick else 'full'} mode",
        ),
        "## What ran",
        "",
        f"- Data: `simulate_multistudy(seed=s)` with {sim['n_studies']} studies x {sim['n_cells_per_study']} cells, "
        f"{sim['n_genes']} genes, {sim['n_shared']} shared programmes and {sim['n_specific']} specific programmes "
        f"per study ({n_prog} in all), {sim['genes_per_programme']} genes per programme, {sim['overlap']} genes "
        f"shared by neighbouring programmes ({n_used} genes driven by some programme; every programme has >= "
        f"{sim['genes_per_programme'] - 2 * sim['overlap']} anchor genes); log-rate = log library + baseline + "
        "sum over the programmes driving the gene of amplitude x h(z), h = softplus(1.5 z) - log 2 or "
        f"1.2 tanh(z), z ~ N(0, 1); specific programmes are active in their study only; "
        f"{sim['likelihood'].upper()} counts (theta = {sim['theta']:g}), mean library {sim['library_size']:g}.",
        f"- Seeds 0..{seeds - 1}: seed s draws dataset s and seeds every model.",
        f"- Restarts: every method (and, per study, every model of the per-study baseline) is fitted "
        f"{settings.get('n_restarts', 1)} time(s) with seeds s, s + {RESTART_SEED_STEP}, ..., and the fit with the "
        "lowest training objective is kept (`scsparse.model.select_best`; no true programme is used). "
        "`fit_seconds` covers all restarts.",
        f"- Methods (all: {settings['gene_likelihood'].upper()} likelihood, decoder of {settings['n_layers']} hidden "
        f"layer(s) of {settings['n_hidden']}{bias_words(settings)}, lambda0 = {settings['lambda0']:g}, "
        f"lambda1 = {settings['lambda1']:g}, "
        f"b = n_genes, initial |W| = {settings['w_init']:g}, dropout {settings['dropout_rate']:g}, Adam lr "
        f"{settings['lr']:g}, batch {settings['batch_size']}, {settings['max_epochs']} epochs, EM after every step, "
        "all cells used for training):",
        f"  (a) `MultiStudySparseVAE(n_latent_shared={settings['n_latent_shared']}, "
        f"n_latent_specific={settings['n_latent_specific']}, encode_study={settings['encode_study']})`, study as "
        "study key;",
        f"  (b) `SparseVAE(n_latent={k_total})` on all cells with the study as batch covariate (decoder input "
        "outside the mask);",
        f"  (c) `SparseVAE(n_latent={settings['n_latent_shared'] + settings['n_latent_specific']})` fitted on each "
        "study separately (fit_seconds: the sum of the three fits);",
        "  (d) query mapping: (a)'s model (encoder without the study) fitted on every study but the last, then "
        "`MultiStudySparseVAE.load_query_data` with the last study's cells, which train only their own new "
        "specific block (the reference's encoder, masks and decoder fixed; restarts for both fits); scored as (a). "
        "Not a competitor of (a) but what is lost by adding a study later instead of fitting all together.",
        "- Scoring (`score_multistudy`; same thresholds for every method: an entry of W is selected iff "
        "|W| >= 0.01 and p* >= 0.5): estimated columns are matched one-to-one to true programmes by the Hungarian "
        "assignment on |Pearson correlation| of posterior means with the true factors, a shared programme "
        "on all the cells the columns are defined on, a specific programme on its study's cells only. "
        "(a): the shared block is matched to the shared programmes only and each study's block to that study's "
        "specific programmes only; every selected entry of an unmatched column counts as a false positive of "
        "its block's kind (an unused column must be switched off). (b), (c): the model does not say which "
        "columns are shared, so every column may match any programme present in its cells ((b): all 11 on all "
        "cells; (c): the 5 shared and the study's 2 specific, per study); a matched column is scored as the "
        "kind of its programme and an unmatched column's selected entries count as false positives of the kind "
        "of the programme it correlates with most. This oracle labelling favours the baselines. (c) must "
        "recover every shared programme in each study: its shared tally pools the three studies.",
        "- `shared_fscore`, `specific_fscore`: 2 TP / (2 TP + FP + FN) pooled over the blocks (and studies); "
        "`factor_corr`: mean |correlation| of the matched pairs; `n_active_*`: columns with at least one gene "
        "with p* > 0.5, labelled by block (a) or by matched / most correlated programme (b, c); the ideal is "
        f"{sim['n_shared']} shared and {sim['n_studies'] * sim['n_specific']} specific for (a) and (b), and "
        f"{sim['n_studies'] * sim['n_shared']} shared (every study's own copy) and "
        f"{sim['n_studies'] * sim['n_specific']} specific for (c); `n_active_total` (table only) is their sum; "
        "`fit_seconds`: set-up plus training wall-clock.",
        "",
        *results_section(table),
        *_targets_section(df, settings, quick, ours_name=ours_name, baselines=baselines),
        "",
        "Per-seed values are in `results.csv`; the figure is `multistudy.png` (F-scores and factor correlation per "
        "method and seed; seed 0's estimated support of the multi-study model beside the truth).",
        "",
    ]
