"""The ``summary.md`` of the programme_size benchmark, written through :mod:`.._report`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from scsparse.model import DEFAULT_MAX_PRIOR_CELLS

from .._report import (
    NOT_ASSESSED_QUICK,
    summary_head,
    target_verdict,
)
from .._tables import markdown_table
from ._real import REAL_SCENARIO
from ._settings import (
    EFFECT_COLUMNS,
    RARE_COLUMNS,
    REAL_COLUMNS,
    SCENARIOS,
    SCORE_COLUMNS,
    SIMULATED,
    rare_cells,
)

__all__ = ["summary_lines"]

#: Result column -> its header in the summary's tables.
_LABELS = {
    "n_cells": "cells",
    "n_active": "active factors",
    "median_size": "median programme",
    "max_size": "largest programme",
    "precision": "precision",
    "recall": "recall",
    "jaccard": "Jaccard",
    "slab_outside": "slab on undriven genes",
    "top_precision": "top-10 precision",
    "effect_median_size": "median programme",
    "effect_precision": "precision",
    "effect_recall": "recall",
    "redundancy": "redundancy",
    "core_overlap": "top-10 overlap with the largest subsample",
    "core_rbo": "rank-biased overlap with the largest subsample",
    "rare_jaccard": "Jaccard",
    "rare_recall": "recall",
    "rare_precision": "precision",
    "rare_effect_recall": "recall by effect size",
}


def _prior_cells_argument(value: int | None) -> str:
    """The model argument a summary shows when the run's ``max_prior_cells`` is not the model's default."""
    return "" if value == DEFAULT_MAX_PRIOR_CELLS else f", max_prior_cells={value!r}"


def _targets(df: pd.DataFrame, quick: bool) -> list[str]:
    """The issue's target: the planted supports' precision at the most cells at least that at the fewest."""
    lines = ["## Target", ""]
    planted = df[df["scenario"] == "planted"]
    if planted["n_cells"].nunique() < 2:
        return [*lines, "- precision against the number of cells: needs two sizes of the planted scenario.", ""]
    small, large = int(planted["n_cells"].min()), int(planted["n_cells"].max())
    for column, reading in (("precision", "p* > 0.5"), ("effect_precision", "by effect size")):
        by = planted.groupby("n_cells")[column]
        mean, sd = by.mean(), by.std().fillna(0.0)
        ok = mean[large] >= mean[small] - max(sd[small], sd[large])  # inside the seeds' spread: a tie
        verdict = target_verdict(bool(ok), assessed=not quick, unassessed=NOT_ASSESSED_QUICK)
        lines.append(
            f"- planted supports' precision ({reading}) at {large:,} cells at least that at {small:,} cells "
            f"(within the seeds' spread): {mean[large]:.3f} against {mean[small]:.3f}, {verdict}"
        )
    return [*lines, ""]


def _simulated_section(df: pd.DataFrame, settings: Mapping[str, Any]) -> list[str]:
    """The simulations' data, fits and scores against the planted supports."""
    lines = [
        "## Simulations",
        "",
        f"Simulated counts (`scsparse.data.simulate_multistudy`, negative binomial, library size about 2,000): "
        f"{settings['n_genes']} genes, {settings['n_programmes']} programmes of {settings['genes_per_programme']} "
        f"genes ({settings['overlap']} shared by neighbouring programmes), amplitudes 0.8-1.3 on the log rate. "
        f"Scenarios:",
        "",
    ]
    lines += [f"- **{name}**: {SCENARIOS[name]}." for name in SIMULATED if name in set(df["scenario"])]
    if "background" in set(df["scenario"]):
        lines.append(f"  Background effects: N(0, {settings['background_sd']:g}^2) on every amplitude.")
    if "rare" in set(df["scenario"]):
        lines.append(
            f"  Seven programmes: the five shared by every cell, one of the common population and one of the rare "
            f"population ({settings['rare_share']:.0%} of the cells), each the same size as the others."
        )
    lines += [
        "",
        f"SparseVAE as a user fits it: `SparseVAE(adata, n_latent={settings['n_latent']}, seed=s"
        f"{_prior_cells_argument(settings['max_prior_cells'])})`, "
        f"`train(max_epochs={settings['max_epochs']}, seed=s)` (defaults: the validation split, the settled stop). "
        f"Programmes: `p* > 0.5` of each active factor; each planted programme paired one to one with an active "
        f"factor on the Jaccard index. Mean ± sd over seeds:",
        "",
    ]
    shown = [c for c in SCORE_COLUMNS if df[c].notna().any()] + ["epochs"]
    digits = {c: 1 if c in ("n_active", "median_size", "max_size") else 0 if c == "epochs" else 2 for c in shown}
    lines.append(markdown_table(df, ["scenario", "n_cells"], shown, digits=digits, labels=_LABELS))
    lines += [
        "",
        f"Precision: share of a paired factor's genes in its planted programme; recall: share of the planted "
        f"genes the paired factor holds; slab on undriven genes: share of all slab entries on genes no programme "
        f"drives; top-10 precision: share of each paired factor's {settings['n_top']} strongest genes by `|w|` in "
        f"its planted programme.",
        "",
        f"Read by effect size (`FactorResponse.programmes(min_effect={settings['min_effect']:g})`): the `p* > 0.5` "
        f"genes whose expression changes by at least {2 ** settings['min_effect']:g}-fold from the low to the high "
        f"end of the factor (decoded along its 2%-98% quantiles, averaged over {settings['response_cells']:,} "
        f"cells), scored the same way:",
        "",
        markdown_table(df, ["scenario", "n_cells"], EFFECT_COLUMNS, digits={"effect_median_size": 1}, labels=_LABELS),
        "",
    ]
    return lines + _rare_section(df[df["scenario"] == "rare"], settings)


def _rare_section(df: pd.DataFrame, settings: Mapping[str, Any]) -> list[str]:
    """The rare population's programme: whether it survives a prior weighed against at most some cells."""
    if not len(df):
        return []
    sizes = sorted(df["n_cells"].unique())
    counts = ", ".join(f"{rare_cells(int(n), settings['rare_share']):,}" for n in sizes)
    return [
        f"The rare population's programme (scenario `rare`; {counts} cells of the rare population at "
        f"{', '.join(f'{int(n):,}' for n in sizes)} cells), paired and scored as above. The prior on `W` is weighed "
        f"against {_prior_words(settings['max_prior_cells'])}; a programme of few cells is where a tempered "
        f"likelihood could cost recall:",
        "",
        markdown_table(df, ["n_cells"], RARE_COLUMNS, digits=dict.fromkeys(RARE_COLUMNS, 2), labels=_LABELS),
        "",
    ]


def _prior_words(max_prior_cells: int | None) -> str:
    """How the prior is weighed against the cells, in words, for ``max_prior_cells``."""
    if max_prior_cells is None:
        return "every training cell (`max_prior_cells=None`)"
    return f"at most {max_prior_cells:,} training cells (the likelihood tempered by {max_prior_cells:,} / n above that)"


def _real_section(df: pd.DataFrame, settings: Mapping[str, Any]) -> list[str]:
    """The real subsamples' fits and the scores that need no truth."""
    shown = ["n_active", "median_size", "max_size", "effect_median_size", *REAL_COLUMNS, "epochs"]
    digits = {c: 1 if c in ("n_active", "median_size", "max_size", "effect_median_size") else 2 for c in shown}
    digits["epochs"] = 0
    labels = {**_LABELS, "effect_median_size": "median programme, by effect"}
    return [
        "## Real data: subsamples of the PBMC chemistries",
        "",
        f"`pbmc_3batch` (10x PBMCs in 3' v2, 3' v3 and 5' chemistries, {df['n_genes'].iloc[0]:,} variable genes, the "
        f"chemistry as batch), nested random subsamples per seed. SparseVAE as a user fits it "
        f"(`n_latent={settings['n_latent_real']}`, `batch_key`, defaults otherwise). Programmes: `p* > 0.5` of each "
        f"active factor (both directions together), by `|w|`; by effect size as above. Redundancy: each programme's "
        f"largest Jaccard index with another of the same fit, averaged. Cores: each subsample's programmes paired "
        f"with those of the seed's largest subsample on the rank-biased overlap of their rankings (p = 0.9), "
        f"with the overlap of their {settings['n_top']} strongest genes; a programme without a counterpart counts "
        f"0. Mean ± sd over seeds:",
        "",
        markdown_table(df, ["n_cells"], shown, digits=digits, labels=labels),
        "",
    ]


def summary_lines(
    df: pd.DataFrame, prov: dict[str, Any], settings: Mapping[str, Any], quick: bool, seconds: float
) -> list[str]:
    """The lines of ``summary.md``: the head, the simulated and real sections and the targets."""
    lines = summary_head(
        "# Programme size against the number of cells", prov, total_seconds=seconds, mode="quick" if quick else "full"
    )
    simulated = df[df["scenario"].isin(SIMULATED)]
    real = df[df["scenario"] == REAL_SCENARIO]
    if len(simulated):
        lines += _simulated_section(simulated, settings)
    if len(real):
        lines += _real_section(real, settings)
    return [*lines, *_targets(df, quick)]
