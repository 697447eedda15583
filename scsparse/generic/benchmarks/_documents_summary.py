"""What the summaries of the document benchmarks (text, semi-synthetic) share: their opening and the settings they
state, the tables and verdicts on held-out NLL, with the best beta of the beta-VAE (MovieLens's too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from scsparse.utils import markdown_rows

from . import _report as report
from ._documents import NLL_DEFINITION
from ._paper import PAPER_DEPTH_NOTE, slab_threshold_note
from ._tables import format_mean_sd, markdown_table

__all__ = [
    "QUICK_READING",
    "all_runs_lines",
    "beaten_by",
    "best_beta",
    "best_beta_rows",
    "lambda_lines",
    "method_label",
    "must_show_verdict",
    "network_words",
    "nll_lines",
    "paper_comparison_table",
    "reduced_line",
    "reduced_settings",
    "run_labels",
    "summary_opening",
    "unigram_lines",
    "verdict_best",
]

#: What a quick run's summary reads into its numbers.
QUICK_READING = "Quick smoke run on a tiny corpus with 2 epochs: the numbers say nothing about the methods."


def summary_opening(title: str, prov: Mapping[str, Any], *, quick: bool, total_seconds: float) -> list[str]:
    """The opening of a document benchmark's ``summary.md``: ``title``, the provenance with the run's wall-clock
    and mode (:func:`._report.summary_head`), then the heading of what ran.
    """
    mode = f"{'quick' if quick else 'full'} mode"
    return [*report.summary_head(title, prov, total_seconds=total_seconds, mode=mode), "## What ran", ""]


def network_words(cfg: Mapping[str, Any]) -> str:
    """The settings of Table 6 a run shares with the paper's: factors, networks, optimiser, the SparseVAE's prior."""
    return (
        f"K = {cfg['n_latent']}, MLPs of {cfg['n_layers']} hidden layers x {cfg['n_hidden']} {PAPER_DEPTH_NOTE}, "
        f"Adam lr {cfg['lr']:g}, batch {cfg['batch_size']}, {cfg['max_epochs']} epochs; SparseVAE lambda1 = "
        f"{cfg['lambda1']:g}, lambda0 = {cfg['lambda0']:g}"
    )


def lambda_lines(cfg: Mapping[str, Any], paper_lambda1: float) -> list[str]:
    """The item on why the run's ``lambda1`` is not the paper's ``paper_lambda1`` (none when it is)."""
    note = slab_threshold_note(cfg["lambda0"], cfg["lambda1"], paper_lambda1)
    return [f"- {note}"] if note else []


def reduced_line(cfg: Mapping[str, Any], defaults: Mapping[str, Any], more: str = "") -> str:
    """The item on what the run reduced from ``defaults`` (:func:`reduced_settings`), ``more`` before its full stop."""
    reduced = reduced_settings(cfg, defaults)
    return f"- Reduced from the paper's settings in this run: {'; '.join(reduced) if reduced else 'nothing'}{more}."


def nll_lines(cfg: Mapping[str, Any]) -> list[str]:
    """The item defining the held-out NLL (:data:`._documents.NLL_DEFINITION`) with the run's importance samples."""
    return [f"- {NLL_DEFINITION} Here S = {cfg['n_is_samples']}.", ""]


def all_runs_lines(df: pd.DataFrame, by: Sequence[str], metrics: Sequence[str], digits: Mapping[str, int]) -> list[str]:
    """The table of every run, each beta of the beta-VAE its own row (:func:`._tables.markdown_table`)."""
    table = markdown_table(df.assign(method=run_labels(df)), by, metrics, digits=digits)
    return ["All runs (every beta):", "", table, ""]


def must_show_verdict(df: pd.DataFrame, quick: bool, setting_col: str | None = None) -> tuple[bool, str, str]:
    """``(met, verdict, detail)`` of "SparseVAE has the best held-out NLL" (:func:`verdict_best`); a quick run's
    verdict is :data:`._report.NOT_ASSESSED_QUICK`.
    """
    ok, detail = verdict_best(df, setting_col)
    return ok, report.target_verdict(ok, assessed=not quick, unassessed=report.NOT_ASSESSED_QUICK), detail


def best_beta(df: pd.DataFrame) -> float | None:
    """The beta of the beta-VAE rows of ``df`` with the lowest mean held-out NLL (``None`` without such rows)."""
    bv = df[df["method"] == "beta-VAE"]
    if bv.empty:
        return None
    return float(bv.groupby("beta")["heldout_nll"].mean().idxmin())


def best_beta_rows(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the beta-VAE reduced to the beta of lowest mean held-out NLL (the paper's Table 1 convention)."""
    best = best_beta(df)
    if best is None:
        return df
    return df[(df["method"] != "beta-VAE") | (df["beta"] == best)]


def method_label(df: pd.DataFrame, method: str) -> str:
    """``"beta-VAE (beta = b)"`` for the beta-VAE rows of ``df`` (one beta), else ``method``."""
    if method != "beta-VAE":
        return method
    betas = df.loc[df["method"] == method, "beta"].unique()
    return f"beta-VAE (beta = {betas[0]:g})" if len(betas) == 1 else method


def run_labels(df: pd.DataFrame) -> list[str]:
    """One label per row: the method, with the beta for the beta-VAE (``"beta-VAE (beta=2)"``)."""
    return [m if m != "beta-VAE" else f"beta-VAE (beta={b:g})" for m, b in zip(df["method"], df["beta"], strict=True)]


def paper_comparison_table(
    df: pd.DataFrame,
    paper: Mapping[str, Sequence[float]],
    setting_col: str | None = None,
    settings: Sequence[Any] = (None,),
    headers: Sequence[str] = ("NLL",),
) -> str:
    """Markdown table: our ``mean ± sd`` held-out NLL per setting (best beta only) beside the paper's numbers.

    Parameters
    ----------
    df
        Per-run results (``method``, ``beta``, ``seed``, ``heldout_nll`` and ``setting_col``).
    paper
        Method -> the paper's numbers, one per setting.
    setting_col, settings, headers
        Column holding the setting, its values in table order, and their column headers.
    """
    best = best_beta_rows(df)
    rows = []
    for method in dict.fromkeys(best["method"]):
        sub = best[best["method"] == method]
        ours = [format_mean_sd((sub if s is None else sub[sub[setting_col] == s])["heldout_nll"], 1) for s in settings]
        ref = paper.get(method)
        theirs = [f"{v:.1f}" for v in ref] if ref else ["n/a"] * len(headers)
        rows.append([method_label(best, method), *ours, *theirs, sub["seed"].nunique()])
    header = ["method", *(f"ours: {h}" for h in headers), *(f"paper: {h}" for h in headers), "n seeds"]
    return "\n".join(markdown_rows(header, rows))


def beaten_by(df: pd.DataFrame) -> str:
    """Which runs (method, beta) have a lower mean held-out NLL than the SparseVAE, and by how much."""
    means = df["heldout_nll"].groupby(run_labels(df), sort=False).mean()
    if "SparseVAE" not in means.index:
        return "no SparseVAE in this run"
    sv = float(means["SparseVAE"])
    better = means[means < sv].sort_values()
    if better.empty:
        return "no method has a lower mean NLL"
    return "lower mean NLL than SparseVAE: " + ", ".join(f"{m} by {sv - v:.2f} nats" for m, v in better.items())


def verdict_best(df: pd.DataFrame, setting_col: str | None = None) -> tuple[bool, str]:
    """Whether the SparseVAE's mean held-out NLL is below every other method's (every beta), per setting.

    Returns
    -------
    tuple
        ``(met, detail)`` with ``detail`` giving, per setting, the SparseVAE's mean and the best other one.
    """
    parts: list[str] = []
    met = True
    settings = [None] if setting_col is None else list(dict.fromkeys(df[setting_col]))
    for s in settings:
        sub = df if s is None else df[df[setting_col] == s]
        means = sub["heldout_nll"].groupby(run_labels(sub), sort=False).mean().sort_values()
        if "SparseVAE" not in means.index:
            return False, "no SparseVAE in this run"
        others = means.drop("SparseVAE")
        sv = float(means["SparseVAE"])
        prefix = "" if s is None else f"{setting_col} = {s}: "
        if others.empty:
            met = False
            parts.append(f"{prefix}SparseVAE {sv:.2f}, no other method in this run")
            continue
        met &= sv < float(others.iloc[0])
        parts.append(f"{prefix}SparseVAE {sv:.2f} vs best other {others.index[0]} {float(others.iloc[0]):.2f}")
    return met, "; ".join(parts)


def unigram_lines(df: pd.DataFrame, tolerance: float = 1.0) -> list[str]:
    """The unigram reference beside the methods: which ones are within ``tolerance`` nats of it (collapsed)."""
    if "unigram_nll" not in df or df["unigram_nll"].isna().all():
        return []
    ref = float(df["unigram_nll"].mean())
    means = df["heldout_nll"].groupby(run_labels(df), sort=False).mean()
    near = [m for m, v in means.items() if v > ref - tolerance]
    text = (
        f"- Reference without latent variables (unigram multinomial with the training word frequencies, same "
        f"documents): {ref:.1f}."
    )
    if near:
        text += (
            f" Within {tolerance:g} nat of it (or above): {', '.join(near)} -- these learned (almost) nothing "
            "from the documents in this run (posterior collapse or too little training)."
        )
    return [text]


def reduced_settings(cfg: Mapping[str, Any], defaults: Mapping[str, Any]) -> list[str]:
    """Summary text for each setting of a run that differs from the paper's / full default in ``defaults``."""
    return [
        f"{k} = {cfg[k]!r} (paper / full default: {defaults[k]!r})"
        for k in ("max_epochs", "n_docs", "vocab_size", "n_hidden", "n_is_samples", "n_eval_docs", "betas")
        if cfg[k] != defaults[k]
    ]
