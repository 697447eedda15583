"""MovieLens benchmark of Moran et al. (2022): held-out likelihood and fold-in ranking (Tables 1a and 3a)."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scsparse.generic.datasets import (
    DEFAULT_N_MOVIES,
    MovieLensData,
    describe_movielens,
    load_movielens,
    split_rows,
    subsample_users,
)
from scsparse.generic.metrics import fold_in_evaluate
from scsparse.generic.models import NMF, OIVAE, VAE, VSC, ArrayModel, ArraySparseVAE, BetaVAE
from scsparse.utils import check_integer, torch_threads

from .. import _report as report
from .._process import quiet_training_logs
from .._settings import run_settings
from ._factors import describe_factors, write_factors
from ._settings import FOLD_IN_FRACTION, METHODS, MOVIELENS_SETTINGS, PAPER_TABLE_1A, RunConfig
from ._summary import summary_lines, table_frame

__all__ = [
    "METHODS",
    "MOVIELENS_SETTINGS",
    "PAPER_TABLE_1A",
    "RESULT_COLUMNS",
    "build_model",
    "run_movielens",
]


#: Settings of ``quick=True``: a smoke run of every method on a small slice of ml-latest-small.
QUICK_SETTINGS: dict[str, Any] = {
    "datasets": ("movielens_small",),
    "max_users": 150,
    "n_movies": 40,
    "n_hidden": 32,
    "max_epochs": 2,
    "lr": 1e-3,
    "betas": (2.0,),
    "n_samples": 5,
}


#: Columns of ``results.csv``, in order.
RESULT_COLUMNS: tuple[str, ...] = (
    "dataset",
    "method",
    "beta",
    "seed",
    "heldout_nll",
    "nll_kind",
    "recall_at_5",
    "ndcg_at_10",
    "n_eval_users",
    "n_active",
    "n_train",
    "n_test",
    "n_movies",
    "epochs",
    "fit_seconds",
)


_NLL_KIND = {
    "SparseVAE": "importance-sampled -log p(x)",
    "VAE": "importance-sampled -log p(x)",
    "beta-VAE": "importance-sampled -log p(x)",
    "OI-VAE": "importance-sampled -log p(x)",
    "VSC": "importance-weighted bound (>= -log p(x))",
    "NMF": "plug-in at codes fitted to the row",
}


def build_model(method: str, cfg: RunConfig, n_features: int, seed: int, beta: float = 1.0) -> ArrayModel:
    """The model of ``method`` with the benchmark's settings (multinomial likelihood for the autoencoders).

    ``"OI-VAE"`` puts every movie in its own group; ``"NMF"`` uses the generalised KL loss (the
    multinomial / Poisson fit) with scikit-learn ``alpha = 1`` as in the paper.
    """
    if method not in METHODS:
        raise ValueError(f"Unknown method {method!r}; choose from {METHODS}.")
    s = MOVIELENS_SETTINGS
    common = {
        "n_latent": cfg.n_latent,
        "n_hidden": cfg.n_hidden,
        "likelihood": s["likelihood"],
        "lr": cfg.lr,
        "max_epochs": cfg.epochs,
        "batch_size": cfg.batch_size,
        "seed": seed,
    }
    if method == "SparseVAE":
        decoder_kwargs = {} if cfg.w_init is None else {"w_init": cfg.w_init}
        return ArraySparseVAE(
            n_layers=cfg.n_layers,
            lambda0=s["lambda0"],
            lambda1=s["lambda1"],
            decoder_kwargs=decoder_kwargs,
            **common,
        )
    if method == "VAE":
        return VAE(n_layers=cfg.n_layers, beta=1.0, **common)
    if method == "beta-VAE":
        return BetaVAE(n_layers=cfg.n_layers, beta=beta, **common)
    if method == "OI-VAE":
        return OIVAE(
            groups=np.arange(n_features),
            p=s["oivae_p"],
            lambda_=s["oivae_lambda"],
            n_layers=cfg.oivae_n_layers,
            **common,
        )
    if method == "VSC":
        return VSC(n_layers=cfg.n_layers, alpha=s["vsc_alpha"], **common)
    if method == "NMF":
        # init=None: NNDSVDa when K <= min(n_users, n_movies), else random (scikit-learn's default rule)
        return NMF(n_components=cfg.n_latent, likelihood=s["likelihood"], alpha=s["nmf_alpha"], seed=seed, init=None)
    raise AssertionError(method)  # pragma: no cover - METHODS is checked above


def _heldout_nll(model: ArrayModel, method: str, X: np.ndarray, n_samples: int) -> float:
    if method == "NMF":
        return model.heldout_nll(X)
    if method == "VSC":
        return model.heldout_nll(X, n_samples=n_samples, importance_weighted=True)
    return model.heldout_nll(X, n_samples=n_samples)


def _run_one(
    method: str, beta: float, cfg: RunConfig, data: MovieLensData, tr: np.ndarray, te: np.ndarray, seed: int
) -> tuple[dict[str, Any], ArrayModel]:
    X_tr, X_te = data.X[tr], data.X[te]
    start = time.perf_counter()
    model = build_model(method, cfg, data.X.shape[1], seed, beta)
    model.fit(X_tr)
    fit_seconds = time.perf_counter() - start
    nll = _heldout_nll(model, method, X_te, cfg.n_samples)
    rank = fold_in_evaluate(model, X_te, fraction=FOLD_IN_FRACTION, k=(5, 10), seed=seed)
    n_active = float(len(model.active_factors())) if method == "SparseVAE" else math.nan
    row = {
        "dataset": data.name,
        "method": method,
        "beta": beta if method == "beta-VAE" else (1.0 if method in ("VAE", "SparseVAE") else math.nan),
        "seed": seed,
        "heldout_nll": float(nll),
        "nll_kind": _NLL_KIND[method],
        "recall_at_5": rank["recall@5"],
        "ndcg_at_10": rank["ndcg@10"],
        "n_eval_users": int(rank["n_users"]),
        "n_active": n_active,
        "n_train": int(tr.size),
        "n_test": int(te.size),
        "n_movies": int(data.X.shape[1]),
        "epochs": cfg.epochs if method != "NMF" else math.nan,
        "fit_seconds": fit_seconds,
    }
    return row, model


def _write_figure(out_dir: Path, df: pd.DataFrame) -> Path:
    """Per data set and metric: mean ± sd over seeds per method, with the seeds as points."""
    table_df, best_beta = table_frame(df)
    datasets = list(dict.fromkeys(table_df["dataset"]))
    panels = [
        ("heldout_nll", "held-out NLL per user (lower is better)"),
        ("nll_gap", "NLL minus SparseVAE's, same split (> 0: SparseVAE better)"),
        ("recall_at_5", "Recall@5, fold-in (higher is better)"),
        ("ndcg_at_10", "NDCG@10, fold-in (higher is better)"),
    ]
    sv = table_df[table_df["method"] == "SparseVAE"].set_index(["dataset", "seed"])["heldout_nll"]
    keys = pd.MultiIndex.from_frame(table_df[["dataset", "seed"]])
    table_df = table_df.assign(nll_gap=table_df["heldout_nll"].to_numpy() - sv.reindex(keys).to_numpy())
    fig = report.new_figure((19.0, 4.4 * len(datasets)))
    axes = fig.subplots(len(datasets), len(panels), squeeze=False)
    rng = np.random.default_rng(0)
    for r, ds in enumerate(datasets):
        g = table_df[table_df["dataset"] == ds]
        methods = list(dict.fromkeys(g["method"]))
        labels = [f"beta-VAE\n(beta={best_beta[ds]:g})" if m == "beta-VAE" else m for m in methods]
        for c, (metric, title) in enumerate(panels):
            ax = axes[r, c]
            for i, m in enumerate(methods):
                v = g.loc[g["method"] == m, metric].to_numpy(dtype=np.float64)
                v = v[np.isfinite(v)]
                if not v.size:
                    continue
                colour = "tab:red" if m == "SparseVAE" else "tab:blue"
                ax.bar(i, v.mean(), yerr=v.std(ddof=1) if v.size > 1 else 0.0, color=colour, alpha=0.4, capsize=4)
                ax.scatter(i + rng.uniform(-0.15, 0.15, v.size), v, color=colour, s=18, zorder=3)
            ax.set_xticks(range(len(methods)), labels, fontsize=9, rotation=30)
            ax.set_title(f"{ds}: {title}", fontsize=10)
            if metric == "nll_gap":
                ax.axhline(0.0, color="grey", lw=1)
            elif metric == "heldout_nll":
                vals = g[metric].to_numpy(dtype=np.float64)
                vals = vals[np.isfinite(vals)]
                if vals.size:
                    span = max(float(vals.max() - vals.min()), 1e-6)
                    ax.set_ylim(float(vals.min()) - 0.3 * span, float(vals.max()) + 0.2 * span)
            elif metric != "nll_gap":
                ax.set_ylim(0.0, 1.0)
    fig.suptitle("MovieLens (binarised ratings): held-out likelihood and fold-in ranking")
    return report.save_figure(fig, out_dir / "movielens.png")


def run_movielens(
    out: str | os.PathLike[str],
    *,
    seeds: int = 5,
    quick: bool = False,
    max_epochs: int | None = None,
    n_threads: int | None = 1,
    verbose: bool = True,
    datasets: Sequence[str] | None = None,
    methods: Sequence[str] | None = None,
    n_movies: int | None = None,
    max_users: int | None = None,
    lr: float | None = None,
    betas: Sequence[float] | None = None,
    n_samples: int | None = None,
    oivae_n_layers: int | None = None,
    n_hidden: int | None = None,
    w_init: float | None = None,
) -> pd.DataFrame:
    """Held-out NLL, Recall@5 and NDCG@10 of every method on binarised MovieLens (paper's Table 1a).

    For each data set and seed ``s``: hold out 20% of the users (split drawn from ``s``), fit every
    method on the other users, and score it on the held-out users: the held-out negative log-likelihood
    of their full rows and Recall@5 / NDCG@10 by the fold-in protocol. The top movies of three sparse VAE
    factors of seed 0 (Table 3a) go into ``summary.md`` and all factors into ``factors.csv``.

    Parameters
    ----------
    out
        Output folder; receives ``results.csv``, ``summary.md``, ``factors.csv`` and ``movielens.png``.
    seeds
        Number of seeds (user splits) per data set, ``0 .. seeds - 1`` (the paper: 5 splits).
    quick
        A smoke run: ml-latest-small only, 150 users, 40 movies, hidden width 32, 2 epochs, one beta, 5
        importance samples.
    max_epochs
        Epochs, overriding ``quick`` and the paper's 100.
    n_threads
        Torch intra-op threads while fitting (restored afterwards); ``None`` leaves the setting alone.
    verbose
        Print progress and the final table.
    datasets
        Registry names, default ``("movielens_small", "movielens_100k")``.
    methods
        Subset of :data:`METHODS` (default: all).
    n_movies
        Movies kept per data set (default 100; the paper kept 300 of ML-25M).
    max_users
        Use a random subset of at most this many users (default: all).
    lr
        Adam learning rate (default: the paper's 1e-4). With a few hundred users an epoch is a handful of
        steps, so 100 epochs at 1e-4 are about 500 steps against the paper's ~80,000; a larger ``lr`` makes
        up for part of that (say so when you use it).
    betas
        beta values of the beta-VAE (default: the paper's 2, 4, 6, 8, 16).
    n_samples
        Importance samples per held-out user for the NLL (default 100).
    oivae_n_layers
        Hidden layers of each OI-VAE group generator (default: the same as the other networks, 3). Every
        movie has its own generator, so this sets the OI-VAE's cost.
    n_hidden
        Width of every hidden layer (default: the paper's 300; 32 with ``quick``). The sparse VAE's masked
        decoder runs its MLP once per movie, so its cost grows with the square of this width.
    w_init
        Initial value of every entry of the sparse VAE's ``W`` (default: the package default, 0.3, just
        above the spike/slab boundary). With a few hundred users the prior switches every factor off before
        ``W`` grows from there (:doc:`/benchmarks/index`); ``w_init=1.0``, the setting scsparse's
        no-active-factor warning recommends for few rows, starts every entry in the slab.

    Returns
    -------
    pandas.DataFrame
        One row per data set, method (each beta of the beta-VAE a row) and seed with the columns of
        :data:`RESULT_COLUMNS`.

    Examples
    --------
    >>> from scsparse.generic.benchmarks import run
    >>> df = run("movielens", out="bench_ml", quick=True)  # doctest: +SKIP
    """
    check_integer("seeds", seeds)
    if max_epochs is not None:
        check_integer("max_epochs", max_epochs)
    methods = list(METHODS if methods is None else methods)
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"methods must be a non-empty subset of {METHODS}; unknown: {unknown}")
    s = MOVIELENS_SETTINGS
    seeds = int(seeds)
    r = run_settings(
        {**s, "datasets": DATASETS, "n_samples": 100, "n_movies": DEFAULT_N_MOVIES, "max_users": None},
        QUICK_SETTINGS,
        quick,
        given={
            "datasets": datasets, "max_epochs": max_epochs, "n_hidden": n_hidden, "lr": lr, "betas": betas,
            "n_samples": n_samples, "n_movies": n_movies, "max_users": max_users,
        },
    )  # fmt: skip
    datasets, epochs, n_layers = list(r["datasets"]), int(r["max_epochs"]), int(s["n_layers"])
    cfg = RunConfig(
        n_latent=int(s["n_latent"]),
        n_hidden=int(r["n_hidden"]),
        n_layers=n_layers,
        oivae_n_layers=int(oivae_n_layers) if oivae_n_layers is not None else n_layers,
        lr=float(r["lr"]),
        epochs=epochs,
        batch_size=int(s["batch_size"]),
        betas=tuple(float(b) for b in r["betas"]),
        n_samples=int(r["n_samples"]),
        w_init=None if w_init is None else float(w_init),
    )
    if cfg.n_samples < 1 or cfg.oivae_n_layers < 0 or cfg.lr <= 0 or not cfg.betas:
        raise ValueError("n_samples must be >= 1, oivae_n_layers >= 0, lr > 0 and betas non-empty.")
    if cfg.w_init is not None and not (math.isfinite(cfg.w_init) and cfg.w_init > 0):
        raise ValueError(f"w_init must be a positive number, got {w_init!r}.")
    n_movies, max_users = int(r["n_movies"]), r["max_users"]
    reduced = _reductions(cfg, quick, n_movies, max_users, seeds)
    out_dir = report.make_output_dir(out)
    options = {
        "out": str(out_dir),
        "datasets": datasets,
        "seeds": seeds,
        "quick": bool(quick),
        "max_epochs": max_epochs,
        "epochs_used": epochs,
        "methods": methods,
        "n_movies": n_movies,
        "max_users": max_users,
        "lr": cfg.lr,
        "betas": list(cfg.betas),
        "n_samples": cfg.n_samples,
        "oivae_n_layers": cfg.oivae_n_layers,
        "n_hidden": cfg.n_hidden,
        "w_init": cfg.w_init,
        "n_threads": n_threads,
    }
    rows: list[dict[str, Any]] = []
    factors: dict[str, list[dict[str, Any]]] = {}
    data_info: dict[str, dict[str, Any]] = {}
    with torch_threads(n_threads), quiet_training_logs():
        prov = report.provenance("movielens", options)
        for ds in datasets:
            data = subsample_users(load_movielens(ds, n_movies=n_movies), max_users)
            data_info[data.name] = describe_movielens(data)
            for seed in range(seeds):
                tr, te = split_rows(data.X.shape[0], seed, unit="users")
                for method in methods:
                    for beta in cfg.betas if method == "beta-VAE" else (1.0,):
                        row, model = _run_one(method, beta, cfg, data, tr, te, seed)
                        rows.append(row)
                        if method == "SparseVAE" and seed == 0:
                            factors[data.name] = describe_factors(model, data)
                        if verbose:
                            tag = f"{method}" + (f"(beta={beta:g})" if method == "beta-VAE" else "")
                            print(
                                f"[movielens] {data.name} seed={seed} {tag}: NLL={row['heldout_nll']:.3f} "
                                f"R@5={row['recall_at_5']:.3f} NDCG@10={row['ndcg_at_10']:.3f} "
                                f"({row['fit_seconds']:.1f} s)",
                                flush=True,
                            )
    df = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    report.write_results(df, out_dir, RESULT_COLUMNS)
    write_factors(out_dir, factors)
    summary = report.write_summary(out_dir, summary_lines(df, prov, cfg, data_info, factors, seeds, reduced))
    _write_figure(out_dir, df)
    return report.finish_run(df, out_dir, summary.read_text(encoding="utf-8"), verbose=verbose)


#: Data sets of the full run.
DATASETS: tuple[str, ...] = ("movielens_small", "movielens_100k")


def _reductions(cfg: RunConfig, quick: bool, n_movies: int, max_users: int | None, seeds: int) -> list[str]:
    """Plain-language list of every setting that departs from the paper's (for ``summary.md``)."""
    s = MOVIELENS_SETTINGS
    out = []
    if quick:
        out.append("quick smoke run (not a result)")
    if seeds < 5:
        out.append(f"{seeds} seed(s) instead of the paper's 5 splits")
    if cfg.epochs != s["max_epochs"]:
        out.append(f"{cfg.epochs} epochs instead of {s['max_epochs']}")
    if cfg.lr != s["lr"]:
        out.append(
            f"Adam lr {cfg.lr:g} instead of {s['lr']:g} (a few hundred users give ~5 steps per epoch, against "
            "~800 per epoch on the paper's 80k training users)"
        )
    if cfg.n_hidden != s["n_hidden"]:
        out.append(f"hidden width {cfg.n_hidden} instead of {s['n_hidden']}")
    if cfg.oivae_n_layers != s["n_layers"]:
        out.append(
            f"OI-VAE group generators with {cfg.oivae_n_layers} hidden layer(s) instead of {s['n_layers']} "
            "(one generator per movie; cost)"
        )
    if tuple(cfg.betas) != tuple(s["betas"]):
        out.append(f"beta-VAE betas {list(cfg.betas)} instead of {list(s['betas'])}")
    if cfg.n_samples != 100:
        out.append(f"{cfg.n_samples} importance samples per user for the NLL (default 100)")
    if max_users is not None:
        out.append(f"at most {max_users} users per data set")
    if n_movies != DEFAULT_N_MOVIES:
        out.append(f"{n_movies} movies")
    return out
