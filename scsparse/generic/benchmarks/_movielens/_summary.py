"""The ``summary.md`` of the movielens benchmark: its lines (``_run`` writes them through :mod:`.._report`)."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pandas as pd

from scsparse.generic.datasets import (
    MOVIELENS_DATASETS,
    TEST_FRACTION,
)
from scsparse.nn import MaskedDecoder, slab_threshold
from scsparse.utils import markdown_rows

from .. import _report as report
from .._documents_summary import best_beta, best_beta_rows
from .._paper import PAPER_DEPTH_NOTE, no_active_factor_note
from .._tables import format_mean_sd, markdown_table
from ._factors import factor_section
from ._settings import FOLD_IN_FRACTION, METHODS, MOVIELENS_SETTINGS, PAPER_TABLE_1A, RunConfig

__all__ = ["summary_lines", "table_frame"]


def table_frame(df: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, float]]:
    """Rows of Table 1a: every method, with beta-VAE at its best beta (lowest mean NLL) per dataset."""
    parts, betas = [], {}
    for ds, g in df.groupby("dataset", sort=False):
        b = best_beta(g)
        if b is not None:
            betas[str(ds)] = b
            g = best_beta_rows(g)
        g = g.assign(_order=g["method"].map({m: i for i, m in enumerate(METHODS)}))
        parts.append(g.sort_values(["_order", "seed"], kind="stable").drop(columns="_order"))
    return pd.concat(parts), betas


def _paper_table(df: pd.DataFrame, best_beta: dict[str, float]) -> str:
    header = ["dataset", "method", "NLL (ours)", "NLL (paper)", "Recall@5 (ours)", "Recall@5 (paper)", "NDCG@10 (ours)",
              "NDCG@10 (paper)", "n seeds"]  # fmt: skip
    rows = []
    for (ds, m), g in df.groupby(["dataset", "method"], sort=False):
        p = PAPER_TABLE_1A[m]
        rows.append([ds, f"beta-VAE (beta = {best_beta[ds]:g})" if m == "beta-VAE" else m,
                     format_mean_sd(g["heldout_nll"], 2), f"{p[0]:.1f}", format_mean_sd(g["recall_at_5"], 3),
                     f"{p[1]:.2f}", format_mean_sd(g["ndcg_at_10"], 3), f"{p[2]:.2f}", len(g)])  # fmt: skip
    return "\n".join(markdown_rows(header, rows))


def _claims(df: pd.DataFrame) -> list[str]:
    """Table rows, one per dataset, on whether the sparse VAE has the lowest mean held-out NLL."""
    rows = []
    for ds, g in df.groupby("dataset", sort=False):
        key = g["method"] + np.where(g["method"] == "beta-VAE", " (beta = " + g["beta"].astype(str) + ")", "")
        means = g.groupby(key)["heldout_nll"].mean().sort_values()
        if "SparseVAE" not in means.index or len(means) < 2:
            rows.append(["SparseVAE has the best held-out NLL", ds, "needs SparseVAE and a baseline", "not assessed"])
            continue
        sv = float(means["SparseVAE"])
        rivals = means.drop("SparseVAE")
        best_name, best_val = str(rivals.index[0]), float(rivals.iloc[0])
        wins = _seed_wins(g)
        verdict = report.target_verdict(sv < best_val)
        ours = (
            f"SparseVAE {sv:.2f} vs best other {best_name} {best_val:.2f} (mean over seeds; SparseVAE lowest in {wins})"
        )
        rows.append(["SparseVAE has the best held-out NLL", ds, ours, verdict])
    return markdown_rows(["must show", "dataset", "ours", "verdict"], rows)


def _paper_gap(df: pd.DataFrame) -> list[str]:
    """Whether the paper's Recall@5 / NDCG@10 of the sparse VAE (0.98 / 0.98) are reached, and why not."""
    sv = df[df["method"] == "SparseVAE"]
    if not len(sv):
        return []
    r5, n10 = float(sv["recall_at_5"].mean()), float(sv["ndcg_at_10"].mean())
    p = PAPER_TABLE_1A["SparseVAE"]
    reached = r5 >= p[1] - 0.02 and n10 >= p[2] - 0.02
    lines = [
        f"Paper's ranking numbers for the sparse VAE (Recall@5 {p[1]:.2f}, NDCG@10 {p[2]:.2f} on ML-25M): "
        f"{'reached' if reached else 'not reached'} (ours, mean over data sets and seeds: Recall@5 {r5:.3f}, "
        f"NDCG@10 {n10:.3f})."
    ]
    if not reached:
        lines[0] += (
            " Different data (100 movies and a few hundred users instead of 300 movies and 100,000 users, far "
            "fewer optimiser steps) make absolute values incomparable; every method here ranks the hidden movies "
            "far below the paper's near-perfect values, so the gap is not specific to the sparse VAE. The paper "
            "does not give enough detail of its ranking protocol to rule out a difference there as well."
        )
    return lines


def _seed_wins(g: pd.DataFrame) -> str:
    seeds = sorted(g["seed"].unique())
    n = 0
    for s in seeds:
        gs = g[g["seed"] == s]
        sv = gs.loc[gs["method"] == "SparseVAE", "heldout_nll"]
        others = gs.loc[gs["method"] != "SparseVAE", "heldout_nll"]
        if len(sv) and len(others) and float(sv.iloc[0]) < float(others.min()):
            n += 1
    return f"{n}/{len(seeds)} seeds"


def summary_lines(
    df: pd.DataFrame,
    prov: dict[str, Any],
    cfg: RunConfig,
    data_info: dict[str, dict[str, Any]],
    factors: dict[str, list[dict[str, Any]]],
    seeds: int,
    reduced: list[str],
) -> list[str]:
    """The lines of ``summary.md``: the data and how it differs from the paper, what ran, Table 1a beside the
    paper's, the must-show targets and the factors.
    """
    table_df, best_beta = table_frame(df)
    metrics = ["heldout_nll", "recall_at_5", "ndcg_at_10", "n_active", "fit_seconds"]
    sweep = markdown_table(
        df[df["method"].isin(["VAE", "beta-VAE"])],
        ["dataset", "method", "beta"],
        ["heldout_nll", "recall_at_5", "ndcg_at_10"],
        digits={"heldout_nll": 2},
    )
    s = MOVIELENS_SETTINGS
    data_lines = [
        f"- `{ds}`: {i['n_users']} users x {i['n_movies']} movies after filtering (density {i['density']:.3f}, "
        f"{i['mean_pos']:.1f} positives per user); each kept movie rated by >= {i['min_movie_ratings']} users."
        for ds, i in data_info.items()
    ]
    stand_ins = set(data_info) <= set(MOVIELENS_DATASETS.values())
    if stand_ins:
        data_words = (
            "ML-25M is not available offline; we ran on the registry's stand-ins listed below (ml-latest-small: 610 "
            "users; ml-100k: 943 users) with the same binarisation and user filter, and the "
            f"**{prov['options']['n_movies']} most rated movies**: with a few hundred users, 300 movies would leave "
            "2-3 users per movie (the paper had ~330)."
        )
    else:
        data_words = (
            "We ran on the data sets listed below (folders given by path are read as they are, e.g. a copy of "
            "ML-25M) with the same binarisation and user filter and the "
            f"{prov['options']['n_movies']} most rated movies."
        )
    lines = [
        *report.summary_head("# MovieLens benchmark (Moran et al. 2022, Tables 1a and 3a)", prov),
        "## Data, and how it differs from the paper",
        "",
        "- The paper: MovieLens 25M, ratings >= 4 -> 1, users with > 20 ratings, the 300 most rated movies, "
        f"100,000 users subsampled. {data_words} Users without any positive among the kept movies are dropped.",
        *data_lines,
        "- Because data sets, movies and users differ, our absolute numbers are **not comparable** with the "
        "paper's (NLL scales with the number of positives per user); the comparison that carries over is the "
        "ordering of the methods within one run.",
        "",
        "## What ran",
        "",
        f"- Seeds 0..{seeds - 1}: seed s draws a {TEST_FRACTION:.0%} held-out user split (the same for every "
        "method) and seeds every model.",
        f"- Models (Table 6 of the paper): multinomial ('softmax') likelihood; K = {cfg.n_latent}; MLPs of "
        f"{cfg.n_layers} hidden layers x {cfg.n_hidden} "
        f"{PAPER_DEPTH_NOTE}; Adam lr {cfg.lr:g}; batch {cfg.batch_size}; "
        f"{cfg.epochs} epochs. SparseVAE lambda0 = {s['lambda0']:g}, lambda1 = {s['lambda1']:g}, a = 1, b = G, "
        f"W started at {_w_init_text(cfg)}. "
        f"beta-VAE beta in {list(cfg.betas)} (the table shows the beta with the lowest mean held-out NLL, as the "
        f"paper shows its best beta; all betas are in the sweep table below). OI-VAE: every movie its own group, "
        f"p = {s['oivae_p']}, lambda = {s['oivae_lambda']:g}, group generators of {cfg.oivae_n_layers} hidden "
        f"layer(s). VSC: alpha = {s['vsc_alpha']:g}, 20 pseudo-inputs. NMF: scikit-learn, generalised KL loss, "
        f"alpha = {s['nmf_alpha']:g}, K components.",
        f"- Held-out NLL: per held-out user, over the full row. VAEs, SparseVAE, OI-VAE: importance-sampled "
        f"-log p(x) with q(z|x) as proposal ({cfg.n_samples} samples), multinomial coefficient included; VSC: "
        "the importance-weighted bound with exact spike-and-slab samples (an upper bound on -log p(x)); NMF: "
        "plug-in multinomial likelihood at codes fitted to the held-out row itself (optimistic for NMF).",
        f"- Recall@5 and NDCG@10: fold-in protocol of Liang et al. (2018): {FOLD_IN_FRACTION:.0%} of each held-out "
        "user's positives hidden, the model sees the rest, the hidden movies are ranked among the unseen ones "
        "(users with >= 5 positives; Recall@R denominator min(R, #hidden)).",
        *(["- **Reduced relative to the paper's settings:** " + "; ".join(reduced) + "."] if reduced else []),
        "",
        "## Table 1a (mean ± sd over seeds; paper numbers on ML-25M beside ours)",
        "",
        _paper_table(table_df, best_beta),
        "",
        "All methods, mean ± sd over seeds:",
        "",
        markdown_table(
            table_df,
            ["dataset", "method"],
            metrics,
            digits={"heldout_nll": 2, "fit_seconds": 1, "n_active": 1},
        ),
        "",
        "beta sweep:",
        "",
        sweep,
        "",
        "## Must show",
        "",
        *_claims(df),
        *no_active_factor_note(df.loc[df["method"] == "SparseVAE", "n_active"]),
        "",
        *_paper_gap(table_df),
        "",
        *factor_section(factors),
        "",
        "Per-seed values are in `results.csv`; the figure is `movielens.png`.",
        "",
    ]
    return lines


def _w_init_text(cfg: RunConfig) -> str:
    """How the sparse VAE's ``W`` was initialised, for ``summary.md`` (defaults read from their sources)."""
    default = inspect.signature(MaskedDecoder).parameters["w_init"].default
    if cfg.w_init is None:
        s = MOVIELENS_SETTINGS
        boundary = slab_threshold(s["lambda0"], s["lambda1"])
        return f"the package default |w| = {default:g} (the spike/slab boundary is at {boundary:.2f})"
    return f"w_init = {cfg.w_init:g} for every entry (set by `w_init`; the package default is {default:g})"
