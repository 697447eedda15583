"""oi-VAE's motion-capture experiment (Ainsworth et al. 2018, Sec. 6.2, Tables 1-2, Fig. 3), joints as groups.

CMU subject 07's walking trials at hand (01-03, 05-11; 04 and the brisk walk 12 are missing): the frames of
trials 01-03 and 05-10 are the training pool, trial 11 (a standard walk) the test set, as in the paper (which
trained on trials 01-10 and also tested on the brisk walk 12). Features are the joint angles of the ASF
skeleton without the root's translation (59 angles of 29 joints), each scaled to [0, 1] with the training
pool's minimum and maximum ("normalized from their full ranges", the paper); the 6 angles that never move
(both clavicles' 2 and both fingers' 1, constant to 1e-13 in every trial) are dropped, leaving 53 angles of
25 joints. The paper's Fig. 3 shows exactly these joints pruned; with a learned per-angle variance a constant
angle would give an unbounded likelihood.

Held-out log-likelihood (Table 2): importance-sampled ``log p(x)`` per test frame (Gaussian, all constants)
of oi-VAE (K = 4, 8, 16) and a VAE (K = 16) trained on 1, 2, 5 and all 9 training trials (a random subset per
seed). Top joints per factor (Table 1): oi-VAE with K = 16 on all training trials, the 3 joints with the
largest ``||W^(g)[:, k]||`` per factor.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scsparse.utils import check_integer, torch_threads, write_csv

from .. import _report as report
from ._settings import ACTIVE_REL, MIN_RANGE, MOCAP_SETTINGS, N_MC_SAMPLES, TOP_JOINTS, MocapSplit
from ._summary import summary_lines

__all__ = ["JOINT_NAMES", "MOCAP_SETTINGS", "RESULT_COLUMNS", "MocapSplit", "prepare_mocap", "run_mocap"]

#: Numbers of training trials (Table 2: 1, 2, 5, 10; 9 are at hand).
N_TRIALS: tuple[int, ...] = (1, 2, 5, 9)
#: (method, K) pairs of Table 2.
CONFIGS: tuple[tuple[str, int], ...] = (("VAE", 16), ("oi-VAE", 4), ("oi-VAE", 8), ("oi-VAE", 16))
#: Quick mode: epochs, trial counts and configurations.
QUICK_EPOCHS = 3
QUICK_N_TRIALS: tuple[int, ...] = (2,)
QUICK_CONFIGS: tuple[tuple[str, int], ...] = (("VAE", 16), ("oi-VAE", 16))
#: Readable names of the CMU skeleton's joints (as in the paper's Table 1).
JOINT_NAMES: dict[str, str] = {
    "root": "root",
    "lowerback": "lower back",
    "upperback": "upper back",
    "thorax": "thorax",
    "lowerneck": "lower neck",
    "upperneck": "upper neck",
    "head": "head",
    "lclavicle": "left clavicle",
    "lhumerus": "left upper arm",
    "lradius": "left lower arm",
    "lwrist": "left wrist",
    "lhand": "left hand",
    "lfingers": "left fingers",
    "lthumb": "left thumb",
    "rclavicle": "right clavicle",
    "rhumerus": "right upper arm",
    "rradius": "right lower arm",
    "rwrist": "right wrist",
    "rhand": "right hand",
    "rfingers": "right fingers",
    "rthumb": "right thumb",
    "lfemur": "left upper leg",
    "ltibia": "left lower leg",
    "lfoot": "left foot",
    "ltoes": "left toes",
    "rfemur": "right upper leg",
    "rtibia": "right lower leg",
    "rfoot": "right foot",
    "rtoes": "right toes",
}

#: Columns of ``results.csv``, in order.
RESULT_COLUMNS: tuple[str, ...] = (
    "method",
    "K",
    "n_trials",
    "seed",
    "train_trials",
    "n_train_frames",
    "test_ll",
    "n_active",
    "fit_seconds",
)


def prepare_mocap(
    train_trials: Sequence[int] = MOCAP_SETTINGS["train_trials"], test_trial: int = MOCAP_SETTINGS["test_trial"]
) -> MocapSplit:
    """Load subject 07, scale every angle to [0, 1] with the training pool's range, drop constant angles.

    Parameters
    ----------
    train_trials
        The training pool (default: 01-03, 05-10, every walking trial at hand but the test trial).
    test_trial
        The held-out trial (default 11, a standard walk).

    Returns
    -------
    MocapSplit

    Examples
    --------
    >>> split = prepare_mocap()  # doctest: +SKIP
    >>> split.X_pool.shape[1], len(set(split.joints)), split.dropped  # doctest: +SKIP
    (53, 25, ['lclavicle_ry', 'lclavicle_rz', 'lfingers_rx', 'rclavicle_ry', 'rclavicle_rz', 'rfingers_rx'])
    """
    from scsparse.generic.datasets import load_cmu_mocap

    train_trials = [int(t) for t in train_trials]
    if int(test_trial) in train_trials:
        raise ValueError(f"test trial {test_trial} is also in train_trials {train_trials}; hold it out.")
    data = load_cmu_mocap([*train_trials, int(test_trial)])
    pool = np.isin(data.trial, train_trials)
    lo, hi = data.X[pool].min(0), data.X[pool].max(0)
    keep = (hi - lo) > MIN_RANGE
    names = np.array(data.feature_names)
    scaled = ((data.X[:, keep] - lo[keep]) / (hi - lo)[keep]).astype(np.float32)
    return MocapSplit(
        X_pool=scaled[pool],
        trial_pool=data.trial[pool],
        X_test=scaled[data.trial == int(test_trial)],
        joints=data.joints[keep],
        feature_names=names[keep].tolist(),
        dropped=sorted(names[~keep].tolist()),
    )


# ---------------------------------------------------------------------------------------------- methods
def _fit(
    method: str, K: int, X: np.ndarray, joints: np.ndarray, seed: int, epochs: int, w_lr: float, theta_prior: str
) -> Any:
    from scsparse.generic.models import OIVAE, VAE

    s = MOCAP_SETTINGS
    common = {"lr": s["lr"], "max_epochs": epochs, "batch_size": s["batch_size"], "seed": seed}
    if method == "oi-VAE":
        model = OIVAE(
            joints,
            n_latent=K,
            p=s["p"],
            lambda_=s["lambda_"],
            n_hidden=s["n_hidden"],
            n_layers=1,
            activation="tanh",
            w_lr=w_lr,
            theta_prior_weight=s["theta_prior_weight"] if theta_prior == "full" else None,
            **common,
        )
    elif method == "VAE":
        model = VAE(n_latent=K, n_hidden=s["n_hidden"], n_layers=1, dropout_rate=0.0, **common)
    else:
        raise ValueError(f"unknown method {method!r}; choose 'oi-VAE' or 'VAE'")
    return model.fit(X)


def top_joints(loadings: np.ndarray, group_names: Sequence[str], n_top: int = TOP_JOINTS) -> list[dict[str, Any]]:
    """Per factor, the ``n_top`` joints with the largest ``||W^(g)[:, k]||`` (the paper's Table 1).

    Parameters
    ----------
    loadings
        ``(n_groups, K)`` column norms (:meth:`OIVAE.loadings`).
    group_names
        Joint of every row of ``loadings``.
    n_top
        Joints listed per factor.

    Returns
    -------
    list of dict
        One per factor, strongest factor (largest total norm) first: ``factor`` (1-based), ``total``,
        ``joints`` (readable names of the top joints with a non-zero norm) and ``norms``.

    Examples
    --------
    >>> L = np.array([[0.0, 2.0], [1.0, 0.5], [3.0, 0.0]])
    >>> [t["joints"] for t in top_joints(L, ["head", "lfemur", "ltibia"], n_top=2)]
    [['left lower leg', 'left upper leg'], ['head', 'left upper leg']]
    """
    L = np.asarray(loadings, dtype=np.float64)
    out = []
    for k in np.argsort(-L.sum(0), kind="stable"):
        order = [g for g in np.argsort(-L[:, k], kind="stable")[:n_top] if L[g, k] > 0]
        out.append(
            {
                "factor": int(k) + 1,
                "total": float(L[:, k].sum()),
                "joints": [JOINT_NAMES.get(str(group_names[g]), str(group_names[g])) for g in order],
                "norms": [float(L[g, k]) for g in order],
            }
        )
    return out


# ---------------------------------------------------------------------------------------------- outputs


def _write_figure(out_dir: Path, mats: dict[int, np.ndarray], group_names: Sequence[str]) -> Path:
    ks = sorted(mats)
    anatomical = list(JOINT_NAMES)
    order = sorted(
        range(len(group_names)),
        key=lambda g: anatomical.index(group_names[g]) if group_names[g] in anatomical else len(anatomical),
    )
    group_names = [group_names[g] for g in order]
    mats = {K: L[order] for K, L in mats.items()}
    fig = report.new_figure((3.0 + 0.45 * sum(ks) + 2.0 * len(ks), 8.5))
    labels = [JOINT_NAMES.get(str(g), str(g)) for g in group_names]
    widths = [max(k, 4) for k in ks] or [1]
    grid = fig.add_gridspec(1, max(len(ks), 1), width_ratios=widths)
    for i, K in enumerate(ks):
        ax = fig.add_subplot(grid[0, i])
        L = mats[K]
        im = ax.imshow(L, cmap="Greys", aspect="auto", vmin=0.0)
        ax.set_xticks(range(K), [str(k + 1) for k in range(K)], fontsize=8)
        ax.set_yticks(range(len(labels)), labels if i == 0 else [""] * len(labels), fontsize=8)
        ax.set_xlabel("latent factor")
        ax.set_title(f"oi-VAE, K = {K}", fontsize=10)
        fig.colorbar(im, ax=ax, shrink=0.6, label="||W^(g)[:, k]||")
    fig.suptitle("Motion capture (CMU 07): joint x factor group weights")
    return report.save_figure(fig, out_dir / "mocap.png")


# ---------------------------------------------------------------------------------------------- runner
def run_mocap(
    out: str | os.PathLike[str],
    *,
    seeds: int = 3,
    quick: bool = False,
    max_epochs: int | None = None,
    n_trials: Sequence[int] | None = None,
    configs: Sequence[tuple[str, int]] | None = None,
    w_lr: float | None = None,
    theta_prior: str = "full",
    n_threads: int | None = 1,
    verbose: bool = True,
) -> pd.DataFrame:
    """oi-VAE vs VAE on CMU motion capture: held-out log-likelihood and the top joints per factor.

    Parameters
    ----------
    out
        Output folder; receives ``results.csv``, ``summary.md``, ``top_joints.csv`` and ``mocap.png``.
    seeds
        Seeds ``0 .. seeds - 1`` (model initialisation and the random subset of training trials); the
        paper reports single runs. ``quick`` uses 1.
    quick
        Smoke run: 3 epochs, 2 training trials, VAE and oi-VAE with K = 16 only, 10 importance samples.
    max_epochs
        Epochs, overriding the paper's 1,000 and ``quick``.
    n_trials
        Numbers of training trials (default: 1, 2, 5 and all 9; the paper: 1, 2, 5, 10).
    configs
        ``(method, K)`` pairs (default: VAE K = 16 and oi-VAE K = 4, 8, 16, as Table 2).
    w_lr
        Step of the proximal gradient updates of oi-VAE's ``W`` (default: the paper's 1e-4). With fewer
        epochs than the paper's, a proportionally larger step keeps the total distance ``W`` can travel.
    theta_prior
        ``"full"``: the generators' ``N(0, I)`` prior at full weight beside one frame's data term, like the
        group lasso (the paper's per-observation bound); ``"dataset"``: divided by the number of frames.
    n_threads
        Torch intra-op threads while fitting (restored afterwards).
    verbose
        Print progress.

    Returns
    -------
    pandas.DataFrame
        One row per method, ``K``, number of trials and seed (:data:`RESULT_COLUMNS`).

    Examples
    --------
    >>> from scsparse.generic.benchmarks import run
    >>> df = run("mocap", out="bench_mocap", quick=True)  # doctest: +SKIP
    """
    check_integer("seeds", seeds)
    if max_epochs is not None:
        check_integer("max_epochs", max_epochs)
    s = MOCAP_SETTINGS
    n_pool = len(s["train_trials"])
    n_trials = [int(n) for n in (n_trials if n_trials is not None else (QUICK_N_TRIALS if quick else N_TRIALS))]
    if not n_trials or min(n_trials) < 1 or max(n_trials) > n_pool:
        raise ValueError(f"n_trials must lie in 1..{n_pool} (the training trials at hand), got {n_trials}")
    configs = [(str(m), int(k)) for m, k in (configs if configs is not None else (QUICK_CONFIGS if quick else CONFIGS))]
    bad = [c for c in configs if c[0] not in ("oi-VAE", "VAE") or c[1] < 1]
    if bad or not configs:
        raise ValueError(f"configs must be (method, K) pairs with method 'oi-VAE' or 'VAE' and K >= 1, got {bad}")
    seeds = 1 if quick else int(seeds)
    epochs = int(max_epochs) if max_epochs is not None else (QUICK_EPOCHS if quick else int(s["max_epochs"]))
    n_mc = 10 if quick else N_MC_SAMPLES
    w_lr = float(s["w_lr"] if w_lr is None else w_lr)
    if not w_lr > 0:
        raise ValueError(f"w_lr must be positive, got {w_lr}")
    if theta_prior not in ("full", "dataset"):
        raise ValueError(f"theta_prior must be 'full' or 'dataset', got {theta_prior!r}")
    reduced = []
    if epochs < s["max_epochs"]:
        reduced.append(f"{epochs} epochs instead of the paper's {s['max_epochs']}")
    if sorted(n_trials) != sorted(N_TRIALS):
        reduced.append(f"training trials {n_trials} only (paper: 1, 2, 5, 10)")
    if sorted(configs) != sorted(CONFIGS):
        reduced.append(f"configurations {configs} only")
    out_dir = report.make_output_dir(out)
    options = report.run_options(out_dir, seeds, quick, max_epochs, epochs_used=epochs, n_trials=n_trials,
                                 configs=configs, w_lr=w_lr, theta_prior=theta_prior, n_threads=n_threads)  # fmt: skip
    split = prepare_mocap()
    rows: list[dict[str, Any]] = []
    mats: dict[int, np.ndarray] = {}
    group_names: list[str] = []
    tops = None
    with torch_threads(n_threads):
        prov = report.provenance("mocap", options)
        for seed in range(seeds):
            order = np.random.default_rng(seed).permutation(list(s["train_trials"]))
            for n in n_trials:
                trials = sorted(int(t) for t in order[:n])
                X = split.train_rows(trials)
                for method, K in configs:
                    t0 = time.perf_counter()
                    model = _fit(method, K, X, split.joints, seed, epochs, w_lr, theta_prior)
                    fit_seconds = time.perf_counter() - t0
                    n_active = math.nan
                    if method == "oi-VAE":
                        L = model.loadings()
                        n_active = float((L.max(axis=0) >= ACTIVE_REL * L.max()).sum()) if L.max() > 0 else 0.0
                        if seed == 0 and n == max(n_trials):
                            mats[K] = L
                            group_names = [str(g) for g in model.group_names_]
                            if K == max(k for m, k in configs if m == "oi-VAE"):
                                tops = top_joints(L, group_names)
                    row = {
                        "method": method,
                        "K": K,
                        "n_trials": n,
                        "seed": seed,
                        "train_trials": " ".join(f"{t:02d}" for t in trials),
                        "n_train_frames": int(X.shape[0]),
                        "test_ll": -float(model.heldout_nll(split.X_test, n_samples=n_mc)),
                        "n_active": n_active,
                        "fit_seconds": fit_seconds,
                    }
                    rows.append(row)
                    if verbose:
                        print(
                            f"[mocap] seed {seed} trials {row['train_trials']} {method} K={K}: "
                            f"test LL {row['test_ll']:.1f} ({fit_seconds:.1f}s)",
                            flush=True,
                        )
    df = pd.DataFrame(rows)
    report.write_results(df, out_dir, RESULT_COLUMNS)
    if tops is not None:
        table = pd.DataFrame(
            [{"factor": t["factor"], "total_norm": t["total"], "top_joints": "; ".join(t["joints"])} for t in tops]
        )
        write_csv(table, out_dir / "top_joints.csv", index=False)
    oi_ks = [k for m, k in configs if m == "oi-VAE"]
    lines = summary_lines(
        df,
        prov,
        split,
        tops,
        epochs=epochs,
        reduced="; ".join(reduced),
        w_lr=w_lr,
        theta_prior=theta_prior,
        tops_k=max(oi_ks) if oi_ks else 0,
        tops_n=max(n_trials),
    )
    report.write_summary(out_dir, lines)
    if mats:
        _write_figure(out_dir, mats, group_names)
    return report.finish_run(df.loc[:, list(RESULT_COLUMNS)], out_dir, verbose=verbose)
