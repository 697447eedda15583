"""Markdown summary and figures of the synthetic benchmark (Moran et al. 2022, Figure 3)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scsparse.data import EQ9_FEATURE_NAMES
from scsparse.utils import markdown_rows

from .. import _report as report
from .._paper import PAPER_DEPTH_NOTE
from .._restarts import RESTART_SEED_STEP
from .._tables import markdown_table
from ._methods import (
    ACTIVE_UNIT_THRESHOLD,
    BETA_NAME,
    DCI_SEED,
    N_MC_SAMPLES,
    OIVAE_NAME,
    OURS,
    OURS_CORRELATED,
    OURS_SINGLE,
    OURS_VARIANTS,
    PAPER_RHOS,
    PAPER_SEEDS,
    QUICK_EPOCHS,
    SYNTHETIC_SETTINGS,
    TARGET_ACTIVE,
    TARGET_FSCORE,
    TARGET_FSCORE_MAX_RHO,
    TEST_FRACTION,
    VAE_NAME,
    VALIDATION_SEED,
    VSC_NAME,
)

__all__ = ["summary_lines", "write_figure", "write_figure3"]

#: The verdicts of a quick run, which assesses no target.
_verdict = functools.partial(report.target_verdict, unassessed="not assessed (quick)")


def _mean(df: pd.DataFrame, method: str, rho: float, metric: str) -> float:
    v = df[(df["method"] == method) & np.isclose(df["rho"], rho)][metric].to_numpy(dtype=np.float64)
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else math.nan


def _beta_label(df: pd.DataFrame, rho: float) -> str:
    b = df[(df["method"] == BETA_NAME) & np.isclose(df["rho"], rho)]["beta"].dropna().unique()
    return f"{BETA_NAME} (beta={', '.join(f'{x:g}' for x in b)})" if b.size else BETA_NAME


def _paired_wins(df: pd.DataFrame, rho: float, metric: str, rivals: Sequence[str], ours: str) -> tuple[int, int]:
    """Datasets (seeds) at ``rho`` where ``ours``' ``metric`` is above every rival's."""
    at = df[np.isclose(df["rho"], rho)]
    wide = at.pivot_table(index="seed", columns="method", values=metric, aggfunc="first")
    if ours not in wide or any(r not in wide for r in rivals):
        return 0, 0
    wins = np.ones(len(wide), dtype=bool)
    for r in rivals:
        wins &= (wide[ours] > wide[r]).to_numpy()
    return int(wins.sum()), int(len(wide))


def _variant_targets(
    df: pd.DataFrame, rhos: Sequence[float], ours: str, rivals: Sequence[str], *, quick: bool
) -> tuple[list[list[str]], list[str]]:
    """Target rows (DCI at every rho, F-score at rho <= 0.4) of one sparse VAE variant, and why any was missed."""
    rows: list[list[str]] = []
    why: list[str] = []
    sv = df[df["method"] == ours]
    for r in rhos:
        mean_dci = _mean(df, ours, r, "dci")
        parts = [f"{ours} {mean_dci:.3f}"]
        ok = True
        for m in rivals:
            v = _mean(df, m, r, "dci")
            parts.append(f"{_beta_label(df, r) if m == BETA_NAME else m} {v:.3f}")
            ok &= bool(mean_dci > v)
        wins, n = _paired_wins(df, r, "dci", rivals, ours=ours)
        verdict = _verdict(ok, assessed=not quick)
        rows.append(
            [
                f"{ours}: DCI above VAE and beta-VAE",
                f"{r:g}",
                f"mean DCI {' vs '.join(parts)}; above both in {wins}/{n} datasets",
                verdict,
            ]
        )
        if not ok and not quick:
            at = sv[np.isclose(sv["rho"], r)]
            counts = at["n_active"].value_counts().sort_index()
            act = ", ".join(f"{int(k)} active: {int(c)}" for k, c in counts.items())
            why.append(
                f"- {ours}, DCI at rho={r:g}: mean {mean_dci:.3f} (sd {at['dci'].std(ddof=1):.3f} over {len(at)} "
                f"datasets), above both baselines in {wins}/{n} datasets. Active factors per "
                f"dataset: {act}. With more than {TARGET_ACTIVE} active codes DCI is diluted (a true factor is "
                "spread over several codes); with fewer, one code mixes both factors. The VAE and beta-VAE have no "
                "such switch and are scored on the same 5 codes."
            )
    for r in [x for x in rhos if x <= TARGET_FSCORE_MAX_RHO + 1e-12]:
        at = sv[np.isclose(sv["rho"], r)]
        if not len(at):
            continue
        f = float(at["w_fscore"].mean())
        k = int((at["w_fscore"] >= TARGET_FSCORE).sum())
        prec, rec = float(at["w_precision"].mean()), float(at["w_recall"].mean())
        met = f >= TARGET_FSCORE
        verdict = _verdict(met, assessed=not quick)
        rows.append(
            [
                f"{ours}: W support F-score >= {TARGET_FSCORE} (rho <= {TARGET_FSCORE_MAX_RHO:g})",
                f"{r:g}",
                f"mean F {f:.3f} (precision {prec:.3f}, recall {rec:.3f}); >= {TARGET_FSCORE} in {k}/{len(at)} "
                "datasets",
                verdict,
            ]
        )
        if not met and not quick:
            cause = (
                "false positives dominate: entries of W selected outside the true support, including every "
                "selected entry of extra (unmatched) active columns"
                if prec < rec
                else "missed entries dominate: true feature-factor links whose |w| or p* fell below the "
                "thresholds (|w| >= 0.01 and p* >= 0.5)"
            )
            why.append(
                f"- {ours}, F-score at rho={r:g}: mean {f:.3f}, precision {prec:.3f}, recall {rec:.3f}: {cause}. "
                f"Datasets below {TARGET_FSCORE}: {len(at) - k}/{len(at)} (seeds "
                f"{', '.join(str(int(s)) for s in at.loc[at['w_fscore'] < TARGET_FSCORE, 'seed'])})."
            )
    return rows, why


def _targets_section(df: pd.DataFrame, rhos: Sequence[float], *, quick: bool, seeds: int) -> list[str]:
    """The issue's must-show targets, one line per rho, with met / not met and a data-driven why."""
    lines = ["## Targets: met or not, per rho", ""]
    if quick:
        lines += [
            f"Quick smoke run ({QUICK_EPOCHS} epochs unless overridden, {seeds} dataset): the verdicts are "
            "'not assessed'; the numbers only show that every method ran and was scored.",
            "",
        ]
    elif seeds < PAPER_SEEDS:
        lines += [
            f"Reduced run: {seeds} dataset(s) per rho instead of the paper's {PAPER_SEEDS}; verdicts are on the "
            "means over these datasets and are provisional where the spread is large.",
            "",
        ]
    rows: list[list[str]] = []
    why: list[str] = []
    have = set(df["method"])
    rivals = [m for m in (VAE_NAME, BETA_NAME) if m in have]
    variants = [m for m in OURS_VARIANTS if m in have]
    if not variants or not rivals:
        rows += [
            ["SparseVAE DCI above VAE and beta-VAE", f"{r:g}", "a method is missing from the run", "not assessed"]
            for r in rhos
        ]
    else:
        for ours in variants:
            new_rows, new_why = _variant_targets(df, rhos, ours, rivals, quick=quick)
            rows += new_rows
            why += new_why
    lines += markdown_rows(["target", "rho", "ours", "verdict"], rows)
    if why:
        lines += ["", "Why the targets not met were missed (from this run's numbers):", "", *why]
    return lines


def _claims_section(df: pd.DataFrame, rhos: Sequence[float], *, quick: bool) -> list[str]:
    """The paper's claims about Figure 3 beside ours (the paper prints no numbers for it)."""
    lines = [
        "## The paper's claims beside ours",
        "",
        "Figure 3 of Moran et al. (2022) shows box plots over 25 datasets per rho without printed numbers, so "
        "we compare with its stated findings (§4 and the Figure 3 caption).",
        "",
    ]
    rows: list[list[str]] = []
    have = set(df["method"])

    verdict = functools.partial(_verdict, assessed=not quick)

    def per_rho(metric: str, a: str, b: str, digits: int = 3) -> tuple[str, list[bool]]:
        txt, flags = [], []
        for r in rhos:
            va, vb = _mean(df, a, r, metric), _mean(df, b, r, metric)
            txt.append(f"rho={r:g}: {va:.{digits}f} vs {vb:.{digits}f}")
            flags.append((va, vb))
        return "; ".join(txt), flags

    if {OURS, VAE_NAME} <= have:
        txt, pairs = per_rho("dci", OURS, VAE_NAME)
        rows.append(
            [
                "sparse VAE has higher DCI than the VAE at every rho (Fig. 3b)",
                txt,
                verdict(all(a > b for a, b in pairs)),
            ]
        )
        txt, pairs = per_rho("heldout_mse", OURS, VAE_NAME)
        rows.append(
            [
                "sparse VAE has lower held-out MSE than the VAE across rho (Fig. 3a)",
                txt,
                verdict(all(a < b for a, b in pairs)),
            ]
        )
    if {BETA_NAME, VAE_NAME} <= have:
        txt, pairs = per_rho("dci", BETA_NAME, VAE_NAME)
        rows.append(
            [
                "beta-VAE (best beta) performs similarly to the VAE (DCI within 0.1)",
                txt,
                verdict(all(abs(a - b) <= 0.1 for a, b in pairs)),
            ]
        )
    if {VSC_NAME, OURS, VAE_NAME} <= have:
        txt_o, p_o = per_rho("dci", VSC_NAME, OURS)
        _, p_v = per_rho("dci", VSC_NAME, VAE_NAME)
        ok = all(a < b for a, b in p_o) and all(a < b for a, b in p_v)
        rows.append(
            [
                "VSC recovers the factors worse than the sparse VAE and the VAE (VSC vs SparseVAE DCI)",
                txt_o,
                verdict(ok),
            ]
        )
    sv = df[df["method"] == OURS]
    low = sorted(r for r in rhos if r <= 0.4 + 1e-12)
    if len(sv) and len(low) >= 2:
        d = sv.groupby("rho")["dci"].mean()
        drop = float(d.loc[low[0]] - d.loc[low].min())
        rows.append(
            [
                "sparse VAE robust to factor correlation up to rho = 0.4",
                f"mean DCI falls by {drop:.3f} from rho={low[0]:g} to the worst rho <= 0.4 (criterion <= 0.1)",
                verdict(drop <= 0.1),
            ]
        )
    else:
        rows.append(["sparse VAE robust to factor correlation up to rho = 0.4", "needs two rho <= 0.4", "not assessed"])
    if len(sv):
        exact = sv.groupby("rho", sort=True)["n_active"].apply(lambda s: int((s == TARGET_ACTIVE).sum()))
        total = sv.groupby("rho", sort=True)["n_active"].size()
        ours = "; ".join(f"rho={r:g}: {exact[r]}/{total[r]}" for r in exact.index)
        ok = int(exact.sum()) == int(total.sum())
        rows.append(
            [
                f"sparse VAE finds {TARGET_ACTIVE} active factors (§2.2)",
                f"datasets with exactly {TARGET_ACTIVE}: {ours}",
                verdict(ok),
            ]
        )
    return [*lines, *markdown_rows(["claim (Moran et al. 2022)", "ours (means over datasets)", "verdict"], rows)]


def summary_lines(
    df: pd.DataFrame,
    prov: dict[str, Any],
    *,
    rhos: Sequence[float],
    seeds: int,
    first_seed: int,
    quick: bool,
    n_obs: int,
    n_latent: int,
    epochs: int,
    methods: Sequence[str],
    betas: Sequence[float],
    n_validation: int,
    selection: pd.DataFrame,
    total_seconds: float,
) -> list[str]:
    """The lines of ``summary.md``: what ran, the results, the beta-VAE's selection, the targets, the paper's
    claims beside ours, posterior collapse and the files written.
    """
    n_test = int(round(TEST_FRACTION * n_obs))
    s = SYNTHETIC_SETTINGS
    shown = df.copy()
    shown["method"] = [
        _beta_label(df, r) if m == BETA_NAME else m for m, r in zip(df["method"], df["rho"], strict=True)
    ]
    metrics = ["n_active", "active_units", "w_fscore", "dci", "heldout_nll", "heldout_mse", "fit_seconds"]
    table = markdown_table(
        shown, ["method", "rho"], metrics, digits={"fit_seconds": 1, "n_active": 2, "active_units": 2}
    )
    mode = (
        "quick smoke run"
        if quick
        else ("full (paper) setting" if seeds >= PAPER_SEEDS and epochs >= 200 else "reduced setting")
    )
    lines = [
        *report.summary_head(
            "# Synthetic benchmark: recovering the ground-truth factors (Moran et al. 2022, Eq. 9, Figure 3)",
            prov,
            total_seconds=total_seconds,
            mode=mode,
        ),
        "## What ran",
        "",
        f"- Data: Eq. 9, `simulate_eq9(n_obs={n_obs}, rho, seed=s)`: G = 7 features, 2 true factors with "
        "correlation rho, x = (z1, 2 z1, 3 z1^2, 4 z2, 5 z2, 6 sin z2, 7 z1 z2) + N(0, 0.5) noise; each feature "
        "standardised with the training cells' mean and sd (so `heldout_nll` and `heldout_mse` are on that "
        "scale). Simulated here, as in the paper (no external data).",
        f"- Settings: rho in {list(rhos)}; datasets (seeds) {first_seed}..{first_seed + seeds - 1} per rho (the "
        f"paper: rho in {list(PAPER_RHOS)}, {PAPER_SEEDS} datasets each); {epochs} epochs (the paper: 200). "
        f"Mode: {mode}.",
        f"- Split: a fixed {n_test}-cell test set per seed ({TEST_FRACTION:.0%}, drawn independently of the models; "
        f"same split at every rho); every method is fitted on the other {n_obs - n_test} cells of the same dataset "
        "with the same seed.",
        f"- Methods: {', '.join(methods)}; all with K = {n_latent} codes, Gaussian likelihood, MLPs of "
        f"{s['n_layers']} hidden layers x {s['n_hidden']} {PAPER_DEPTH_NOTE}, no dropout, "
        f"Adam lr {s['lr']:g}, batch {s['batch_size']} (Table 6). "
        f"SparseVAE: `scsparse.model.SparseVAE` (scvi-tools) with the paper's decoder (first layer "
        f"{'with' if s['first_bias'] else 'without'} a bias), lambda0 = {s['lambda0']:g}, lambda1 = "
        f"{s['lambda1']:g}, a = 1, b = G, best of {s['n_restarts']} fits (seeds s, s + {RESTART_SEED_STEP}, "
        "...) by the training objective (`scsparse.model.select_best`, no true factor used; `fit_seconds` "
        f"covers every fit); `{OURS_SINGLE}` is restart 0 alone, the paper's single fit; `{OURS_CORRELATED}` is "
        "the same model and restarts with z ~ N(0, Sigma_z), a learned correlation matrix (the paper's "
        "Appendix B.2; `latent_prior='correlated'`). VAE and beta-VAE: "
        "`scsparse.generic.models.VAE` with learned "
        f"per-feature variances and the sparse VAE's KL warm-up (weight 0 -> beta over the first "
        f"{s['kl_warmup_fraction']:.0%} of the epochs; SparseVAE: 0 -> 1 over the same span). "
        f"VSC: `scsparse.generic.models.VSC`, alpha = {s['vsc_alpha']:g}, 20 pseudo-inputs. "
        f"oi-VAE: `scsparse.generic.models.OIVAE`, every feature its own group (as the sparse VAE paper does), "
        f"lambda = {s['oivae_lambda']:g}, p = {s['oivae_p']}, proximal step lr x lambda. VSC keeps its own "
        "spike warm-up and oi-VAE its paper objective (no KL warm-up). Every method, not only the sparse VAE, "
        f"is the best of {s['n_restarts']} fits by its own training objective on the training cells "
        "(`training_objective` of the generic models), so no method gets more tries than another.",
        f"- beta-VAE's beta (rule fixed before seeing any test result): for each rho, a beta-VAE is fitted for "
        f"every beta in {[float(b) for b in betas]} on {n_validation} separate validation dataset(s) "
        f"(seeds {VALIDATION_SEED}..{VALIDATION_SEED + n_validation - 1}, never a test seed), and the beta with the "
        "highest mean validation DCI is used on all test datasets of that rho (ties: the smaller beta). The "
        "paper shows its best beta without saying how it was chosen.",
        "- Metrics: `n_active` = factors the model itself keeps on: SparseVAE, factors with at least one "
        "feature with p* > 0.5; oi-VAE, factors with a non-zero group column; n/a for VAE, beta-VAE and VSC, "
        "which have no factor switch. `active_units` = codes whose posterior mean varies across cells "
        f"(variance > {ACTIVE_UNIT_THRESHOLD:g}, Burda et al. 2016), the same count for every method. "
        "`w_fscore` = F-score of the support of W against the true support (|W| >= 0.01, and p* >= 0.5 where "
        "the model has p*), estimated columns matched to true factors by |correlation| of the training cells' "
        "codes (Hungarian), columns that select any feature first (a switched-off code only fills in for a true "
        "factor left over; it can still track one, `match_factors(among=...)`), selected entries of unmatched columns "
        "counted as false positives; SparseVAE's W and "
        "oi-VAE's per-feature column norms ||W^(j)[:, k]||; n/a for VAE, beta-VAE and VSC (no feature x factor "
        "loading). `dci` = DCI disentanglement (Eastwood & Williams 2018; gradient-boosted trees on all "
        f"{n_obs} cells' posterior means of all K codes, fixed seed {DCI_SEED}; VSC: gamma * mu). `heldout_nll` = "
        f"-log p(x) per test cell, importance-sampled with q(z|x) ({N_MC_SAMPLES} samples), Gaussian constants "
        "included; for VSC the importance-weighted bound with exact spike-and-slab samples (an upper bound). "
        "`heldout_mse` = mean over test cells and features of (x - decoder mean at the posterior mean)^2. "
        "`fit_seconds` = set-up plus training wall-clock.",
        "",
        "## Results (mean ± sd over datasets)",
        "",
        table,
        "",
        "n/a: the method has no such quantity (see Metrics).",
        "",
        "## beta-VAE: validation DCI per beta (the chosen beta in bold)",
        "",
        *_selection_table(selection),
        "",
        *_targets_section(df, rhos, quick=quick, seeds=seeds),
        "",
        *_claims_section(df, rhos, quick=quick),
        "",
        *_collapse_section(df),
        "",
        "## Files",
        "",
        "- `results.csv`: one row per method, rho and dataset; `beta_selection.csv`: the validation fits.",
        "- `figure3.png`: the paper's Figure 3 (held-out MSE and DCI against rho, every method, spread over datasets).",
        "- `synthetic.png`: DCI and W support F-score per rho, and the sparse VAE's W of dataset 0 per rho with "
        "p* in each cell.",
        "",
    ]
    return lines


def _collapse_section(df: pd.DataFrame) -> list[str]:
    """Datasets in which a method's codes all collapsed onto the prior (no active unit): its DCI is then noise."""
    lines = ["## Posterior collapse", ""]
    dead = df[df["active_units"] == 0]
    if dead.empty:
        return [*lines, "Every fit kept at least one active unit (a code whose posterior mean varies across cells)."]
    lines.append(
        "Fits with no active unit (every code's posterior mean constant across cells: the model explains the "
        "data as noise, and its DCI only reflects the regressors fitting noise):"
    )
    lines.append("")
    total = df.groupby(["method", "rho"], sort=False).size()
    for (m, r), g in dead.groupby(["method", "rho"], sort=False):
        seeds = ", ".join(str(int(s)) for s in g["seed"])
        lines.append(f"- {m}, rho={r:g}: {len(g)}/{int(total[(m, r)])} datasets (seeds {seeds})")
    return lines


def _selection_table(selection: pd.DataFrame) -> list[str]:
    if selection.empty:
        return ["No beta-VAE in this run (or a single beta given, so nothing to choose)."]
    betas = sorted(selection["beta"].unique())
    rows = []
    for r, g in selection.groupby("rho", sort=True):
        mean = g.groupby("beta")["dci"].mean()
        chosen = set(g.loc[g["chosen"], "beta"])
        rows.append([f"{r:g}", *(f"**{mean[b]:.3f}**" if b in chosen else f"{mean[b]:.3f}" for b in betas)])
    return markdown_rows(["rho", *(f"beta={b:g}" for b in betas)], rows)


# ---------------------------------------------------------------------------------------------- figures
_COLOURS = {
    OURS: "tab:blue",
    VAE_NAME: "tab:orange",
    BETA_NAME: "tab:green",
    VSC_NAME: "tab:red",
    OIVAE_NAME: "tab:purple",
}
_EXTRA_COLOURS = ["tab:brown", "tab:pink", "tab:gray", "tab:olive", "tab:cyan"]


def _colour(method: str, i: int) -> str:
    return _COLOURS.get(method, _EXTRA_COLOURS[i % len(_EXTRA_COLOURS)])


def _box_strip(ax: Any, df: pd.DataFrame, metric: str, rhos: Sequence[float], methods: Sequence[str]) -> None:
    """Box plot with the datasets as points, per rho and method (side by side)."""
    rng = np.random.default_rng(0)
    width = 0.8 / max(len(methods), 1)
    for m_i, method in enumerate(methods):
        pos, vals = [], []
        for r_i, rho in enumerate(rhos):
            v = df[(df["method"] == method) & np.isclose(df["rho"], rho)][metric].to_numpy(dtype=np.float64)
            v = v[np.isfinite(v)]
            if v.size:
                pos.append(r_i + (m_i - (len(methods) - 1) / 2) * width)
                vals.append(v)
        if not vals:
            continue
        c = _colour(method, m_i)
        ax.boxplot(
            vals,
            positions=pos,
            widths=width * 0.8,
            patch_artist=True,
            boxprops={"facecolor": c, "alpha": 0.3},
            medianprops={"color": c},
            showfliers=False,
            manage_ticks=False,
        )
        for p_i, (p, v) in enumerate(zip(pos, vals, strict=True)):
            ax.scatter(
                p + rng.uniform(-width / 5, width / 5, v.size),
                v,
                color=c,
                s=16,
                zorder=3,
                label=method if p_i == 0 else None,
            )
    ax.set_xticks(range(len(rhos)), [f"{r:g}" for r in rhos])
    ax.set_xlim(-0.6, len(rhos) - 0.4)
    ax.set_xlabel("factor correlation rho")


def write_figure3(out_dir: Path, df: pd.DataFrame) -> Path:
    """The paper's Figure 3: held-out MSE (a) and DCI (b) against rho for every method."""
    rhos = sorted(df["rho"].unique())
    methods = list(dict.fromkeys(df["method"]))
    fig = report.new_figure((max(11.0, 2.4 * len(rhos) * 2), 4.8))
    ax_mse, ax_dci = fig.subplots(1, 2)
    _box_strip(ax_mse, df, "heldout_mse", rhos, methods)
    mse = df["heldout_mse"].to_numpy(dtype=np.float64)
    mse = mse[np.isfinite(mse) & (mse > 0)]
    if mse.size and mse.max() / mse.min() > 20:
        ax_mse.set_yscale("log")
    ax_mse.set_ylabel("held-out MSE (standardised features)")
    ax_mse.set_title("(a) Held-out mean squared error (lower is better)")
    _box_strip(ax_dci, df, "dci", rhos, methods)
    ax_dci.set_ylim(-0.02, 1.02)
    ax_dci.set_ylabel("DCI disentanglement")
    ax_dci.set_title("(b) Ground-truth factor recovery (higher is better)")
    n = df.groupby(["method", "rho"]).size()
    per_box = f"{int(n.min())}" if n.min() == n.max() else f"{int(n.min())}-{int(n.max())}"
    # below both panels: inside one, the legend covered boxes once seven methods ran
    handles, labels = ax_dci.get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="outside lower center",
        ncol=min(len(labels), 4),
        fontsize=9,
        title=f"{per_box} dataset(s) per box",
    )
    fig.suptitle("Synthetic data (Eq. 9), as Figure 3 of Moran et al. (2022)")
    return report.save_figure(fig, out_dir / "figure3.png", dpi=120)


def write_figure(out_dir: Path, df: pd.DataFrame, heatmaps: dict[float, dict[str, Any]]) -> Path:
    """Box/strip plots of DCI and F-score per rho, and heat maps of seed 0's W with p* annotations."""
    rhos = sorted(df["rho"].unique())
    methods = list(dict.fromkeys(df["method"]))
    n_heat = max(len(heatmaps), 1)
    n_cols = max(2, n_heat)
    fig = report.new_figure((max(10.0, 4.2 * n_cols), 9.0))
    grid = fig.add_gridspec(2, n_cols)
    half = n_cols // 2
    for i, (metric, title) in enumerate([("dci", "DCI disentanglement"), ("w_fscore", "F-score of W support")]):
        ax = fig.add_subplot(grid[0, i * half : (i + 1) * half] if n_cols > 2 else grid[0, i])
        _box_strip(ax, df, metric, rhos, methods)
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel(title)
        ax.set_title(f"{title} (higher is better)")
        if metric == "w_fscore":
            ax.axhline(TARGET_FSCORE, color="grey", ls="--", lw=1)
            ax.text(len(rhos) - 0.45, TARGET_FSCORE, f"target {TARGET_FSCORE}", ha="right", va="bottom", fontsize=8)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="lower left", fontsize=9)
    for h_i, (rho, hm) in enumerate(sorted(heatmaps.items())):
        ax = fig.add_subplot(grid[1, h_i])
        W, pip = hm["W"], hm["pip"]
        vmax = float(np.max(np.abs(W))) or 1.0
        im = ax.imshow(W, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto")
        for j in range(W.shape[0]):
            for k in range(W.shape[1]):
                ax.text(
                    k,
                    j,
                    f"{W[j, k]:.2f}\np*={pip[j, k]:.2f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="black" if abs(W[j, k]) < 0.6 * vmax else "white",
                )
        xlabels = []
        match = hm.get("column_match")
        for k in range(W.shape[1]):
            lab = f"factor_{k}"
            if match is not None and k in set(np.asarray(match).tolist()):
                lab += f"\n(= z{int(np.flatnonzero(np.asarray(match) == k)[0]) + 1})"
            if f"factor_{k}" in hm.get("active", []):
                lab += "\nactive"
            xlabels.append(lab)
        ax.set_xticks(range(W.shape[1]), xlabels, fontsize=8)
        ax.set_yticks(range(W.shape[0]), list(EQ9_FEATURE_NAMES), fontsize=8)
        ax.set_title(f"{hm['method']} W, seed {hm['seed']}, rho={rho:g}", fontsize=10)
        fig.colorbar(im, ax=ax, shrink=0.8, label="w_jk")
    fig.suptitle("Synthetic data (Eq. 9): factor recovery")
    return report.save_figure(fig, out_dir / "synthetic.png", dpi=120)
