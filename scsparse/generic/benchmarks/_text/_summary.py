"""The ``summary.md`` of the text benchmark: its lines (:func:`summary_lines`), which ``_run`` writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from scsparse.generic.datasets import TextCorpus
from scsparse.utils import markdown_rows

from .._documents_summary import (
    QUICK_READING,
    all_runs_lines,
    beaten_by,
    best_beta_rows,
    lambda_lines,
    must_show_verdict,
    network_words,
    nll_lines,
    paper_comparison_table,
    reduced_line,
    summary_opening,
    unigram_lines,
)
from .._paper import no_active_factor_note
from ._settings import N_TOP_WORDS, PAPER_TEXT_LAMBDA1, PAPER_TEXT_NLL, TEXT_SETTINGS

__all__ = ["summary_lines"]


def summary_lines(
    df: pd.DataFrame,
    prov: dict[str, Any],
    cfg: Mapping[str, Any],
    corpus: TextCorpus,
    words_sv: pd.DataFrame,
    words_nmf: pd.DataFrame,
    *,
    quick: bool,
    seeds: int,
    n_train: int,
    n_eval: int,
    n_test: int,
    total_seconds: float,
) -> list[str]:
    """The lines of ``summary.md``: what ran, Table 1b beside the paper's, the verdict, Table 3b and a reading."""
    ok, verdict, detail = must_show_verdict(df, quick)
    reasons = ""
    if not quick and not ok:
        reasons = f" Why: {beaten_by(df)}; see 'Reading the result' below."
    return [
        *summary_opening(
            "# Text benchmark: held-out likelihood and topics of abstracts (Moran et al. 2022, Tables 1b and 3b)",
            prov,
            quick=quick,
            total_seconds=total_seconds,
        ),
        f"- Data: **NeurIPS 2023-2025 abstracts** (registry `text_neurips`, a stand-in for PeerRead, which is not "
        f"obtainable offline): {corpus.n_docs} documents x {corpus.n_words} words. The paper used ~11,000 PeerRead "
        "abstracts (arXiv/ICLR/ACL/CoNLL papers up to 2017); ours are newer and all from one venue, so the "
        "absolute NLLs are **not comparable** with the paper's -- only the ordering of the methods is.",
        "- Vocabulary: lower-cased tokens of two or more letters, scikit-learn's English stop words removed, "
        "tokens in fewer than 0.1% or more than 90% of the documents dropped, then the "
        f"{corpus.n_words} most used tokens (the paper's App. C.1 recipe).",
        f"- Split: seeded 80/20 split of the documents per seed (seeds 0..{seeds - 1}); every method is fitted on the "
        f"same {n_train} training documents and scored on the same held-out documents "
        f"({n_eval} of the {n_test} held-out documents, a fixed subset drawn with the seed, are scored).",
        f"- Settings (Table 6, PeerRead): {network_words(cfg)}, a = 1, b = G, KL warm-up over the first quarter; "
        f"beta-VAE beta in {list(cfg['betas'])} (the table shows the best by mean NLL, as the paper does); "
        f"OI-VAE: each word its own group, p = {cfg['oivae_p']}, lambda = {cfg['oivae_lambda']:g}, "
        f"{cfg['oivae_layers']} hidden layer(s) of {cfg['n_hidden']} per word generator; VSC alpha = "
        f"{cfg['vsc_alpha']:g}; NMF (scikit-learn, KL divergence) with alpha = {cfg['nmf_alpha']:g} (the paper's "
        "alpha = 1.0 refers to scikit-learn's pre-1.2 parameter, whose scaling the current alpha_W does not "
        "share; we leave NMF unregularised).",
        *lambda_lines(cfg, PAPER_TEXT_LAMBDA1),
        reduced_line(cfg, TEXT_SETTINGS),
        *nll_lines(cfg),
        "## Table 1b: held-out NLL per document (mean ± sd over seeds)",
        "",
        paper_comparison_table(df, {m: (v[0],) for m, v in PAPER_TEXT_NLL.items()}),
        "",
        "Paper: PeerRead, mean (sd) over five splits. Ours: NeurIPS abstracts -- compare orderings, not values.",
        "",
        *all_runs_lines(
            df,
            ["method"],
            ["heldout_nll", "n_active", "fit_seconds", "eval_seconds"],
            {"heldout_nll": 2, "n_active": 1, "fit_seconds": 1, "eval_seconds": 1},
        ),
        "## Must show",
        "",
        f"- SparseVAE has the best held-out NLL of all methods in the same run: **{verdict}** ({detail}).{reasons}",
        *no_active_factor_note(df.loc[df["method"] == "SparseVAE", "n_active"]),
        "",
        "## Table 3b: top words of SparseVAE factors (seed 0)",
        "",
        "Words with the largest |w_jk| of each active factor (p* > 0.5 for at least one word), at most "
        f"{N_TOP_WORDS} of its selected words; `n_selected` = words with p* > 0.5."
        + (
            " **No factor passed p* > 0.5 in this run**; shown instead: the factors with the largest column norm of "
            "W (`active` = no)."
            if len(words_sv) and not words_sv["active"].any()
            else ""
        )
        + " Paper (PeerRead): A task; policy; planning; heuristic; decision -- B information; feature; complex; "
        "sparse; probability -- C given; network; method; bayesian; neural.",
        "",
        *markdown_rows(
            ["factor", "active", "n_selected", "top words"],
            ([r.factor, "yes" if r.active else "no", r.n_selected, r.words] for r in words_sv.itertuples()),
        ),
        "",
        "NMF components of the same split, for comparison (the paper's Table 5):",
        "",
        *markdown_rows(["component", "top words"], ([r.factor, r.words] for r in words_nmf.itertuples())),
        "",
        "## Reading the result",
        "",
        *_reading(df, quick),
        "",
        "Per-seed values are in `results.csv`; `text.png` shows the NLL per method and seed and the SparseVAE mask "
        "on the top words of its active factors.",
        "",
    ]


def _reading(df: pd.DataFrame, quick: bool) -> list[str]:
    """A few sentences on what the numbers say (ordering, gaps, caveats)."""
    if quick:
        return [QUICK_READING]
    best = best_beta_rows(df)
    means = best.groupby("method", sort=False)["heldout_nll"].mean().sort_values()
    order = " < ".join(f"{m} ({v:.1f})" for m, v in means.items())
    lines = [f"- Ordering of mean held-out NLL (best beta): {order}."]
    lines += unigram_lines(df)
    if {"SparseVAE", "VAE"} <= set(means.index):
        gap = float(means["VAE"] - means["SparseVAE"])
        lines.append(f"- SparseVAE minus VAE: {-gap:+.2f} nats per document (paper: 245.0 - 252.6 = -7.6 on PeerRead).")
    if "NMF" in means.index:
        plug = float(df.loc[df["method"] == "NMF", "nll_plugin"].mean())
        lines.append(
            f"- NMF: {float(means['NMF']):.1f} under the empirical prior over its training codes; its plug-in value at "
            f"codes fitted to each held-out document is {plug:.1f} (optimistic, not a marginal likelihood, and not "
            "used for the ranking)."
        )
    return lines
