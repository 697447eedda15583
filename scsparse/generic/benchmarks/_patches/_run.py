"""Sparse coding of whitened natural-image patches with a linear generator (Fallah & Rozell 2022, Table 1).

Every method learns a dictionary ``A`` (256 x 256) for 16x16 patches of Olshausen's whitened images and
infers codes ``z``; all are scored on held-out patches with the sparse-coding objective
``0.5 ||x - A z||^2 + lambda ||z||_1``, ``lambda = 20``: Table 1's validation loss. The paper's Eq. 10 prints
no 1/2, but the published numbers are computed with it (the authors' evaluation, and their FISTA solves the
objective with the 1/2), so this benchmark scores and solves that one.

- FISTA (the MAP reference): codes by FISTA on that objective, with the paper's warm-up of ``lambda``;
- variational methods (Eq. 11-12): an MLP inference network trained on the per-pixel *mean* squared error of
  the best of ``J`` samples (max-ELBO sampling) plus ``beta = 1e-2`` times the KL summed over the 256 codes,
  the scaling under which the paper's ``beta`` and prior scale (0.1) give about 10% non-zero codes; priors
  Gaussian, Laplace, spike-and-slab (Tonolini et al.) and thresholded Gaussian / Laplace (straight-through
  shifted soft-threshold, thresholds 0.52 / 0.25).

Every method learns ``A`` the same way (:func:`dictionary_step`): plain gradient steps of size 0.5, decayed by
0.99 per epoch, on ``0.5 ||x - A z||^2`` (minibatch mean) ``+ kappa ||A||_F^2`` with the codes held fixed,
from unit-norm random atoms; the inference networks use SGD with Nesterov momentum and a one-cycle
learning-rate schedule (app. D).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from scsparse.generic.metrics import feature_collapse_rate, multi_information, posterior_collapse_rate
from scsparse.generic.models import (
    SPIKE_TAU_DECAY,
    SPIKE_TAU_MIN,
    LinearSparseCodingVAE,
    dictionary_step,
    fista,
    init_dictionary,
    sparse_coding_objective,
)
from scsparse.utils import check_integer, torch_threads

from .. import _report as report
from .._settings import run_settings
from ._settings import METHODS, PAPER_TABLE1, PATCH_SETTINGS
from ._summary import summary_lines

__all__ = [
    "METHODS",
    "PAPER_TABLE1",
    "PATCH_SETTINGS",
    "RESULT_COLUMNS",
    "PatchData",
    "load_patch_data",
    "run_patches",
]


#: Settings of ``quick=True`` (a smoke run of every method in seconds).
QUICK_SETTINGS: dict[str, Any] = {
    "n_train": 1000,
    "n_val": 300,
    "max_epochs": 2,
    "encoder_hidden": 64,
    "encoder_layers": 1,
    "n_samples": 4,
    "fista_iters": 30,
    "n_atoms": 64,
}

#: Columns of ``results.csv``, in order.
RESULT_COLUMNS: tuple[str, ...] = (
    "method",
    "seed",
    "n_samples",
    "val_loss",
    "val_recon",
    "val_l1",
    "multi_info",
    "frac_nonzero",
    "posterior_collapse",
    "feature_collapse",
    "fit_seconds",
)

_DATA_SEED = 0  # the patches are the same for every seed and method
_PAPER_STEPS = 80_000 * 300 // 100  # the paper's optimiser steps: warm-ups are fractions of these
_VAL_SEED_OFFSET = 7919
_STD_FLOOR = 1e-8


# ---------------------------------------------------------------------------------------------- data
@dataclass(frozen=True)
class PatchData:
    """Standardised training and validation patches (rows, ``patch_size**2`` pixels each)."""

    train: np.ndarray
    val: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    patch_size: int


def load_patch_data(
    n_train: int, n_val: int, patch_size: int = 16, images: np.ndarray | None = None, seed: int = _DATA_SEED
) -> PatchData:
    """Random patches of the whitened images, standardised per pixel with the training mean and sd.

    Training and validation patches are drawn independently (different seeds) at uniformly random
    positions of all 10 images; every pixel is centred and scaled with the training patches' mean and
    standard deviation (as the authors' data loader does), so ``||x||^2`` is about 256.

    Parameters
    ----------
    n_train, n_val
        Numbers of patches.
    patch_size
        Side of a patch.
    images
        Images ``(n, H, W)``; default :func:`scsparse.generic.datasets.olshausen_images`.
    seed
        Seed of the patch positions.

    Returns
    -------
    PatchData
    """
    from scsparse.generic.datasets import olshausen_images, sample_patches

    imgs = olshausen_images() if images is None else np.asarray(images, dtype=np.float32)
    train = sample_patches(imgs, n_train, patch_size, seed=seed)
    val = sample_patches(imgs, n_val, patch_size, seed=seed + _VAL_SEED_OFFSET)
    mean, std = train.mean(axis=0), np.maximum(train.std(axis=0), _STD_FLOOR)
    return PatchData((train - mean) / std, (val - mean) / std, mean, std, patch_size)


# ---------------------------------------------------------------------------------------------- training
def _resolve_device(device: str | None) -> torch.device:
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' was asked for but torch sees no CUDA device; use device='cpu'.")
    return dev


def _batches(n: int, batch_size: int, gen: torch.Generator, device: torch.device):
    perm = torch.randperm(n, generator=gen).to(device)
    for start in range(0, n, batch_size):
        yield perm[start : start + batch_size]


def _paper_fraction(step: int, n_steps: int) -> float:
    """``step`` of ``n_steps`` as a step of the paper's run (80,000 patches x 300 epochs / batch 100)."""
    return step * _PAPER_STEPS / max(n_steps, 1)


def _ramp(step: float, start: float, end: float, first: float = 0.0) -> float:
    """``first`` until ``start``, then linear to 1 at ``end``, 1 after."""
    return first + (1.0 - first) * min(1.0, max(0.0, (step - start) / (end - start)))


def _one_cycle(step: int, n_steps: int) -> float:
    """Learning-rate factor of app. D's cyclic schedule: linear from 1/25 to 1 over the first 5% of the steps
    (at least one), then a cosine down to 1/25e4 at the last step.
    """
    warm = max(1, round(0.05 * n_steps))
    if step < warm:
        return 1.0 / 25.0 + (1.0 - 1.0 / 25.0) * step / warm
    end, progress = 1.0 / 25e4, min(1.0, (step - warm) / max(n_steps - warm, 1))
    return end + 0.5 * (1.0 - end) * (1.0 + math.cos(math.pi * progress))


def _encoder_optimiser(
    model: LinearSparseCodingVAE, cfg: dict[str, Any], n_steps: int
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler]:
    """SGD with Nesterov momentum 0.9 and the one-cycle schedule :func:`_one_cycle`, as in app. D."""
    opt = torch.optim.SGD(model.encoder.parameters(), lr=cfg["lr_encoder"], momentum=0.9, nesterov=True)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda step: _one_cycle(step, n_steps))


#: Called after each epoch with (epochs done, epochs).
Progress = Callable[[int, int], None] | None


def _progress_printer(method: str, seed: int, start: float) -> Callable[[int, int], None]:
    """Print a line at every tenth of a fit of 50 epochs or more (runs of the paper's length take hours)."""

    def report(done: int, total: int) -> None:
        if total >= 50 and done < total and done % (total // 10) == 0:
            elapsed = time.perf_counter() - start
            print(
                f"[patches] {method} seed={seed}: epoch {done}/{total}, {elapsed / 60:.1f} min, "
                f"about {elapsed * (total - done) / done / 60:.0f} min to go",
                flush=True,
            )

    return report


def _fit_fista(
    train: torch.Tensor, cfg: dict[str, Any], epochs: int, seed: int, device: torch.device, progress: Progress = None
) -> torch.Tensor:
    """Dictionary learning with FISTA codes; returns the dictionary ``A``."""
    gen = torch.Generator().manual_seed(seed)
    A = init_dictionary(train.shape[1], cfg["n_atoms"], gen).to(device)
    n_steps = epochs * math.ceil(train.shape[0] / cfg["batch_size"])
    lr, step = cfg["lr_dictionary"], 0
    for epoch in range(epochs):
        for idx in _batches(train.shape[0], cfg["batch_size"], gen, device):
            x = train[idx]
            # the paper's lambda warm-up: x 0.1, + 1e-4 per step (1 after 9,000 of its 240,000 steps)
            omega = _ramp(_paper_fraction(step, n_steps), 0.0, 9000.0, first=0.1)
            z = fista(x, A, omega * cfg["lambda_l1"], cfg["fista_iters"])
            dictionary_step(A, x, z, lr, cfg["kappa_fista"])
            step += 1
        lr *= cfg["lr_decay"]
        if progress is not None:
            progress(epoch + 1, epochs)
    return A


def _fit_variational(
    train: torch.Tensor,
    prior: str,
    cfg: dict[str, Any],
    epochs: int,
    seed: int,
    device: torch.device,
    progress: Progress = None,
) -> LinearSparseCodingVAE:
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = LinearSparseCodingVAE(
        train.shape[1],
        cfg["n_atoms"],
        prior,
        n_hidden=cfg["encoder_hidden"],
        n_layers=cfg["encoder_layers"],
        prior_scale=cfg["prior_scale"],
        spike_prior=cfg["spike_prior"],
        kl_weight=cfg["kl_weight"],
        generator=gen,
    ).to(device)
    n_steps = epochs * math.ceil(train.shape[0] / cfg["batch_size"])
    opt, sched = _encoder_optimiser(model, cfg, n_steps)
    lr, step = cfg["lr_dictionary"], 0
    model.train()
    for epoch in range(epochs):
        for idx in _batches(train.shape[0], cfg["batch_size"], gen, device):
            paper_step = _paper_fraction(step, n_steps)
            if prior == "spike_slab":  # app. D: slab from 0 after 1,500 steps, + 2e-4 per step; tau x 0.9995 to 0.5
                model.omega = _ramp(paper_step, 1500.0, 6500.0)
                model.tau = max(SPIKE_TAU_MIN, SPIKE_TAU_DECAY**paper_step)
            elif model.base == "laplace":  # the Laplace scales x 0.1, + 2e-4 per step after 1,500 steps (app. B)
                model.omega = _ramp(paper_step, 1500.0, 6000.0, first=0.1)
            x = train[idx]
            loss, z = model.loss(x, cfg["n_samples"])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            dictionary_step(model.A, x, z, lr, cfg["kappa_vi"])
            step += 1
        lr *= cfg["lr_decay"]
        if progress is not None:
            progress(epoch + 1, epochs)
    model.omega, model.tau = 1.0, SPIKE_TAU_MIN
    model.eval()
    return model


@torch.no_grad()
def _score(
    val: torch.Tensor, A: torch.Tensor, z: torch.Tensor, kl: torch.Tensor | None, lam: float
) -> dict[str, float]:
    obj = sparse_coding_objective(val, A, z, lam)
    l1 = z.abs().sum(-1)
    z_np = z.cpu().numpy().astype(np.float64)
    return {
        "val_loss": float(obj.mean()),
        "val_recon": float((obj - lam * l1).mean()),  # the 0.5 ||x - A z||^2 term
        "val_l1": float(l1.mean()),
        "multi_info": multi_information(z_np, method="histogram", base=2),
        "frac_nonzero": float((z != 0).float().mean()),
        "posterior_collapse": math.nan if kl is None else posterior_collapse_rate(kl=kl.cpu().numpy()),
        "feature_collapse": feature_collapse_rate(z_np),
    }


def _encode_val(model: LinearSparseCodingVAE, val: torch.Tensor, n_samples: int) -> tuple[torch.Tensor, torch.Tensor]:
    zs, kls = [], []
    for start in range(0, val.shape[0], 2000):
        z, kl = model.codes(val[start : start + 2000], n_samples)
        zs.append(z)
        kls.append(kl)
    return torch.cat(zs), torch.cat(kls)


# ---------------------------------------------------------------------------------------------- report


def _write_figure(out_dir: Path, df: pd.DataFrame, dictionaries: dict[str, np.ndarray], patch_size: int) -> Path:
    fig = report.new_figure((5 + 4 * len(dictionaries), 4.2), layout=None)
    axes = np.atleast_1d(fig.subplots(1, 1 + len(dictionaries)))
    means = df.groupby("method", sort=False)["val_loss"].agg(["mean", "std"])
    pos = np.arange(len(means))
    axes[0].bar(pos - 0.2, means["mean"], 0.4, yerr=means["std"].fillna(0), label="ours")
    axes[0].bar(pos + 0.2, [PAPER_TABLE1[m]["val_loss"] for m in means.index], 0.4, label="paper (J=20)")
    axes[0].set_xticks(pos, [m.replace("thresholded_", "thr. ") for m in means.index], rotation=30, ha="right")
    axes[0].set_yscale("log")
    axes[0].set_ylabel("validation loss (Eq. 10)")
    axes[0].legend(fontsize=8)
    for ax, (name, A) in zip(axes[1:], dictionaries.items(), strict=True):
        order = np.argsort(-np.linalg.norm(A, axis=0))[:64]
        n = int(math.ceil(math.sqrt(len(order))))
        tile = np.ones((n * (patch_size + 1), n * (patch_size + 1))) * np.nan
        for i, k in enumerate(order):
            atom = A[:, k].reshape(patch_size, patch_size)
            atom = atom / (np.abs(atom).max() + 1e-12)
            r, c = divmod(i, n)
            tile[r * (patch_size + 1) : r * (patch_size + 1) + patch_size,
                 c * (patch_size + 1) : c * (patch_size + 1) + patch_size] = atom  # fmt: skip
        ax.imshow(tile, cmap="gray", vmin=-1, vmax=1)
        ax.set_title(f"{name}: 64 largest atoms", fontsize=10)
        ax.axis("off")
    fig.tight_layout()
    return report.save_figure(fig, out_dir / "patches.png")


# ---------------------------------------------------------------------------------------------- runner
def run_patches(
    out: str | os.PathLike[str],
    *,
    seeds: int = 3,
    quick: bool = False,
    max_epochs: int | None = None,
    n_threads: int | None = 1,
    verbose: bool = True,
    n_train: int | None = None,
    n_val: int | None = None,
    methods: Sequence[str] = METHODS,
    n_samples: int | None = None,
    batch_size: int | None = None,
    n_hidden: int | None = None,
    n_layers: int | None = None,
    fista_iters: int | None = None,
    device: str | None = "cpu",
    images: np.ndarray | None = None,
) -> pd.DataFrame:
    """Fallah & Rozell's (2022) linear-generator benchmark on whitened image patches (Table 1).

    Every method (FISTA and the variational priors) learns a 256-atom dictionary on the same training
    patches with the same seeds and is scored on the same validation patches; see the module docstring
    and ``summary.md`` for the objective and the metrics.

    Parameters
    ----------
    out
        Output folder; receives ``results.csv``, ``summary.md`` and ``patches.png``.
    seeds
        Number of seeds (model initialisations and minibatch orders), ``0 .. seeds - 1`` (paper: 3).
    quick
        Smoke run: 1000 patches, 2 epochs, small networks, 64 atoms.
    max_epochs
        Epochs, overriding ``quick`` and the paper's 300.
    n_threads
        Torch intra-op threads (restored afterwards); ``None`` leaves the setting alone.
    verbose
        Print progress and the table.
    n_train, n_val
        Numbers of patches (paper: 80,000 and 16,000).
    methods
        Subset of :data:`METHODS`.
    n_samples
        ``J`` of max-ELBO sampling (paper: 20).
    batch_size
        Minibatch size (paper: 100).
    n_hidden, n_layers
        Width and depth of the inference network's MLP (default 512 and 3; the paper: 512-1024-512-256).
    fista_iters
        FISTA iterations per minibatch while learning the dictionary (default 100); the validation codes
        always get at least 200.
    device
        ``"cpu"``, ``"cuda"`` or ``"auto"``.
    images
        Images to cut patches from (default: the Olshausen images from the registry).

    Returns
    -------
    pandas.DataFrame
        One row per method and seed with :data:`RESULT_COLUMNS`.

    Examples
    --------
    >>> from scsparse.generic.benchmarks import run
    >>> df = run("patches", out="bench_patches", quick=True)  # doctest: +SKIP
    """
    check_integer("seeds", seeds)
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"methods must be a non-empty subset of {METHODS}, got unknown {unknown}")
    cfg = run_settings(PATCH_SETTINGS, QUICK_SETTINGS, quick, n_train=n_train, n_val=n_val, n_samples=n_samples,
                       batch_size=batch_size, encoder_hidden=n_hidden, encoder_layers=n_layers,
                       fista_iters=fista_iters)  # fmt: skip
    if max_epochs is not None:
        check_integer("max_epochs", max_epochs)
    epochs = int(max_epochs) if max_epochs is not None else int(cfg["max_epochs"])
    dev = _resolve_device(device)
    out_dir = report.make_output_dir(out)
    options = report.run_options(None, int(seeds), quick, max_epochs, epochs_used=epochs, methods=list(methods),
                                 device=str(dev), n_threads=n_threads, **{k: cfg[k] for k in ("n_train", "n_val",
                                 "n_atoms", "n_samples", "batch_size", "encoder_hidden", "encoder_layers",
                                 "fista_iters")})  # fmt: skip
    rows: list[dict[str, Any]] = []
    dictionaries: dict[str, np.ndarray] = {}
    with torch_threads(n_threads):
        prov = report.provenance("patches", options)
        data = load_patch_data(cfg["n_train"], cfg["n_val"], cfg["patch_size"], images=images)
        train = torch.as_tensor(data.train, device=dev)
        val = torch.as_tensor(data.val, device=dev)
        for seed in range(int(seeds)):
            for method in methods:
                start = time.perf_counter()
                progress = _progress_printer(method, seed, start) if verbose else None
                if method == "fista":
                    A = _fit_fista(train, cfg, epochs, seed, dev, progress)
                    z = torch.cat([fista(val[i : i + 2000], A, cfg["lambda_l1"], max(cfg["fista_iters"], 200))
                                   for i in range(0, val.shape[0], 2000)])  # fmt: skip
                    kl = None
                else:
                    model = _fit_variational(train, method, cfg, epochs, seed, dev, progress)
                    A = model.A.detach()
                    torch.manual_seed(10_000 + seed)
                    z, kl = _encode_val(model, val, cfg["n_samples"])
                fit_seconds = time.perf_counter() - start
                scores = _score(val, A, z, kl, cfg["lambda_l1"])
                row = {"method": method, "seed": seed,
                       "n_samples": 0 if method == "fista" else cfg["n_samples"], **scores,
                       "fit_seconds": fit_seconds}  # fmt: skip
                rows.append(row)
                if seed == 0 and method in ("fista", "thresholded_laplace"):
                    dictionaries[method] = A.cpu().numpy()
                if verbose:
                    print(
                        f"[patches] {method} seed={seed}: val_loss={scores['val_loss']:.1f} "
                        f"(recon {scores['val_recon']:.1f}, l1 {scores['val_l1']:.2f}) MI={scores['multi_info']:.1f} "
                        f"nonzero={scores['frac_nonzero']:.3f} post.coll={scores['posterior_collapse']:.3f} "
                        f"feat.coll={scores['feature_collapse']:.3f} ({fit_seconds:.1f} s)",
                        flush=True,
                    )
    df = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    report.write_results(df, out_dir, RESULT_COLUMNS)
    summary = report.write_summary(out_dir, summary_lines(df, prov, cfg, epochs, int(seeds)))
    _write_figure(out_dir, df, dictionaries, cfg["patch_size"])
    return report.finish_run(df, out_dir, summary.read_text(encoding="utf-8"), verbose=verbose)
