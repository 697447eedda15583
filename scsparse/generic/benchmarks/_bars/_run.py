"""oi-VAE's synthetic bars (Ainsworth et al. 2018, Fig. 2 and App. A): which factor drives which image row.

Every 8 x 8 image has exactly one row lit (value 0.5, the row drawn uniformly), white noise of standard
deviation 0.05 on every pixel; the 8 rows are the feature groups. oi-VAE is fitted with ``K = 8`` factors
(one per row is enough) and ``K = 16`` (twice too many). The paper's claims: with ``K = 8`` each factor
maps to exactly one row; with ``K = 16`` the factors that are not needed are pruned.

What a factor drives is read from a group x factor *influence matrix* ``L`` (``n_rows x K``):

- oi-VAE: ``L[g, k] = ||W^(g)[:, k]||_2``, the column norms of the latent-to-group maps (the paper's
  measure, exact zeros where the proximal step pruned a column);
- VAE and sparse VAE (comparisons, no group structure in the model): the root-mean-square over the test
  images of the norm of the decoder Jacobian restricted to the row's pixels,
  ``L[g, k] = sqrt(mean_i sum_{j in g} (d mu_j / d z_k)^2)`` at the posterior means ``z_i``.

From ``L``: factor ``k`` *touches* row ``g`` when ``L[g, k] >= OWN_REL * max_k' L[g, k']``; row ``g`` is
*owned* when exactly one factor touches it and that factor touches no other row. A factor is *switched off*
when ``max_g L[g, k] < OFF_REL * max L`` (for oi-VAE also counted as exact zeros).
"""

from __future__ import annotations

import functools
import math
import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from scsparse.utils import check_integer, torch_threads

from .. import _report as report
from .._restarts import best_of_restarts
from ._settings import BARS_SETTINGS, N_MC_SAMPLES, OFF_REL, OWN_REL
from ._summary import summary_lines

__all__ = [
    "BARS_SETTINGS",
    "OFF_REL",
    "OWN_REL",
    "RESULT_COLUMNS",
    "jacobian_group_influence",
    "make_bars",
    "ownership",
    "run_bars",
]

#: Latent sizes fitted (the paper: 8 in Fig. 2, 16 in Fig. 8).
K_VALUES: tuple[int, ...] = (8, 16)
#: Quick mode: training images, epochs and methods (one seed).
QUICK_N_TRAIN, QUICK_EPOCHS = 256, 8
QUICK_METHODS: tuple[str, ...] = ("oi-VAE", "VAE")
_TEST_SEED_OFFSET = 7_919

#: Columns of ``results.csv``, in order.
RESULT_COLUMNS: tuple[str, ...] = (
    "method",
    "K",
    "seed",
    "influence",
    "rows_owned",
    "all_rows_owned",
    "n_active",
    "n_off",
    "n_exact_zero",
    "extras_off",
    "train_ll",
    "test_ll",
    "fit_seconds",
)


def make_bars(
    n: int, seed: int, *, size: int = 8, intensity: float = 0.5, noise_sd: float = 0.05
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` noisy ``size x size`` images with one row lit, flattened row by row.

    Parameters
    ----------
    n
        Number of images.
    seed
        Seed of :func:`numpy.random.default_rng`.
    size
        Image side (the paper: 8).
    intensity
        Value of the lit pixels (the paper: 0.5; the others are 0).
    noise_sd
        Standard deviation of the white noise added to every pixel (the paper: 0.05).

    Returns
    -------
    X : numpy.ndarray
        ``(n, size * size)`` float32 images; pixel ``j`` lies in row ``j // size``.
    lit : numpy.ndarray
        The lit row of every image, ``(n,)``.

    Examples
    --------
    >>> X, lit = make_bars(3, seed=0, noise_sd=0.0)
    >>> X.shape, bool((X.reshape(3, 8, 8)[0, lit[0]] == 0.5).all()), float(X.sum(1)[0])
    ((3, 64), True, 4.0)
    """
    if n < 1 or size < 1:
        raise ValueError(f"n and size must be positive, got n={n}, size={size}")
    if noise_sd < 0:
        raise ValueError(f"noise_sd must be non-negative, got {noise_sd}")
    rng = np.random.default_rng(seed)
    lit = rng.integers(0, size, n)
    X = np.zeros((n, size, size))
    X[np.arange(n), lit, :] = intensity
    X += noise_sd * rng.normal(size=X.shape)
    return X.reshape(n, size * size).astype(np.float32), lit


def jacobian_group_influence(
    mean_fn: Callable[[torch.Tensor], torch.Tensor], z: np.ndarray, groups: np.ndarray
) -> np.ndarray:
    """Influence of every factor on every feature group through a decoder: RMS Jacobian norm.

    ``L[g, k] = sqrt(mean_i sum_{j in g} (d mean_j / d z_k (z_i))^2)``, computed with one forward-mode
    Jacobian-vector product per factor.

    Parameters
    ----------
    mean_fn
        Decoder mean, ``(B, K) -> (B, G)``.
    z
        Latent codes (e.g. posterior means of held-out rows), ``(B, K)``.
    groups
        Group index ``0 .. n_groups - 1`` of every feature, ``(G,)``.

    Returns
    -------
    numpy.ndarray
        ``(n_groups, K)``.

    Examples
    --------
    >>> import numpy as np, torch
    >>> A = torch.tensor([[2.0, 0.0], [0.0, 3.0], [0.0, 4.0]])  # feature j = A[j] @ z
    >>> jacobian_group_influence(lambda z: z @ A.T, np.zeros((5, 2)), np.array([0, 1, 1]))
    array([[2., 0.],
           [0., 5.]])
    """
    zt = torch.as_tensor(np.asarray(z), dtype=torch.float32)
    groups = np.asarray(groups)
    n_groups = int(groups.max()) + 1
    onehot = torch.as_tensor(np.eye(n_groups)[groups], dtype=torch.float32)  # (G, n_groups)
    out = np.zeros((n_groups, zt.shape[1]))
    for k in range(zt.shape[1]):
        direction = torch.zeros_like(zt)
        direction[:, k] = 1.0
        _, jvp = torch.func.jvp(mean_fn, (zt,), (direction,))
        out[:, k] = torch.sqrt(((jvp.detach() ** 2) @ onehot).mean(0)).numpy()
    return out


def ownership(L: np.ndarray, own_rel: float = OWN_REL, off_rel: float = OFF_REL) -> dict[str, Any]:
    """Which factor owns which group, from a group x factor influence matrix.

    Parameters
    ----------
    L
        Non-negative influences, ``(n_groups, K)``.
    own_rel
        Factor ``k`` touches group ``g`` when ``L[g, k] >= own_rel * max_k' L[g, k']``.
    off_rel
        Factor ``k`` is switched off when ``max_g L[g, k] < off_rel * max(L)``.

    Returns
    -------
    dict
        ``owner`` (per group: the owning factor or -1), ``rows_owned`` (groups touched by exactly one factor
        that touches no other group), ``n_active``, ``n_off`` and ``n_exact_zero`` (factors whose
        influences are all exactly 0).

    Examples
    --------
    >>> L = np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.001]])
    >>> o = ownership(L)
    >>> o["owner"].tolist(), o["rows_owned"], o["n_active"], o["n_exact_zero"]
    ([0, 1], 2, 2, 0)
    """
    L = np.abs(np.asarray(L, dtype=np.float64))
    if L.ndim != 2 or L.size == 0:
        raise ValueError(f"L must be a non-empty (n_groups, K) matrix, got shape {L.shape}")
    top = L.max()
    row_max = L.max(axis=1, keepdims=True)
    touches = (L >= own_rel * row_max) & (L > 0)
    active = L.max(axis=0) >= off_rel * top if top > 0 else np.zeros(L.shape[1], dtype=bool)
    touches &= active[None, :]
    n_rows_touched = touches.sum(axis=0)
    owner = np.full(L.shape[0], -1)
    for g in range(L.shape[0]):
        ks = np.flatnonzero(touches[g])
        if ks.size == 1 and n_rows_touched[ks[0]] == 1:
            owner[g] = int(ks[0])
    return {
        "owner": owner,
        "rows_owned": int((owner >= 0).sum()),
        "n_active": int(active.sum()),
        "n_off": int((~active).sum()),
        "n_exact_zero": int((L == 0).all(axis=0).sum()),
    }


# ---------------------------------------------------------------------------------------------- methods
def _fit_oivae(X: np.ndarray, K: int, seed: int, epochs: int, w_lr: float) -> tuple[Any, np.ndarray, str]:
    from scsparse.generic.models import OIVAE

    s = BARS_SETTINGS
    groups = np.repeat(np.arange(s["size"]), s["size"])

    def fit(fit_seed: int) -> OIVAE:
        return OIVAE(
            groups,
            n_latent=K,
            p=s["p"],
            lambda_=s["lambda_"],
            n_hidden=s["n_hidden"],
            n_layers=0,
            w_lr=w_lr,
            theta_prior_weight=s["theta_prior_weight"],
            lr=s["lr"],
            max_epochs=epochs,
            batch_size=s["batch_size"],
            seed=fit_seed,
        ).fit(X)

    model = best_of_restarts(fit, seed, s["n_restarts"], objective=lambda m: m.training_objective(X))
    return model, model.loadings(), "||W^(g)[:, k]||"


def _jacobian_of(model: Any, X_test: np.ndarray) -> np.ndarray:
    module = model.module
    size = BARS_SETTINGS["size"]
    groups = np.arange(X_test.shape[1]) // size
    z = model.transform(X_test)
    return jacobian_group_influence(lambda zz: module.observation.mean(module.decode(zz)), z, groups)


def _fit_comparison(
    model_name: str, X: np.ndarray, K: int, seed: int, epochs: int, w_lr: float
) -> tuple[Any, None, str]:
    """A comparison model (``VAE`` or ``SparseVAE`` of :mod:`scsparse.generic.models`) with the bars settings."""
    from scsparse.generic import models

    s = BARS_SETTINGS
    model = getattr(models, model_name)(
        n_latent=K,
        n_hidden=s["n_hidden"],
        n_layers=1,
        lr=s["lr"],
        max_epochs=epochs,
        batch_size=s["batch_size"],
        seed=seed,
        dropout_rate=0.0,
    ).fit(X)
    return model, None, "decoder Jacobian"


#: Methods: name -> ``fit(X, K, seed, epochs, w_lr) -> (model, influence or None, influence name)`` (only
#: oi-VAE uses ``w_lr``).
METHODS: dict[str, Callable[[np.ndarray, int, int, int, float], tuple[Any, np.ndarray | None, str]]] = {
    "oi-VAE": _fit_oivae,
    "VAE": functools.partial(_fit_comparison, "VAE"),
    "SparseVAE": functools.partial(_fit_comparison, "SparseVAE"),
}


def gaussian_reference_ll(X_train: np.ndarray, X_test: np.ndarray) -> float:
    """Mean test log-likelihood per row of the best full-covariance Gaussian fitted to ``X_train``.

    Every model with a linear generator and Gaussian noise (oi-VAE with affine group generators, as in
    the paper's bars experiment) has a Gaussian marginal ``N(b, A A^T + D)``, so this maximum-likelihood
    Gaussian bounds what such a model reaches on the training rows (and is a close reference on test rows).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(5000, 2))
    >>> round(gaussian_reference_ll(X, X), 1)  # -log(2 pi e) for two unit-variance features
    -2.8
    """
    from scipy.stats import multivariate_normal

    X_train = np.asarray(X_train, dtype=np.float64)
    mean = X_train.mean(0)
    cov = np.cov(X_train, rowvar=False, bias=True)
    return float(multivariate_normal(mean, cov, allow_singular=False).logpdf(np.asarray(X_test, np.float64)).mean())


def _log_likelihood(model: Any, X: np.ndarray, n_samples: int) -> float:
    return -float(model.heldout_nll(X, n_samples=n_samples))


# ---------------------------------------------------------------------------------------------- outputs


def _write_figure(out_dir: Path, mats: dict[tuple[str, int], np.ndarray], example: np.ndarray) -> Path:
    """Heat maps of the group x factor influence matrices of seed 0 (as oi-VAE Fig. 2c and Fig. 8)."""
    keys = sorted(mats, key=lambda k: (k[0] != "oi-VAE", k[0], k[1]))
    n = len(keys) + 1
    n_cols = min(n, 3)
    n_rows = math.ceil(n / n_cols)
    fig = report.new_figure((5.2 * n_cols, 4.2 * n_rows))
    ax = fig.add_subplot(n_rows, n_cols, 1)
    ax.imshow(example.reshape(8, 8), cmap="gray_r", vmin=0.0, vmax=0.6)
    ax.set_title("example training image (seed 0)")
    ax.set_xticks([])
    ax.set_yticks(range(8), [f"row {g + 1}" for g in range(8)])
    for i, key in enumerate(keys):
        L = mats[key]
        own = ownership(L)
        order = [k for k in own["owner"] if k >= 0]
        order += [k for k in np.argsort(-L.max(0)) if k not in order]
        ax = fig.add_subplot(n_rows, n_cols, i + 2)
        im = ax.imshow(L[:, order], cmap="Greys", aspect="auto", vmin=0.0)
        ax.set_xticks(range(L.shape[1]), [str(k + 1) for k in order], fontsize=8)
        ax.set_yticks(range(L.shape[0]), [f"row {g + 1}" for g in range(L.shape[0])], fontsize=9)
        ax.set_xlabel("latent factor (ordered by owned row)")
        what = "||W^(g)[:, k]||" if key[0] == "oi-VAE" else "RMS Jacobian norm"
        ax.set_title(
            f"{key[0]}, K = {key[1]}: {what}\n{own['rows_owned']}/8 rows owned, {own['n_active']} active", fontsize=10
        )
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle("Bars: which latent factor drives which image row (seed 0)")
    return report.save_figure(fig, out_dir / "bars.png")


# ---------------------------------------------------------------------------------------------- runner
def _run_task(task: tuple[str, int, int, int, int, float, int, int]) -> tuple[dict[str, Any], np.ndarray]:
    """Fit one method with one ``K`` on seed ``seed``'s images and score it (one worker's job)."""
    name, K, seed, n_train, epochs, w_lr, n_mc, n_test = task
    torch.set_num_threads(1)
    s = BARS_SETTINGS
    size = s["size"]
    bars_kw = {"size": size, "intensity": s["intensity"], "noise_sd": s["noise_sd"]}
    X, _ = make_bars(n_train, seed, **bars_kw)
    X_test, _ = make_bars(n_test, _TEST_SEED_OFFSET, **bars_kw)
    t0 = time.perf_counter()
    model, L, what = METHODS[name](X, K, seed, epochs, w_lr)
    fit_seconds = time.perf_counter() - t0
    if L is None:
        L = _jacobian_of(model, X_test)
    own = ownership(L)
    row = {
        "method": name,
        "K": K,
        "seed": seed,
        "influence": what,
        "rows_owned": own["rows_owned"],
        "all_rows_owned": bool(own["rows_owned"] == size),
        "n_active": own["n_active"],
        "n_off": own["n_off"],
        "n_exact_zero": own["n_exact_zero"],
        "extras_off": bool(K > size and own["n_active"] == size),
        "train_ll": _log_likelihood(model, X, n_mc),
        "test_ll": _log_likelihood(model, X_test, n_mc),
        "fit_seconds": fit_seconds,
    }
    return row, L


def run_bars(
    out: str | os.PathLike[str],
    *,
    seeds: int = 5,
    quick: bool = False,
    max_epochs: int | None = None,
    k_values: Sequence[int] = K_VALUES,
    methods: Sequence[str] | None = None,
    n_train: int | None = None,
    w_lr: float | None = None,
    n_jobs: int = 1,
    n_threads: int | None = 1,
    verbose: bool = True,
) -> pd.DataFrame:
    """oi-VAE on the synthetic bars (Ainsworth et al. 2018): which factor drives which row, extras pruned.

    For every seed ``s``: draw the training images with seed ``s`` (the test images with their own seed),
    fit every method with every ``K`` on the same images, read the group x factor influence matrix, score
    ownership and the log-likelihoods.

    Parameters
    ----------
    out
        Output folder; receives ``results.csv``, ``summary.md`` and ``bars.png``.
    seeds
        Number of seeds ``0 .. seeds - 1`` (the must-show target needs 5). ``quick`` uses 1.
    quick
        Smoke run: 256 training images, 8 epochs, one seed, oi-VAE and VAE only, 10 importance samples.
    max_epochs
        Epochs, overriding the default (the paper's 20,000 iterations: 625 epochs of 2,048 images in
        batches of 64) and ``quick``.
    k_values
        Latent sizes (the paper: 8 and 16).
    methods
        Subset of ``"oi-VAE"``, ``"VAE"``, ``"SparseVAE"`` (default: all three; quick: oi-VAE and VAE).
    n_train
        Training images (default: the paper's 2,048; 256 in quick mode).
    w_lr
        Step of the proximal gradient updates of oi-VAE's ``W`` (default: the paper's 1e-4). With fewer
        iterations than the paper's, a proportionally larger step keeps the total distance ``W`` can travel.
    n_jobs
        Worker processes (each single-threaded) over the (method, K, seed) fits; 1 runs them in this process.
        The fits are the same either way. The workers are spawned, so a script calling this with
        ``n_jobs > 1`` needs the ``if __name__ == "__main__":`` guard.
    n_threads
        Torch intra-op threads while fitting (restored afterwards); ``None`` leaves the setting alone.
    verbose
        Print progress.

    Returns
    -------
    pandas.DataFrame
        One row per method, ``K`` and seed with the columns of :data:`RESULT_COLUMNS`.

    Examples
    --------
    >>> from scsparse.generic.benchmarks import run
    >>> df = run("bars", out="bench_bars", quick=True)  # doctest: +SKIP
    """
    check_integer("seeds", seeds)
    if max_epochs is not None:
        check_integer("max_epochs", max_epochs)
    check_integer("n_jobs", n_jobs)
    k_values = [int(k) for k in k_values]
    if not k_values or min(k_values) < 1:
        raise ValueError(f"k_values must be positive integers, got {k_values}")
    methods = list((QUICK_METHODS if quick else METHODS) if methods is None else methods)
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"unknown methods {unknown or methods}; choose from {list(METHODS)}")
    s = BARS_SETTINGS
    seeds = 1 if quick else int(seeds)
    n_train = int(n_train if n_train is not None else (QUICK_N_TRAIN if quick else s["n_train"]))
    n_test = 64 if quick else int(s["n_test"])
    default_epochs = QUICK_EPOCHS if quick else math.ceil(s["iterations"] / math.ceil(n_train / s["batch_size"]))
    epochs = int(max_epochs) if max_epochs is not None else default_epochs
    n_mc = 10 if quick else N_MC_SAMPLES
    w_lr = float(s["w_lr"] if w_lr is None else w_lr)
    if not w_lr > 0:
        raise ValueError(f"w_lr must be positive, got {w_lr}")
    paper_epochs = math.ceil(s["iterations"] / math.ceil(s["n_train"] / s["batch_size"]))
    reduced = []
    if n_train != s["n_train"]:
        reduced.append(f"{n_train} training images instead of {s['n_train']}")
    if epochs * math.ceil(n_train / s["batch_size"]) < s["iterations"]:
        reduced.append(f"{epochs} epochs instead of the paper's {paper_epochs} ({s['iterations']} iterations)")
    if seeds < 5:
        reduced.append(f"{seeds} seed(s) instead of 5")
    left_out = [m for m in METHODS if m not in methods]
    if left_out:
        reduced.append(f"comparisons {', '.join(left_out)} not run")
    out_dir = report.make_output_dir(out)
    options = report.run_options(out_dir, seeds, quick, max_epochs, epochs_used=epochs, k_values=k_values,
                                 methods=methods, n_train=n_train, n_test=n_test, w_lr=w_lr, n_jobs=n_jobs,
                                 n_threads=n_threads)  # fmt: skip
    size = s["size"]
    bars_kw = {"size": size, "intensity": s["intensity"], "noise_sd": s["noise_sd"]}
    X_test, _ = make_bars(n_test, _TEST_SEED_OFFSET, **bars_kw)
    rows: list[dict[str, Any]] = []
    mats: dict[tuple[str, int], np.ndarray] = {}
    example = None
    gauss_ll = math.nan
    with torch_threads(n_threads):
        prov = report.provenance("bars", options)
        X0, _ = make_bars(n_train, 0, **bars_kw)
        example = X0[0]
        gauss_ll = gaussian_reference_ll(X0, X_test)
        tasks = [
            (name, K, seed, n_train, epochs, w_lr, n_mc, n_test)
            for seed in range(seeds)
            for K in k_values
            for name in methods
        ]
        if n_jobs > 1:
            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(max_workers=n_jobs, mp_context=ctx) as pool:
                results = list(pool.map(_run_task, tasks))
        else:
            results = [_run_task(task) for task in tasks]
        for row, L in results:
            rows.append(row)
            if row["seed"] == 0:
                mats[(row["method"], row["K"])] = L
            if verbose:
                print(
                    f"[bars] seed {row['seed']} K={row['K']} {row['method']}: {row['rows_owned']}/8 rows owned, "
                    f"{row['n_active']} active, test LL {row['test_ll']:.2f} ({row['fit_seconds']:.1f}s)",
                    flush=True,
                )
    df = pd.DataFrame(rows)
    report.write_results(df, out_dir, RESULT_COLUMNS)
    lines = summary_lines(
        df,
        prov,
        seeds=seeds,
        n_train=n_train,
        n_test=n_test,
        epochs=epochs,
        methods=methods,
        gauss_ll=gauss_ll,
        reduced="; ".join(reduced),
        n_mc=n_mc,
        w_lr=w_lr,
    )
    report.write_summary(out_dir, lines)
    _write_figure(out_dir, mats, example)
    return report.finish_run(df.loc[:, list(RESULT_COLUMNS)], out_dir, verbose=verbose)
