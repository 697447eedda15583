"""Latent-attribute correlation on Tonolini's Smiley data: VSC vs beta-VAE (Tonolini et al. 2019, Fig. 3).

The Smiley images are generated from 18 sparse features (presence flags and values of the attributes);
a disentangled code has, for every ground-truth attribute, one latent dimension strongly correlated with it.
Only the test split (20,000 images) of the data set is available; it is split here into training and
held-out images.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scsparse.generic.models import VAE, VSC
from scsparse.utils import check_integer, torch_threads

from .. import _report as report
from .._settings import run_settings
from .._vae_scores import active_fraction, heldout_elbo
from ._summary import results_table, summary_lines

__all__ = ["RESULT_COLUMNS", "SMILEY_SETTINGS", "attribute_correlation", "run_smiley"]

#: Settings of the full run (Tonolini supplement D; widths and iterations reduced, see the summary).
SMILEY_SETTINGS: dict[str, Any] = {
    "n_latent": 20,
    "alpha": 0.25,
    "beta": 4.0,
    "n_hidden": 400,
    "n_pseudo_inputs": 20,
    "max_epochs": 60,
    "batch_size": 500,
    "lr": 5e-4,
    "test_fraction": 0.2,
    "n_eval_samples": 20,
}
QUICK_SETTINGS: dict[str, Any] = {"n_hidden": 64, "max_epochs": 1, "n_images": 1500, "n_eval_samples": 5}

RESULT_COLUMNS: tuple[str, ...] = (
    "method",
    "seed",
    "corr_all",
    "corr_presence",
    "corr_values",
    "active_fraction",
    "heldout_elbo",
    "fit_seconds",
)
_SPLIT_SEED = 12345


def attribute_correlation(codes: np.ndarray, attributes: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """For each ground-truth attribute, the largest ``|Pearson correlation|`` with any latent dimension.

    Constant attributes or latent dimensions (zero variance) contribute no correlation (``nan`` for a
    constant attribute, a constant dimension is skipped).

    Parameters
    ----------
    codes
        Latent codes ``(n, K)``.
    attributes
        Ground-truth attributes ``(n, A)``.
    mask
        Optional boolean ``(n, A)``: attribute ``a`` is correlated over the rows where ``mask[:, a]`` holds
        only (Smiley: a feature's value only where the feature is present in the image).

    Returns
    -------
    numpy.ndarray
        ``(A,)`` values in ``[0, 1]``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a = rng.normal(size=(500, 2))
    >>> z = np.column_stack([a[:, 1], rng.normal(size=500), -a[:, 0]])
    >>> np.round(attribute_correlation(z, a), 3)
    array([1., 1.])
    """
    z = np.asarray(codes, dtype=np.float64)
    a = np.asarray(attributes, dtype=np.float64)
    if z.ndim != 2 or a.ndim != 2 or z.shape[0] != a.shape[0]:
        raise ValueError(f"codes and attributes must be 2-d with the same rows, got {z.shape} and {a.shape}.")
    if mask is not None:
        m = np.asarray(mask, dtype=bool)
        if m.shape != a.shape:
            raise ValueError(f"mask must have the shape of attributes {a.shape}, got {m.shape}.")
        out = np.full(a.shape[1], np.nan)
        for j in range(a.shape[1]):
            if m[:, j].sum() > 2:
                out[j] = attribute_correlation(z[m[:, j]], a[m[:, j], j : j + 1])[0]
        return out
    zs, as_ = z.std(axis=0), a.std(axis=0)
    zc = (z[:, zs > 0] - z[:, zs > 0].mean(0)) / zs[zs > 0]
    out = np.full(a.shape[1], np.nan)
    if zc.shape[1] == 0:
        out[as_ > 0] = 0.0
        return out
    ac = (a[:, as_ > 0] - a[:, as_ > 0].mean(0)) / as_[as_ > 0]
    corr = np.abs(ac.T @ zc) / z.shape[0]
    out[as_ > 0] = corr.max(axis=1)
    return out


def _model(method: str, cfg: dict[str, Any], seed: int, epochs: int) -> Any:
    if method == "vsc":
        return VSC(
            n_latent=cfg["n_latent"],
            alpha=cfg["alpha"],
            n_pseudo_inputs=cfg["n_pseudo_inputs"],
            n_hidden=cfg["n_hidden"],
            likelihood="bernoulli",
            lr=cfg["lr"],
            batch_size=cfg["batch_size"],
            max_epochs=epochs,
            seed=seed,
        )
    return VAE(
        n_latent=cfg["n_latent"],
        n_hidden=cfg["n_hidden"],
        n_layers=1,
        beta=cfg["beta"],
        likelihood="bernoulli",
        lr=cfg["lr"],
        batch_size=cfg["batch_size"],
        max_epochs=epochs,
        seed=seed,
        dropout_rate=0.0,
    )


def _write_figure(out_dir: Path, mats: dict[str, np.ndarray]) -> Path:
    fig = report.new_figure((6 * len(mats), 5), layout=None)
    axes = np.atleast_1d(fig.subplots(1, len(mats)))
    for ax, (name, m) in zip(axes, mats.items(), strict=True):
        im = ax.imshow(m, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        ax.set_title(f"{name}: |corr(attribute, latent)|, seed 0", fontsize=10)
        ax.set_xlabel("latent dimension")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_ylabel("attribute (18 presence flags, then 18 values where present)")
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.tight_layout()
    return report.save_figure(fig, out_dir / "smiley_correlation.png")


def _corr_matrix(codes: np.ndarray, attrs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``|corr|`` of every attribute (rows; over the rows its mask selects) with every latent dimension."""
    out = np.zeros((attrs.shape[1], codes.shape[1]))
    for j in range(attrs.shape[1]):
        rows = mask[:, j]
        z, a = codes[rows] - codes[rows].mean(0), attrs[rows, j] - attrs[rows, j].mean()
        with np.errstate(invalid="ignore", divide="ignore"):
            out[j] = np.abs(a @ z) / (np.linalg.norm(a) * np.linalg.norm(z, axis=0))
    return np.nan_to_num(out)


def run_smiley(
    out: str | os.PathLike[str],
    *,
    seeds: int = 3,
    quick: bool = False,
    max_epochs: int | None = None,
    n_threads: int | None = 1,
    verbose: bool = True,
    n_latent: int | None = None,
    n_hidden: int | None = None,
    alpha: float | None = None,
    beta: float | None = None,
) -> pd.DataFrame:
    """Latent-attribute correlation of VSC and beta-VAE on the Smiley test split (Tonolini et al. 2019).

    The 20,000 images are split once (fixed seed) into 80% training and 20% held-out images; both models
    train on the same images with the same seeds. Scores on the held-out images: ``corr_*`` (for each
    attribute the max ``|corr|`` over latent dimensions, averaged over all 36 attributes, the 18 presence
    flags and the 18 values), ``active_fraction`` (sparsity of the codes) and the held-out ELBO.

    Parameters
    ----------
    out
        Output folder; receives ``results.csv``, ``summary.md`` and ``smiley_correlation.png``.
    seeds
        Number of seeds ``0 .. seeds - 1``.
    quick
        Smoke run (1500 images, 1 epoch, small networks).
    max_epochs
        Epochs, overriding ``quick`` and the default.
    n_threads
        Torch intra-op threads (restored afterwards).
    verbose
        Print progress and the table.
    n_latent, n_hidden, alpha, beta
        Latent dimensions (default 20), hidden width (default 400; Tonolini: 1000-3000), VSC prior sparsity
        (default 0.25) and the beta-VAE's beta (default 4).

    Returns
    -------
    pandas.DataFrame
        One row per method and seed with :data:`RESULT_COLUMNS`.

    Examples
    --------
    >>> from scsparse.generic.benchmarks import run
    >>> df = run("smiley", out="bench_smiley", quick=True)  # doctest: +SKIP
    """
    from scsparse.generic.datasets import smiley

    check_integer("seeds", seeds)
    cfg = run_settings(
        SMILEY_SETTINGS, QUICK_SETTINGS, quick, n_latent=n_latent, n_hidden=n_hidden, max_epochs=max_epochs
    )
    if alpha is not None:
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        cfg["alpha"] = float(alpha)
    if beta is not None:
        if beta < 0:
            raise ValueError(f"beta must be non-negative, got {beta}")
        cfg["beta"] = float(beta)
    epochs = int(cfg["max_epochs"])
    out_dir = report.make_output_dir(out)
    options = report.run_options(None, int(seeds), quick, max_epochs, epochs_used=epochs, n_threads=n_threads,
                                 **{k: cfg[k] for k in ("n_latent", "n_hidden", "alpha", "beta", "batch_size",
                                 "lr")})  # fmt: skip
    rows: list[dict[str, Any]] = []
    mats: dict[str, np.ndarray] = {}
    with torch_threads(n_threads):
        prov = report.provenance("smiley", options)
        images, presence, values = smiley()
        n = min(images.shape[0], cfg.get("n_images", images.shape[0]))
        perm = np.random.default_rng(_SPLIT_SEED).permutation(images.shape[0])[:n]
        n_test = int(round(cfg["test_fraction"] * n))
        test_idx, train_idx = perm[:n_test], perm[n_test:]
        X = images.astype(np.float32)
        attrs = np.column_stack([presence, values]).astype(np.float64)
        mask = np.column_stack([np.ones_like(presence), presence]).astype(bool)  # values: where present
        for seed in range(int(seeds)):
            for method in ("vsc", "beta_vae"):
                start = time.perf_counter()
                model = _model(method, cfg, seed, epochs).fit(X[train_idx])
                fit_seconds = time.perf_counter() - start
                codes = model.transform(X[test_idx])
                corr = attribute_correlation(codes, attrs[test_idx], mask[test_idx])
                row = {
                    "method": method,
                    "seed": seed,
                    "corr_all": float(np.nanmean(corr)),
                    "corr_presence": float(np.nanmean(corr[:18])),
                    "corr_values": float(np.nanmean(corr[18:])),
                    "active_fraction": active_fraction(model, X[test_idx]),
                    "heldout_elbo": heldout_elbo(model, X[test_idx], cfg["n_eval_samples"]),
                    "fit_seconds": fit_seconds,
                }
                rows.append(row)
                if seed == 0:
                    mats[method] = _corr_matrix(codes, attrs[test_idx], mask[test_idx])
                if verbose:
                    print(
                        f"[smiley] {method} seed={seed}: corr={row['corr_all']:.3f} (presence "
                        f"{row['corr_presence']:.3f}, values {row['corr_values']:.3f}) active="
                        f"{row['active_fraction']:.3f} ELBO={row['heldout_elbo']:.1f} ({fit_seconds:.1f} s)",
                        flush=True,
                    )
    df = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    report.write_results(df, out_dir, RESULT_COLUMNS)
    lines = summary_lines(df, prov, cfg=cfg, epochs=epochs, n_images=n, n_train=len(train_idx), n_test=n_test)
    report.write_summary(out_dir, lines)
    _write_figure(out_dir, mats)
    return report.finish_run(df, out_dir, results_table(df), verbose=verbose)
