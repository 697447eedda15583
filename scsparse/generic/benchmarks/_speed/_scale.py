"""Scaling of scsparse SparseVAE training: peak memory against genes, epoch time and memory against cells.

Every measurement trains in a fresh Python process, so its peak resident memory (``ru_maxrss`` of that
process) belongs to that one job and nothing else: no earlier run, no benchmark harness. The counts are
simulated negative-binomial data written to a temporary h5ad file chunk by chunk (the writer never holds
the whole matrix), and the child either loads the file or opens it backed (``.X`` read from disk one
minibatch at a time).

- :func:`gene_scaling` — peak memory and time per step/epoch for several numbers of genes at a fixed batch
  size (target: ``G = 20,000`` at batch 128 within 6 GB).
- :func:`cell_scaling` — time per epoch and peak memory for several numbers of cells read from a backed
  ``.X`` (target: time linear in ``N``, memory flat: ``N = 200k`` within 20% of ``N = 10k``).

Both return tidy DataFrames (one row per size); the ``speed`` benchmark reports them.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scsparse.utils import check_integer

from .._process import proc_status_mb

__all__ = ["SCALE_COLUMNS", "cell_scaling", "gene_scaling", "write_simulated_h5ad"]

SCALE_COLUMNS = [
    "experiment",
    "n_genes",
    "n_cells",
    "batch_size",
    "backed",
    "device",
    "epochs",
    "n_steps_per_epoch",
    "steps_run",
    "epoch_extrapolated",
    "seconds_per_epoch",
    "seconds_per_step",
    "setup_seconds",
    "peak_memory_mb",
    "rss_after_import_mb",
    "cuda_peak_memory_mb",
    "file_mb",
    "nnz",
    "wall_seconds",
]

_RESULT_MARK = "SCSPARSE_SCALE_RESULT "
_WRITE_ELEMENTS = 2**22  # values simulated per chunk while writing (about 32 MB of float64)


# ---------------------------------------------------------------------- simulated counts on disk
def simulation_parameters(rng: np.random.Generator, n_genes: int, n_programmes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gene means (log-normal, median 0.5, at least 0.1) and the programme each gene follows."""
    gene_mean = np.maximum(rng.lognormal(mean=np.log(0.5), sigma=1.0, size=n_genes), 0.1)
    return gene_mean, rng.integers(0, n_programmes, size=n_genes)


def simulate_rows(
    rng: np.random.Generator, start: int, stop: int, n_cells: int, gene_mean: np.ndarray, owner: np.ndarray
) -> np.ndarray:
    """Negative-binomial counts (gamma-Poisson, dispersion 2) for cells ``start..stop-1`` of a factor model."""
    n_rows, n_genes = stop - start, gene_mean.size
    n_programmes = int(owner.max()) + 1
    z = rng.normal(size=(n_rows, n_programmes))
    library = rng.lognormal(mean=0.0, sigma=0.3, size=(n_rows, 1))
    mu = gene_mean[None, :] * library * np.exp(0.6 * z[:, owner] - 0.18)
    counts = rng.poisson(rng.gamma(shape=2.0, scale=mu / 2.0)).astype(np.float32)
    # every gene and every cell gets at least one count: gene j adds one to cell j mod n_cells
    genes = np.flatnonzero((np.arange(n_genes) % n_cells >= start) & (np.arange(n_genes) % n_cells < stop))
    counts[genes % n_cells - start, genes] += 1.0
    empty = np.flatnonzero(counts.sum(1) == 0)
    counts[empty, (start + empty) % n_genes] = 1.0
    return counts


def write_simulated_h5ad(
    path: str | os.PathLike[str], n_cells: int, n_genes: int, *, seed: int = 0, n_programmes: int = 10
) -> dict[str, float]:
    """Write simulated counts (CSR in ``.X``) to an h5ad file in row chunks, never holding the whole matrix.

    Counts follow a negative binomial (gamma-Poisson with shape 2) around a sparse factor model: each gene
    follows one of ``n_programmes`` cell programmes; gene means are log-normal (median 0.5, at least 0.1),
    library sizes log-normal. Every gene and every cell has at least one count, as the models require.
    The file opens with ``anndata.read_h5ad(path, backed="r")`` and holds nothing but ``X``, ``obs``
    and ``var``.

    Parameters
    ----------
    path
        Output ``.h5ad`` file (overwritten).
    n_cells, n_genes
        Size of the matrix.
    seed
        Seed of the simulation.
    n_programmes
        Number of cell programmes.

    Returns
    -------
    dict
        ``nnz`` (stored non-zeros), ``file_mb`` (file size), ``write_seconds``.

    Examples
    --------
    >>> info = write_simulated_h5ad("counts.h5ad", n_cells=10_000, n_genes=2_000)  # doctest: +SKIP
    >>> anndata.read_h5ad("counts.h5ad", backed="r")  # doctest: +SKIP
    """
    import anndata as ad
    import h5py
    import scipy.sparse as sp

    if n_cells < 1 or n_genes < 1:
        raise ValueError(f"Need at least one cell and one gene, got n_cells={n_cells}, n_genes={n_genes}.")
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    gene_mean, owner = simulation_parameters(rng, n_genes, n_programmes)
    rows = max(1, _WRITE_ELEMENTS // n_genes)
    nnz = 0
    with h5py.File(path, "w") as f:
        ad.io.write_elem(f, "obs", pd.DataFrame(index=pd.Index([f"cell{i}" for i in range(n_cells)])))
        ad.io.write_elem(f, "var", pd.DataFrame(index=pd.Index([f"gene{j}" for j in range(n_genes)])))
        matrix = None
        for start in range(0, n_cells, rows):
            stop = min(start + rows, n_cells)
            block = sp.csr_matrix(simulate_rows(rng, start, stop, n_cells, gene_mean, owner))
            nnz += block.nnz
            if matrix is None:
                ad.io.write_elem(f, "X", block)
                matrix = ad.io.sparse_dataset(f["X"])
            else:
                matrix.append(block)
    return {"nnz": float(nnz), "file_mb": Path(path).stat().st_size / 2**20, "write_seconds": time.perf_counter() - t0}


# ---------------------------------------------------------------------- the job in the child process
def _rss_mb() -> float:
    """Peak resident memory of this program so far, in MB.

    On Linux the high-water mark of the process's own memory (``VmHWM``): ``ru_maxrss`` is carried over
    ``exec`` from the process that forked it, so a child started from a large parent (a test runner with CUDA
    torch loaded) would report the parent's size. Elsewhere ``ru_maxrss`` (bytes on macOS).
    """
    peak_mb = proc_status_mb("VmHWM")
    if peak_mb == peak_mb:
        return peak_mb
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / 2**20


def _train_job(spec: dict[str, Any]) -> dict[str, Any]:
    """Train SparseVAE on ``spec["path"]`` as the spec says and return timings and peak memory.

    Runs in the child process made by :func:`_run_in_subprocess` (callable directly for debugging).
    """
    import torch

    torch.set_num_threads(int(spec["n_threads"]))
    import anndata as ad
    from lightning.pytorch.callbacks import Callback

    from scsparse.generic.benchmarks._process import quiet_training_logs
    from scsparse.model import SparseVAE

    class StepTimer(Callback):
        """Wall time of each epoch and of each step (batch end to batch end: data loading included)."""

        def __init__(self) -> None:
            self.epoch_seconds: list[float] = []
            self.epoch_steps: list[int] = []
            self.step_seconds: list[float] = []
            self.full_epoch_steps = 0

        def on_train_epoch_start(self, trainer, pl_module) -> None:
            self.full_epoch_steps = int(trainer.num_training_batches)
            self.epoch_start = self.last = time.perf_counter()
            self.epoch_steps.append(0)

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            now = time.perf_counter()
            self.step_seconds.append(now - self.last)
            self.last = now
            self.epoch_steps[-1] += 1

        def on_train_epoch_end(self, trainer, pl_module) -> None:
            self.epoch_seconds.append(time.perf_counter() - self.epoch_start)

    rss_import = _rss_mb()
    device = spec["device"]
    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    with quiet_training_logs():
        adata = ad.read_h5ad(spec["path"], backed="r" if spec["backed"] else None)
        SparseVAE.setup_anndata(adata)
        model = SparseVAE(adata, n_latent=spec["n_latent"], n_hidden=spec["n_hidden"], seed=spec["seed"])
        setup_seconds = time.perf_counter() - t0
        timer = StepTimer()
        model.train(
            max_epochs=spec["epochs"],
            batch_size=spec["batch_size"],
            train_size=1.0,
            stop_when_settled=False,  # timed epochs, nothing to settle
            accelerator="gpu" if cuda else "cpu",
            devices=[int(device.split(":")[1])] if ":" in device else 1,
            enable_progress_bar=False,
            enable_model_summary=False,
            logger=False,
            enable_checkpointing=False,
            callbacks=[timer],
            **({"max_steps": spec["max_steps"]} if spec.get("max_steps") else {}),
        )
    full = [i for i, n in enumerate(timer.epoch_steps) if n == timer.full_epoch_steps and i < len(timer.epoch_seconds)]
    if full:  # whole epochs ran: median over those after the first (warm-up) when there are several
        timed = full[1:] if len(full) > 1 else full
        seconds_per_epoch = float(np.median([timer.epoch_seconds[i] for i in timed]))
        seconds_per_step = float(
            np.sum([timer.epoch_seconds[i] for i in timed]) / np.sum([timer.epoch_steps[i] for i in timed])
        )
        extrapolated = False
    else:  # max_steps cut the epoch: mean step time after a short warm-up, times the steps of an epoch
        steps = timer.step_seconds[min(5, len(timer.step_seconds) // 4) :]
        seconds_per_step = float(np.mean(steps))
        seconds_per_epoch = seconds_per_step * timer.full_epoch_steps
        extrapolated = True
    return {
        "epochs": len(timer.epoch_steps),
        "n_steps_per_epoch": timer.full_epoch_steps,
        "steps_run": int(np.sum(timer.epoch_steps)),
        "epoch_extrapolated": extrapolated,
        "seconds_per_epoch": seconds_per_epoch,
        "seconds_per_step": seconds_per_step,
        "setup_seconds": setup_seconds,
        "peak_memory_mb": _rss_mb(),
        "rss_after_import_mb": rss_import,
        "cuda_peak_memory_mb": torch.cuda.max_memory_allocated() / 2**20 if cuda else float("nan"),
    }


def _child_main() -> None:
    """Entry point of the child: read the job spec from stdin, print the result on a marked line."""
    spec = json.loads(sys.stdin.read())
    print(_RESULT_MARK + json.dumps(_train_job(spec)), flush=True)


def _run_in_subprocess(spec: dict[str, Any], timeout: float | None) -> dict[str, Any]:
    """Run :func:`_train_job` in a fresh interpreter (single-threaded BLAS/OpenMP) and parse its result."""
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(spec["n_threads"])
    code = "from scsparse.generic.benchmarks._speed._scale import _child_main; _child_main()"
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    wall = time.perf_counter() - t0
    lines = [line for line in proc.stdout.splitlines() if line.startswith(_RESULT_MARK)]
    if proc.returncode != 0 or not lines:
        tail = "\n".join((proc.stderr or proc.stdout).splitlines()[-25:])
        raise RuntimeError(
            f"The scaling job (n_cells={spec['n_cells']}, n_genes={spec['n_genes']}) failed with exit code "
            f"{proc.returncode}. Its last output:\n{tail}"
        )
    return {**json.loads(lines[-1][len(_RESULT_MARK) :]), "wall_seconds": wall}


def _check_sizes(name: str, sizes: Sequence[int]) -> list[int]:
    values = [int(s) for s in sizes]
    if not values or min(values) < 1:
        raise ValueError(f"{name} must be a non-empty sequence of positive sizes, got {sizes!r}.")
    return values


def _measure(
    experiment: str,
    sizes: Sequence[tuple[int, int]],
    *,
    batch_size: int,
    backed: bool,
    device: str,
    epochs: int,
    max_steps: int | None,
    n_latent: int,
    n_hidden: int,
    n_threads: int,
    seed: int,
    workdir: str | os.PathLike[str] | None,
    timeout: float | None,
    verbose: bool,
) -> pd.DataFrame:
    check_integer("batch_size", batch_size)
    check_integer("epochs", epochs)
    if not (device == "cpu" or device.startswith("cuda")):
        raise ValueError(f"device must be 'cpu' or 'cuda[:i]', got {device!r}.")
    rows = []
    with tempfile.TemporaryDirectory(prefix="scsparse_scale_", dir=workdir) as tmp:
        for n_cells, n_genes in sizes:
            path = Path(tmp) / f"counts_{n_cells}x{n_genes}.h5ad"
            info = write_simulated_h5ad(path, n_cells, n_genes, seed=seed)
            spec = {
                "path": str(path),
                "n_cells": n_cells,
                "n_genes": n_genes,
                "batch_size": int(batch_size),
                "backed": bool(backed),
                "device": device,
                "epochs": int(epochs),
                "max_steps": max_steps,
                "n_latent": int(n_latent),
                "n_hidden": int(n_hidden),
                "n_threads": int(n_threads),
                "seed": int(seed),
            }
            result = _run_in_subprocess(spec, timeout)
            row = {
                "experiment": experiment,
                "n_genes": n_genes,
                "n_cells": n_cells,
                "batch_size": int(batch_size),
                "backed": bool(backed),
                "device": device,
                "file_mb": info["file_mb"],
                "nnz": int(info["nnz"]),
                **result,
            }
            rows.append(row)
            path.unlink()
            if verbose:
                print(
                    f"[scale] {experiment}: {n_cells} cells x {n_genes} genes: "
                    f"{row['seconds_per_epoch']:.2f} s/epoch ({row['n_steps_per_epoch']} steps), "
                    f"peak RSS {row['peak_memory_mb']:.0f} MB",
                    flush=True,
                )
    return pd.DataFrame(rows).loc[:, SCALE_COLUMNS]


def gene_scaling(
    n_genes: Sequence[int] = (2_000, 5_000, 20_000),
    *,
    batch_size: int = 128,
    n_cells: int = 2_048,
    device: str = "cpu",
    backed: bool = False,
    epochs: int = 2,
    max_steps: int | None = None,
    n_latent: int = 20,
    n_hidden: int = 128,
    n_threads: int = 1,
    seed: int = 0,
    workdir: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
    verbose: bool = False,
) -> pd.DataFrame:
    """Peak memory and training time of SparseVAE for several numbers of genes, one fresh process each.

    For each ``G`` in ``n_genes``, simulated counts (``n_cells x G``) are written to a temporary h5ad file
    and a child process loads them (or opens them backed), builds a default SparseVAE and trains ``epochs``
    epochs at ``batch_size``. The child's peak resident memory covers everything it did: Python, torch and
    scvi-tools (``rss_after_import_mb`` is the part that was there before any data), the data, the model,
    and the activations of the largest training step.

    Parameters
    ----------
    n_genes
        Numbers of genes to measure.
    batch_size
        Minibatch size (memory grows with ``batch_size x G``).
    n_cells
        Cells of the simulated data (its size matters little: ``batch_size`` cells are on the step at once).
    device
        ``"cpu"`` or ``"cuda"``/``"cuda:i"``; on CUDA ``cuda_peak_memory_mb`` is
        ``torch.cuda.max_memory_allocated``.
    backed
        Open the file backed (``.X`` read per minibatch) instead of loading it.
    epochs
        Epochs per run; times are medians over the epochs after the first (warm-up) when ``epochs > 1``.
    max_steps
        Stop each run after this many steps (``None``: whole epochs). When that cuts the first epoch short,
        ``seconds_per_step`` is the mean time per step (data loading included, the first steps left out as
        warm-up) and ``seconds_per_epoch`` is that times the steps of a full epoch (``epoch_extrapolated``).
    n_latent, n_hidden
        Model size (defaults: SparseVAE's).
    n_threads
        Torch / BLAS threads of the child.
    seed
        Seed of the simulation and the model.
    workdir
        Folder for the temporary h5ad files (default: the system's temporary folder).
    timeout
        Seconds allowed per run; ``None`` waits.
    verbose
        Print one line per run.

    Returns
    -------
    pandas.DataFrame
        One row per size with the columns of :data:`SCALE_COLUMNS` (``experiment == "genes"``); memory in MB
        (2**20 bytes), times in seconds.

    Examples
    --------
    >>> df = gene_scaling(n_genes=(2_000, 20_000), batch_size=128)  # doctest: +SKIP
    >>> df[["n_genes", "peak_memory_mb", "seconds_per_step"]]  # doctest: +SKIP
    """
    check_integer("n_cells", n_cells)
    sizes = [(int(n_cells), g) for g in _check_sizes("n_genes", n_genes)]
    return _measure(
        "genes",
        sizes,
        batch_size=batch_size,
        backed=backed,
        device=device,
        epochs=epochs,
        max_steps=max_steps,
        n_latent=n_latent,
        n_hidden=n_hidden,
        n_threads=n_threads,
        seed=seed,
        workdir=workdir,
        timeout=timeout,
        verbose=verbose,
    )


def cell_scaling(
    n_cells: Sequence[int] = (10_000, 50_000, 200_000),
    *,
    n_genes: int = 2_000,
    batch_size: int = 128,
    backed: bool = True,
    device: str = "cpu",
    epochs: int = 1,
    max_steps: int | None = None,
    n_latent: int = 20,
    n_hidden: int = 128,
    n_threads: int = 1,
    seed: int = 0,
    workdir: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
    verbose: bool = False,
) -> pd.DataFrame:
    """Time per epoch and peak memory of SparseVAE for several numbers of cells, one fresh process each.

    For each ``N`` in ``n_cells``, simulated counts (``N x n_genes``, CSR) are written chunk by chunk to a
    temporary h5ad file, and a child process opens it backed (``anndata.read_h5ad(path, backed="r")``,
    counts in ``.X``), sets up and checks the data (one streamed pass, ``setup_seconds``) and trains
    ``epochs`` full epochs on all cells. With backed data the time per epoch should grow linearly in ``N``
    and the peak memory should not grow.

    Parameters
    ----------
    n_cells
        Numbers of cells to measure.
    n_genes
        Genes of the simulated data.
    batch_size
        Minibatch size.
    backed
        Read ``.X`` from disk (``True``) or load the file into memory (``False``, for comparison).
    device, epochs, max_steps, n_latent, n_hidden, n_threads, seed, workdir, timeout, verbose
        As in :func:`gene_scaling` (here one epoch by default: the first epoch is the measurement).

    Returns
    -------
    pandas.DataFrame
        One row per size with the columns of :data:`SCALE_COLUMNS` (``experiment == "cells"``).

    Examples
    --------
    >>> df = cell_scaling(n_cells=(10_000, 200_000))  # doctest: +SKIP
    >>> df["peak_memory_mb"].iloc[-1] / df["peak_memory_mb"].iloc[0]  # doctest: +SKIP
    """
    check_integer("n_genes", n_genes)
    sizes = [(n, int(n_genes)) for n in _check_sizes("n_cells", n_cells)]
    return _measure(
        "cells",
        sizes,
        batch_size=batch_size,
        backed=backed,
        device=device,
        epochs=epochs,
        max_steps=max_steps,
        n_latent=n_latent,
        n_hidden=n_hidden,
        n_threads=n_threads,
        seed=seed,
        workdir=workdir,
        timeout=timeout,
        verbose=verbose,
    )
