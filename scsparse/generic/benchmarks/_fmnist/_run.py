"""Held-out ELBO against latent size on Fashion-MNIST: VSC vs VAE (Tonolini, Jensen & Murray-Smith 2019).

Tonolini et al. compare the ELBO of variational sparse coding (spike-and-slab prior with pseudo-inputs, prior
sparsity ``alpha = 0.01``) with that of a VAE (``beta = 1``) as the latent space grows: the VAE's ELBO stops
improving (or degrades) once the latent space is larger than needed, while VSC switches the extra dimensions
off and stays competitive. Both models here share the observation model and the one-hidden-layer
encoder/decoder width. By default the images are binarised (pixel > 127) with a Bernoulli likelihood: with a
Gaussian likelihood and a learned per-pixel variance the nearly constant border pixels get variances near 0
and dominate the ELBO (``likelihood="normal"`` keeps that variant: pixels / 255).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from scsparse.generic.models import VAE, VSC, init_observation_variance
from scsparse.utils import check_integer, torch_threads

from .. import _report as report
from .._settings import run_settings
from .._vae_scores import active_fraction, heldout_elbo
from ._summary import results_table, summary_lines

__all__ = ["FMNIST_SETTINGS", "RESULT_COLUMNS", "run_fmnist"]

#: Settings of the full run (Tonolini et al. supplement D; the widths are reduced, see the summary).
FMNIST_SETTINGS: dict[str, Any] = {
    "latent_sizes": (5, 10, 20, 50, 100),
    "alpha": 0.01,
    "beta": 1.0,
    "n_hidden": 400,
    "n_pseudo_inputs": 20,
    "max_epochs": 30,
    "batch_size": 500,
    "lr": 1e-3,
    "n_train": 60_000,
    "n_test": 10_000,
    "n_eval_samples": 20,
}
#: ``quick=True``: two latent sizes, 1500 training images, one epoch.
QUICK_SETTINGS: dict[str, Any] = {
    "latent_sizes": (5, 20),
    "n_hidden": 64,
    "max_epochs": 1,
    "n_train": 1500,
    "n_test": 300,
    "n_eval_samples": 5,
}

RESULT_COLUMNS: tuple[str, ...] = (
    "method",
    "n_latent",
    "seed",
    "heldout_elbo",
    "heldout_iwae",
    "active_fraction",
    "fit_seconds",
)


class _VarianceInitVAE(VAE):
    """The :class:`VAE` with its per-pixel variances started at the training data's, as VSC's are.

    Without it the VAE starts at variance 1 on pixels in [0, 1] and spends the short training runs of this
    benchmark learning the noise level, which would confound the ELBO comparison with VSC.
    """

    def build(self, n_features: int, data: torch.Tensor | None) -> Any:
        module = super().build(n_features, data)
        init_observation_variance(module.observation, data)
        return module


def _prepare(images: np.ndarray, likelihood: str) -> np.ndarray:
    """Rows of 784 pixels: binarised (pixel > 127) for ``"bernoulli"``, scaled to [0, 1] otherwise."""
    flat = images.reshape(images.shape[0], -1)
    if likelihood == "bernoulli":
        return (flat > 127).astype(np.float32)
    return flat.astype(np.float32) / 255.0


def _fit(method: str, n_latent: int, cfg: dict[str, Any], seed: int, epochs: int, likelihood: str) -> Any:
    if method == "vsc":
        model: Any = VSC(
            n_latent=n_latent,
            alpha=cfg["alpha"],
            n_pseudo_inputs=cfg["n_pseudo_inputs"],
            n_hidden=cfg["n_hidden"],
            likelihood=likelihood,
            lr=cfg["lr"],
            batch_size=cfg["batch_size"],
            max_epochs=epochs,
            seed=seed,
        )
    else:
        model = _VarianceInitVAE(
            n_latent=n_latent,
            n_hidden=cfg["n_hidden"],
            n_layers=1,
            beta=cfg["beta"],
            likelihood=likelihood,
            lr=cfg["lr"],
            batch_size=cfg["batch_size"],
            max_epochs=epochs,
            seed=seed,
            dropout_rate=0.0,
        )
    return model


def _write_figure(out_dir: Path, df: pd.DataFrame) -> Path:
    fig = report.new_figure((10, 4), layout=None)
    axes = fig.subplots(1, 2)
    for method, group in df.groupby("method", sort=False):
        agg = group.groupby("n_latent")[["heldout_elbo", "active_fraction"]].agg(["mean", "std"])
        x = agg.index.to_numpy()
        for ax, col in zip(axes, ["heldout_elbo", "active_fraction"], strict=True):
            ax.errorbar(x, agg[(col, "mean")], yerr=agg[(col, "std")].fillna(0), marker="o", capsize=3, label=method)
    axes[0].set_ylabel("held-out ELBO per image (nats)")
    axes[1].set_ylabel("fraction of active code entries")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("latent dimensions")
        ax.legend()
    fig.suptitle("Fashion-MNIST: VSC (alpha=0.01) vs VAE (beta=1)")
    fig.tight_layout()
    return report.save_figure(fig, out_dir / "fmnist_elbo.png")


def run_fmnist(
    out: str | os.PathLike[str],
    *,
    seeds: int = 1,
    quick: bool = False,
    max_epochs: int | None = None,
    n_threads: int | None = 1,
    verbose: bool = True,
    latent_sizes: Sequence[int] | None = None,
    n_hidden: int | None = None,
    n_train: int | None = None,
    likelihood: str = "bernoulli",
) -> pd.DataFrame:
    """Held-out ELBO against latent size on Fashion-MNIST for VSC (alpha 0.01) and the VAE (beta 1).

    Both models train on the same training images (the first ``n_train`` of the official training split)
    with the same seeds and are evaluated on the official test split (the first ``n_test`` images).

    Parameters
    ----------
    out
        Output folder; receives ``results.csv``, ``summary.md`` and ``fmnist_elbo.png``.
    seeds
        Number of seeds, ``0 .. seeds - 1``.
    quick
        Smoke run (2 latent sizes, 1500 images, 1 epoch, small networks).
    max_epochs
        Epochs, overriding ``quick`` and the default.
    n_threads
        Torch intra-op threads (restored afterwards).
    verbose
        Print progress and the table.
    latent_sizes
        Latent dimensions to sweep (default 5, 10, 20, 50, 100).
    n_hidden
        Hidden width of the encoder and decoder (Tonolini: 3000; default 400).
    n_train
        Training images (default all 60,000).
    likelihood
        ``"bernoulli"`` (images binarised at pixel > 127) or ``"normal"`` (pixels / 255, learned per-pixel
        variances started at the data's).

    Returns
    -------
    pandas.DataFrame
        One row per method, latent size and seed with :data:`RESULT_COLUMNS`.

    Examples
    --------
    >>> from scsparse.generic.benchmarks import run
    >>> df = run("fmnist", out="bench_fmnist", quick=True)  # doctest: +SKIP
    """
    from scsparse.generic.datasets import fashion_mnist

    if likelihood not in ("bernoulli", "normal"):
        raise ValueError(f"likelihood must be 'bernoulli' or 'normal', got {likelihood!r}")
    check_integer("seeds", seeds)
    cfg = run_settings(
        FMNIST_SETTINGS, QUICK_SETTINGS, quick, n_hidden=n_hidden, n_train=n_train, max_epochs=max_epochs
    )
    if latent_sizes is not None:
        if not latent_sizes or any(int(k) != k or k < 1 for k in latent_sizes):
            raise ValueError(f"latent_sizes must be positive integers, got {latent_sizes}")
        cfg["latent_sizes"] = tuple(int(k) for k in latent_sizes)
    epochs = int(cfg["max_epochs"])
    out_dir = report.make_output_dir(out)
    options = report.run_options(None, int(seeds), quick, max_epochs, epochs_used=epochs, n_threads=n_threads,
                                 **{k: cfg[k] for k in ("latent_sizes", "n_hidden", "n_train", "n_test", "alpha",
                                 "beta", "batch_size")}, likelihood=likelihood)  # fmt: skip
    rows: list[dict[str, Any]] = []
    with torch_threads(n_threads):
        prov = report.provenance("fmnist", options)
        x_train, _ = fashion_mnist("train")
        x_test, _ = fashion_mnist("test")
        train, test = (_prepare(x[:n], likelihood) for x, n in ((x_train, cfg["n_train"]), (x_test, cfg["n_test"])))
        for seed in range(int(seeds)):
            for k in cfg["latent_sizes"]:
                for method in ("vsc", "vae"):
                    start = time.perf_counter()
                    model = _fit(method, k, cfg, seed, epochs, likelihood).fit(train)
                    fit_seconds = time.perf_counter() - start
                    elbo = heldout_elbo(model, test, cfg["n_eval_samples"])
                    if isinstance(model, VSC):
                        iwae = -model.heldout_nll(test, n_samples=cfg["n_eval_samples"], importance_weighted=True)
                    else:
                        iwae = -model.heldout_nll(test, n_samples=cfg["n_eval_samples"])
                    row = {"method": method, "n_latent": k, "seed": seed, "heldout_elbo": elbo,
                           "heldout_iwae": iwae, "active_fraction": active_fraction(model, test),
                           "fit_seconds": fit_seconds}  # fmt: skip
                    rows.append(row)
                    if verbose:
                        print(
                            f"[fmnist] {method} K={k} seed={seed}: ELBO={elbo:.1f} IWAE={iwae:.1f} "
                            f"active={row['active_fraction']:.3f} ({fit_seconds:.1f} s)",
                            flush=True,
                        )
    df = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    report.write_results(df, out_dir, RESULT_COLUMNS)
    report.write_summary(out_dir, summary_lines(df, prov, cfg=cfg, likelihood=likelihood, epochs=epochs, quick=quick))
    _write_figure(out_dir, df)
    return report.finish_run(df, out_dir, results_table(df), verbose=verbose)
