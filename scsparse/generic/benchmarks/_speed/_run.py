"""``scsparse bench speed``: how fast the sparse VAE trains, measured side by side in one run.

On the same simulated counts, with the same batch size and architecture:

- **epoch** — time per training epoch of :class:`scsparse.model.SparseVAE`, of the same model with the
  decoder run gene by gene (the reference algorithm, :class:`PerGeneLoopDecoder`), and of
  :class:`scvi.model.SCVI` with the same hidden size, latent size and batch size; ratios between them.
- **step** — the loss of one batch through the vectorised and the per-gene decoders with the same weights
  (they must agree), and the time of one training step of each.
- **flops** — achieved decoder FLOP/s of a training step (forward and backward), against the FLOP/s of
  plain torch matmuls measured in the same run (one of the decoder's own shape and a large square one).
- **sparsity** — the learned sparsity of ``W`` after training, and the share of the decoder's first-layer
  work a gene needs when it only computes its active factors.
- **memory / cells** — peak memory for several numbers of genes at batch size 128 and epoch time and
  peak memory for several numbers of cells read from a backed ``.X``, each training run in a fresh
  process (:mod:`._scale`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scsparse.utils import check_integer, torch_threads

from .. import _report as report
from .._process import quiet_training_logs
from .._settings import chosen_names
from ._consensus import consensus_rows
from ._pergene import per_gene_loop_copy
from ._settled import SETTLED_LATENTS, settled_rows
from ._summary import summary_lines
from ._time_to_fit import TIME_TO_FIT_DATASETS, time_to_fit_rows
from ._timing import SCVI_DEFAULT_LATENT, EpochTimer, scvi_epoch_seconds, sync_device, timed_train_kwargs

__all__ = ["RESULT_COLUMNS", "SECTIONS", "decoder_step_flops", "run_speed", "simulate_counts"]

#: The sections of the benchmark, in the order they run (``epoch`` includes the training step against the loop).
SECTIONS: list[str] = ["epoch", "flops", "sparsity", "settled", "scale", "time_to_fit", "consensus"]
#: Sections a full run leaves out unless named (``consensus`` takes about 25 single fits); quick runs run them all.
NAMED_ONLY: frozenset[str] = frozenset({"consensus"})

#: Columns of ``results.csv`` (long format: one measurement per row).
RESULT_COLUMNS = [
    "section",
    "dataset",
    "method",
    "n_genes",
    "n_cells",
    "batch_size",
    "device",
    "metric",
    "value",
    "unit",
    "seed",
]


def simulate_counts(n_cells: int, n_genes: int, n_programmes: int = 10, seed: int = 0):
    """Simulated counts in memory, as an AnnData with a ``"counts"`` layer (CSR; a copy in ``X``).

    The same model as the on-disk counts of the scaling runs (:func:`._scale.write_simulated_h5ad`): each
    gene follows one of ``n_programmes`` cell programmes (``var["programme"]``) at 0.6 log-fold per sd of the
    programme, negative-binomial counts around log-normal gene means (median 0.5) and library sizes, at least
    one count in every gene and cell.

    Examples
    --------
    >>> adata = simulate_counts(100, 50, seed=1)
    >>> adata.layers["counts"].shape
    (100, 50)
    """
    import anndata as ad
    import scipy.sparse as sp

    from ._scale import simulate_rows, simulation_parameters

    rng = np.random.default_rng(seed)
    gene_mean, owner = simulation_parameters(rng, n_genes, n_programmes)
    x = sp.csr_matrix(simulate_rows(rng, 0, n_cells, n_cells, gene_mean, owner))
    adata = ad.AnnData(x.copy())
    adata.layers["counts"] = x
    adata.obs_names = [f"cell{i}" for i in range(n_cells)]
    adata.var_names = [f"gene{j}" for j in range(n_genes)]
    adata.var["programme"] = owner  # the programme each gene follows (the true support)
    return adata


def decoder_step_flops(
    n_genes: int, batch_size: int, n_latent: int, n_hidden: int, n_layers: int = 1, n_heads: int = 1
) -> float:
    """Matmul FLOPs of one decoder training step (forward and backward) of the masked decoder.

    The first layer is a ``(G*B, K) x (K, H)`` product, each further hidden layer ``(G*B, H) x (H, H)`` and the
    output heads ``G*B*H`` multiply-adds per head; the backward pass costs twice the forward (gradients with
    respect to inputs and weights). Element-wise work and recomputation under checkpointing are not counted.

    Examples
    --------
    >>> decoder_step_flops(2000, 128, 20, 128) / 1e9
    4.128768
    """
    rows = n_genes * batch_size
    forward = 2 * rows * (n_latent * n_hidden + (n_layers - 1) * n_hidden * n_hidden + n_hidden * n_heads)
    return 3.0 * forward


def _time_call(fn: Callable[[], Any], repeats: int) -> float:
    """Median wall time of ``fn()`` over ``repeats`` calls after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _epoch_rows(
    adata,
    *,
    epochs: int,
    loop_epochs: int,
    rounds: int,
    batch_size: int,
    n_hidden: int,
    n_latent: int,
    device: str,
    seed: int,
    verbose: bool,
) -> tuple[list[dict[str, Any]], Any]:
    """Epoch times of SparseVAE, the per-gene loop and SCVI; returns the rows and the first trained SparseVAE.

    SparseVAE and SCVI train in turn, ``rounds`` times each, each time a fresh model for ``epochs`` epochs, so
    that a slow spell of a shared machine falls on both sides of a ratio: the ratio is the median of the rounds'
    ratios (``ratio_lowest`` and ``ratio_highest`` give their range), an epoch time the median of the rounds'.
    Both are also timed at K = :data:`SCVI_DEFAULT_LATENT` (SCVI's default) when ``n_latent`` differs from it.
    """
    from scsparse.model import SparseVAE

    base = {"section": "epoch", "n_genes": adata.n_vars, "n_cells": adata.n_obs, "batch_size": batch_size}

    def row(method: str, metric: str, value: float, unit: str) -> dict[str, Any]:
        return {**base, "method": method, "metric": metric, "value": value, "unit": unit}

    def sparsevae(k: int, loop: bool = False):
        SparseVAE.setup_anndata(adata, layer="counts")
        model = SparseVAE(adata, n_latent=k, n_hidden=n_hidden, seed=seed)
        if loop:
            model.module.decoder = per_gene_loop_copy(model.module.decoder)
        timer = EpochTimer(device)
        model.train(
            max_epochs=loop_epochs if loop else epochs, seed=seed, **timed_train_kwargs(device, batch_size, timer)
        )
        return model, timer.per_epoch()

    def scvi_epoch(k: int) -> float:
        return scvi_epoch_seconds(
            adata, n_latent=k, n_hidden=n_hidden, epochs=epochs, batch_size=batch_size, device=device, seed=seed
        )

    def in_turn(k: int, suffix: str = "") -> tuple[Any, float, list[dict[str, Any]]]:
        """SparseVAE and SCVI at ``k`` factors in alternating rounds: the first model, its median epoch, rows."""
        first, ours, theirs = None, [], []
        for _ in range(rounds):
            model, t = sparsevae(k)
            if first is None:
                first = model
            ours.append(t)
            theirs.append(scvi_epoch(k))
        ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
        fast = statistics.median(ours)
        method = f"SparseVAE / SCVI{suffix}"
        rows = [
            row(f"scsparse SparseVAE{suffix}", "seconds_per_epoch", fast, "s"),
            row(f"scvi-tools SCVI{suffix}", "seconds_per_epoch", statistics.median(theirs), "s"),
            row(method, "ratio", statistics.median(ratios), "x"),
            row(method, "ratio_lowest", min(ratios), "x"),
            row(method, "ratio_highest", max(ratios), "x"),
        ]
        return first, fast, rows

    sparse, fast, rows = in_turn(n_latent)
    _, loop = sparsevae(n_latent, loop=True)
    rows += [
        row("per-gene loop (reference algorithm)", "seconds_per_epoch", loop, "s"),
        row("per-gene loop / SparseVAE", "ratio", loop / fast, "x"),
    ]
    other_k = SCVI_DEFAULT_LATENT if n_latent != SCVI_DEFAULT_LATENT else None
    if other_k is not None:
        rows += in_turn(other_k, suffix=f", K = {other_k}")[2]
    if verbose:
        print(f"  epoch: {_epoch_line(rows, rounds, other_k)}", flush=True)
    return rows, sparse


def _epoch_line(rows: list[dict[str, Any]], rounds: int, other_k: int | None) -> str:
    """The epoch section's rows in one printed line."""
    found = {(r["method"], r["metric"]): r["value"] for r in rows}
    fast = found[("scsparse SparseVAE", "seconds_per_epoch")]
    loop = found[("per-gene loop (reference algorithm)", "seconds_per_epoch")]

    def ratio(suffix: str = "") -> str:
        method = f"SparseVAE / SCVI{suffix}"
        lo, hi = found[(method, "ratio_lowest")], found[(method, "ratio_highest")]
        spread = f", rounds {lo:.2f}-{hi:.2f}x" if rounds > 1 else ""
        return f"SparseVAE/SCVI {found[(method, 'ratio')]:.2f}x{spread}"

    line = (
        f"SparseVAE {fast:.2f} s, per-gene loop {loop:.2f} s ({loop / fast:.1f}x), "
        f"SCVI {found[('scvi-tools SCVI', 'seconds_per_epoch')]:.2f} s ({ratio()}; median of {rounds} rounds)"
    )
    if other_k is not None:
        line += f"; at K = {other_k}: {ratio(f', K = {other_k}')}"
    return line


def _step_rows(
    model, adata, *, batch_size: int, device: str, repeats: int, verbose: bool
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Loss agreement and training-step time of the vectorised and per-gene decoders on one batch."""
    import torch

    module = model.module.to(device)
    module.train()
    x = torch.as_tensor(adata.layers["counts"][:batch_size].toarray(), dtype=torch.float32, device=device)
    tensors = {"X": x}
    n_obs = adata.n_obs

    def loss_of(mod) -> torch.Tensor:
        torch.manual_seed(0)
        _, _, out = mod(tensors, loss_kwargs={"n_obs": n_obs})
        return out.loss

    vectorised = module.decoder
    looped = per_gene_loop_copy(vectorised)
    with torch.no_grad():
        loss_vec = loss_of(module).item()
        module.decoder = looped
        loss_loop = loss_of(module).item()
        module.decoder = vectorised

    def step(dec) -> Callable[[], None]:
        def run() -> None:
            module.decoder = dec
            module.zero_grad(set_to_none=True)
            loss_of(module).backward()
            sync_device(device)

        return run

    t_vec = _time_call(step(vectorised), repeats)
    t_loop = _time_call(step(looped), max(1, repeats // 2))
    module.decoder = vectorised
    base = {"section": "step", "n_genes": adata.n_vars, "n_cells": batch_size, "batch_size": batch_size}
    rows = [
        {**base, "method": "scsparse SparseVAE", "metric": "loss", "value": loss_vec, "unit": "nats/cell"},
        {
            **base,
            "method": "per-gene loop (reference algorithm)",
            "metric": "loss",
            "value": loss_loop,
            "unit": "nats/cell",
        },
        {
            **base,
            "method": "vectorised vs loop",
            "metric": "abs_loss_difference",
            "value": abs(loss_vec - loss_loop),
            "unit": "nats/cell",
        },
        {**base, "method": "scsparse SparseVAE", "metric": "seconds_per_step", "value": t_vec, "unit": "s"},
        {
            **base,
            "method": "per-gene loop (reference algorithm)",
            "metric": "seconds_per_step",
            "value": t_loop,
            "unit": "s",
        },
        {**base, "method": "per-gene loop / SparseVAE", "metric": "ratio", "value": t_loop / t_vec, "unit": "x"},
    ]
    if verbose:
        print(
            f"  step: loss {loss_vec:.6f} vs loop {loss_loop:.6f}; {t_vec * 1e3:.1f} ms vs {t_loop * 1e3:.1f} ms "
            f"({t_loop / t_vec:.1f}x)",
            flush=True,
        )
    return rows, {"loss_vectorised": loss_vec, "loss_loop": loss_loop}


def _flops_rows(
    *, n_genes: int, batch_size: int, n_latent: int, n_hidden: int, device: str, repeats: int, verbose: bool
) -> list[dict[str, Any]]:
    """Achieved decoder FLOP/s of a training step against plain matmuls timed in the same run."""
    import torch

    from scsparse.nn import MaskedDecoder

    torch.manual_seed(0)
    # the decoder SparseVAE builds (its first-layer bias adds no matmul FLOPs)
    dec = MaskedDecoder(n_latent, n_genes, n_hidden=n_hidden).to(device)
    dec.train()
    z = torch.randn(batch_size, n_latent, device=device)

    def step() -> None:
        dec.zero_grad(set_to_none=True)
        dec(z).square().sum().backward()
        sync_device(device)

    t_step = _time_call(step, repeats)
    autograd = MaskedDecoder(n_latent, n_genes, n_hidden=n_hidden, fused=False).to(device)
    autograd.load_state_dict(dec.state_dict())

    def autograd_step() -> None:
        autograd.zero_grad(set_to_none=True)
        autograd(z).square().sum().backward()
        sync_device(device)

    t_autograd = _time_call(autograd_step, repeats)
    memory = {}
    if device.startswith("cuda"):  # the GPU memory each path's step takes, activations included
        for name, fn in (("scsparse decoder step", step), ("decoder step, autograd", autograd_step)):
            torch.cuda.reset_peak_memory_stats(device)
            before = torch.cuda.memory_allocated(device)
            fn()
            memory[name] = (torch.cuda.max_memory_allocated(device) - before) / 2**20
    errors = _float64_errors(dec, autograd, z)
    flops = decoder_step_flops(n_genes, batch_size, n_latent, n_hidden)
    achieved = flops / t_step
    chunk = dec.resolve_chunk_size(batch_size, z.device)
    a = torch.randn(chunk * batch_size, n_latent, device=device)
    b = torch.randn(n_latent, n_hidden, device=device)

    def same_shape() -> None:
        torch.matmul(a, b)
        sync_device(device)

    n_sq = 2048
    x = torch.randn(n_sq, n_sq, device=device)
    y = torch.randn(n_sq, n_sq, device=device)

    def square() -> None:
        torch.matmul(x, y)
        sync_device(device)

    same = 2.0 * a.shape[0] * n_latent * n_hidden / _time_call(same_shape, repeats)
    peak = 2.0 * n_sq**3 / _time_call(square, repeats)
    base = {"section": "flops", "n_genes": n_genes, "n_cells": batch_size, "batch_size": batch_size}
    rows = [
        {**base, "method": "scsparse decoder step", "metric": "seconds_per_step", "value": t_step, "unit": "s"},
        {**base, "method": "decoder step, autograd", "metric": "seconds_per_step", "value": t_autograd, "unit": "s"},
        {**base, "method": "autograd / decoder step", "metric": "ratio", "value": t_autograd / t_step, "unit": "x"},
        *(
            {**base, "method": name, "metric": "max_relative_error_float64", "value": error, "unit": ""}
            for name, error in errors.items()
        ),
        *(
            {**base, "method": name, "metric": "peak_memory_mb", "value": mb, "unit": "MB"}
            for name, mb in memory.items()
        ),
        {**base, "method": "scsparse decoder step", "metric": "gflops", "value": achieved / 1e9, "unit": "GFLOP/s"},
        {
            **base,
            "method": f"matmul ({a.shape[0]}x{n_latent}) @ ({n_latent}x{n_hidden})",
            "metric": "gflops",
            "value": same / 1e9,
            "unit": "GFLOP/s",
        },
        {**base, "method": f"matmul {n_sq}^3 (peak)", "metric": "gflops", "value": peak / 1e9, "unit": "GFLOP/s"},
        {**base, "method": "decoder / peak matmul", "metric": "fraction", "value": achieved / peak, "unit": ""},
        {**base, "method": "decoder / same-shape matmul", "metric": "fraction", "value": achieved / same, "unit": ""},
    ]
    if verbose:
        print(
            f"  flops: decoder {achieved / 1e9:.1f} GFLOP/s = {achieved / peak:.0%} of the square-matmul peak "
            f"({peak / 1e9:.1f}), {achieved / same:.0%} of a same-shape matmul ({same / 1e9:.1f}); "
            f"{t_step * 1e3:.1f} ms per step against {t_autograd * 1e3:.1f} ms through autograd op by op",
            flush=True,
        )
    return rows


def _float64_errors(dec, autograd, z) -> dict[str, float]:
    """Largest error of each path's output and gradients against the same decoder in float64 (relative to the
    largest value of each), on the batch ``z`` with random output weights.
    """
    import copy

    import torch

    exact = copy.deepcopy(autograd).double()
    generator = torch.Generator(z.device).manual_seed(1)
    weights = torch.randn(1, z.shape[0], dec.n_output, device=z.device, generator=generator)

    def grads(model, dtype) -> list:
        model.zero_grad(set_to_none=True)
        z_in = z.to(dtype).clone().requires_grad_(True)
        out = model(z_in)
        (out * weights.to(dtype)).sum().backward()
        return [out.detach(), z_in.grad, *(p.grad for p in model.parameters() if p.grad is not None)]

    reference = [t.double() for t in grads(exact, torch.float64)]
    errors = {}
    for name, model in (("scsparse decoder step", dec), ("decoder step, autograd", autograd)):
        pairs = zip(grads(model, torch.float32), reference, strict=True)
        errors[name] = max(float((g.double() - r).abs().max() / r.abs().max().clamp_min(1e-30)) for g, r in pairs)
    return errors


def _sparsity_model(
    adata, *, n_cells: int, epochs: int, batch_size: int, n_hidden: int, n_latent: int, device: str, seed: int
):
    """A SparseVAE trained long enough for its mask to settle, on the first ``n_cells`` cells."""
    from scsparse.model import SparseVAE

    sub = adata[: min(n_cells, adata.n_obs)].copy()
    SparseVAE.setup_anndata(sub, layer="counts")
    model = SparseVAE(sub, n_latent=n_latent, n_hidden=n_hidden, seed=seed)
    model.train(max_epochs=epochs, seed=seed, **timed_train_kwargs(device, batch_size, EpochTimer(device)))
    return model


def _sparsity_rows(model, *, batch_size: int, device: str, repeats: int, verbose: bool) -> list[dict[str, Any]]:
    """Learned sparsity of ``W`` and the decoder step with its spike pruned (same weights, same batch)."""
    import copy

    import torch

    pip = model.get_inclusion_probabilities().to_numpy()
    active = pip > 0.5
    n_genes, n_latent = active.shape
    per_gene = active.sum(axis=1)
    dense = model.module.decoder.to(device)
    pruned = copy.deepcopy(dense)
    pruned.prune_(torch.as_tensor(active, device=device))
    torch.manual_seed(0)
    z = torch.randn(batch_size, n_latent, device=device)
    with torch.no_grad():
        change = float((pruned(z) - dense(z)).abs().max())

    def step(dec) -> Callable[[], None]:
        def run() -> None:
            dec.zero_grad(set_to_none=True)
            dec(z).square().sum().backward()
            sync_device(device)

        return run

    dense.train()
    pruned.train()
    t_dense, t_pruned = _time_call(step(dense), repeats), _time_call(step(pruned), repeats)
    base = {"section": "sparsity", "n_genes": n_genes, "n_cells": model.adata.n_obs, "batch_size": batch_size}
    method = "scsparse SparseVAE"
    rows = [
        {**base, "method": method, "metric": "active_entries_fraction", "value": float(active.mean()), "unit": ""},
        {**base, "method": method, "metric": "active_factors", "value": float((active.sum(0) > 0).sum()), "unit": ""},
        {**base, "method": method, "metric": "genes_with_0_active", "value": float((per_gene == 0).mean()), "unit": ""},
        {**base, "method": method, "metric": "genes_with_1_active", "value": float((per_gene == 1).mean()), "unit": ""},
        {
            **base,
            "method": method,
            "metric": "genes_with_2plus_active",
            "value": float((per_gene >= 2).mean()),
            "unit": "",
        },
        {
            **base,
            "method": method,
            "metric": "decoder_first_bias",
            "value": float(dense.first_bias is not None),
            "unit": "",
        },
        {**base, "method": "decoder step, dense W", "metric": "seconds_per_step", "value": t_dense, "unit": "s"},
        {**base, "method": "decoder step, spike pruned", "metric": "seconds_per_step", "value": t_pruned, "unit": "s"},
        {**base, "method": "dense / spike pruned", "metric": "ratio", "value": t_dense / t_pruned, "unit": "x"},
        {**base, "method": "spike pruned vs dense", "metric": "max_abs_output_change", "value": change, "unit": ""},
    ]
    if verbose:
        print(
            f"  sparsity: {active.mean():.1%} of W in the slab; genes with 0 / 1 / 2+ active factors "
            f"{(per_gene == 0).mean():.1%} / {(per_gene == 1).mean():.1%} / {(per_gene >= 2).mean():.1%}; "
            f"decoder step dense {t_dense * 1e3:.1f} ms, spike pruned {t_pruned * 1e3:.1f} ms "
            f"({t_dense / t_pruned:.1f}x); max output change {change:.3g}",
            flush=True,
        )
    return rows


def _simulated_rows(
    adata,
    chosen: set[str],
    *,
    rounds: int,
    epochs: int,
    repeats: int,
    batch_size: int,
    n_hidden: int,
    n_latent: int,
    device: str,
    seed: int,
    quick: bool,
    sparsity_cells: int,
    sparsity_epochs: int,
    verbose: bool,
) -> list[dict[str, Any]]:
    """The chosen sections that run on the simulated counts of one seed."""
    rows: list[dict[str, Any]] = []
    common = {"batch_size": batch_size, "n_hidden": n_hidden, "device": device}
    if "epoch" in chosen:  # the training step is timed on the epoch section's first model
        new, model = _epoch_rows(
            adata, epochs=epochs, loop_epochs=1, rounds=rounds, n_latent=n_latent, seed=seed, verbose=verbose, **common
        )
        rows += new
        rows += _step_rows(model, adata, batch_size=batch_size, device=device, repeats=repeats, verbose=verbose)[0]
    if "flops" in chosen:
        rows += _flops_rows(n_genes=adata.n_vars, n_latent=n_latent, repeats=repeats, verbose=verbose, **common)
    if "sparsity" in chosen:
        sparse_model = _sparsity_model(
            adata, n_cells=sparsity_cells, epochs=sparsity_epochs, n_latent=n_latent, seed=seed, **common
        )
        rows += _sparsity_rows(sparse_model, batch_size=batch_size, device=device, repeats=repeats, verbose=verbose)
    if "settled" in chosen:
        rows += settled_rows(
            adata, latents=(5,) if quick else SETTLED_LATENTS, settle_cells=sparsity_cells,
            settle_epochs=sparsity_epochs, epochs=epochs, rounds=rounds, seed=seed, verbose=verbose, **common,
        )  # fmt: skip
    return rows


def chosen_sections(sections: str | Sequence[str] | None, quick: bool) -> set[str]:
    """The sections a run chose: those named, else every one (a full run leaves out :data:`NAMED_ONLY`).

    Examples
    --------
    >>> sorted(chosen_sections(None, quick=False)) == sorted(set(SECTIONS) - NAMED_ONLY)
    True
    >>> chosen_sections("consensus", quick=False)
    {'consensus'}
    """
    chosen = set(chosen_names(sections, SECTIONS, "section(s)"))
    return chosen - NAMED_ONLY if sections is None and not quick else chosen


def run_speed(
    out: str | Path,
    *,
    seeds: int = 1,
    quick: bool = False,
    max_epochs: int | None = None,
    device: str = "cpu",
    n_cells: int | None = None,
    n_genes: int | None = None,
    batch_size: int = 128,
    n_hidden: int = 128,
    n_latent: int = 20,
    scale: bool | None = None,
    sparsity_cells: int | None = None,
    sparsity_epochs: int | None = None,
    time_to_fit: bool | None = None,
    sections: str | Sequence[str] | None = None,
    datasets: str | Sequence[str] | None = None,
    n_threads: int | None = 1,
    verbose: bool = True,
) -> pd.DataFrame:
    """Time scsparse against the per-gene loop and SCVI on the same counts; write results and a summary.

    Parameters
    ----------
    out
        Output folder for ``results.csv`` and ``summary.md``.
    seeds
        Number of repetitions (different simulated data and initialisations).
    quick
        Small sizes (512 cells, 200 genes, 2 epochs) for a smoke test.
    max_epochs
        Epochs of SparseVAE and SCVI (default 3; the first is left out of the per-epoch median). The
        per-gene loop trains one epoch. SparseVAE and SCVI are timed in turn, three rounds of fresh models
        (quick: one), and their ratio is the median of the rounds'.
    device
        ``"cpu"`` or a CUDA device (``"cuda"``, ``"cuda:1"``).
    n_cells, n_genes
        Size of the simulated data (default 10,000 x 2,000; quick 512 x 200).
    batch_size, n_hidden, n_latent
        Shared by every method (defaults: the SparseVAE defaults, 128, 128 and 20).
    sparsity_cells, sparsity_epochs
        The learned sparsity is read from a model trained this long on this many of the cells (default 3,000
        cells, 40 epochs; quick: all cells, 2 epochs): three epochs are too few for the mask to settle.
    scale
        Also measure peak memory against the number of genes and epoch time / memory against the number of
        cells from a backed ``.X`` (default: on in full mode, off in quick mode).
    time_to_fit
        Also time default fits on real data to the point where they stop, against SCVI's default fit, with their
        quality (:mod:`._time_to_fit`; Kang and PBMC 3k, seed 0; default: on in full mode on the CPU, off
        otherwise; quick: Kang only, 300 cells).
    sections
        Sections to run, comma-separated or a list, from :data:`SECTIONS` (default: all but ``consensus`` in a full
        run, all in a quick one; ``scale`` and ``time_to_fit`` as ``scale`` and ``time_to_fit`` say). ``settled``:
        epochs once the mask has settled, every entry against the active set against SCVI, at K = 10, 20 and 40
        (:mod:`._settled`). ``consensus``: the wall time of a consensus of 5 and 20 restarts against a single
        fit, on the ``datasets`` (:mod:`._consensus`).
    datasets
        Data sets of the time-to-fit section, comma-separated or a list (default: Kang and PBMC 3k; quick: Kang),
        and of the consensus section (default: Kang).
    n_threads
        Torch threads (default 1; ``None`` leaves torch's setting).
    verbose
        Print progress.

    Returns
    -------
    pandas.DataFrame
        One measurement per row (:data:`RESULT_COLUMNS`).

    Examples
    --------
    >>> from scsparse.generic.benchmarks import run
    >>> df = run("speed", out="bench_speed", quick=True)  # doctest: +SKIP
    """
    check_integer("seeds", seeds)
    if not (device == "cpu" or device.startswith("cuda")):
        raise ValueError(f"device must be 'cpu' or 'cuda[:N]', got {device!r}")
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ValueError(f"device={device!r} but torch sees no CUDA device; run with --device cpu")
    n_cells = n_cells or (512 if quick else 10_000)
    n_genes = n_genes or (200 if quick else 2_000)
    epochs = max_epochs or (2 if quick else 3)
    repeats = 2 if quick else 5
    rounds = 1 if quick else 3
    scale = (not quick) if scale is None else scale
    time_to_fit = (not quick and device == "cpu") if time_to_fit is None else time_to_fit
    sparsity_cells = sparsity_cells or (n_cells if quick else 3_000)
    sparsity_epochs = sparsity_epochs or (2 if quick else 40)
    chosen = chosen_sections(sections, quick)
    default_data = ["kang"] if quick else list(TIME_TO_FIT_DATASETS)
    fit_data = default_data if datasets is None else chosen_names(datasets, list(TIME_TO_FIT_DATASETS), "data set(s)")
    consensus_data = ["kang"] if datasets is None else fit_data
    scale, time_to_fit = scale and "scale" in chosen, time_to_fit and "time_to_fit" in chosen
    out_dir = report.make_output_dir(out)
    options = {
        "seeds": seeds,
        "quick": quick,
        "epochs": epochs,
        "rounds": rounds,
        "device": device,
        "n_cells": n_cells,
        "n_genes": n_genes,
        "batch_size": batch_size,
        "n_hidden": n_hidden,
        "n_latent": n_latent,
        "scale": scale,
        "n_threads": n_threads,
        "sparsity_cells": sparsity_cells,
        "sparsity_epochs": sparsity_epochs,
        "time_to_fit": time_to_fit,
        "sections": [name for name in SECTIONS if name in chosen],
        "datasets": fit_data if time_to_fit else [],
        "consensus_datasets": consensus_data if "consensus" in chosen else [],
    }
    rows: list[dict[str, Any]] = []
    with torch_threads(n_threads), quiet_training_logs():
        prov = report.provenance("speed", options)
        for seed in range(seeds):
            if verbose:
                print(f"speed: seed {seed}, {n_cells} cells x {n_genes} genes, device {device}", flush=True)
            adata = simulate_counts(n_cells, n_genes, seed=seed)
            rows += [{**r, "seed": seed} for r in _simulated_rows(
                adata, chosen, rounds=rounds, epochs=epochs, repeats=repeats, batch_size=batch_size,
                n_hidden=n_hidden, n_latent=n_latent, device=device, seed=seed, quick=quick,
                sparsity_cells=sparsity_cells, sparsity_epochs=sparsity_epochs, verbose=verbose,
            )]  # fmt: skip
        if scale:
            rows += _scale_rows(device=device, batch_size=batch_size, quick=quick, verbose=verbose)
        if time_to_fit:
            rows += [{**r, "seed": 0} for r in time_to_fit_rows(datasets=fit_data, quick=quick, verbose=verbose)]
        if "consensus" in chosen:
            rows += [{**r, "seed": 0} for r in consensus_rows(datasets=consensus_data, quick=quick, verbose=verbose)]
    df = pd.DataFrame(rows)
    df["device"] = device
    if "dataset" not in df:  # only the time-to-fit and consensus sections run on named data sets
        df["dataset"] = ""
    report.write_results(df, out_dir, RESULT_COLUMNS)
    report.write_summary(out_dir, summary_lines(df, prov, SECTIONS))
    return report.finish_run(df.loc[:, RESULT_COLUMNS], out_dir, verbose=verbose)


def _scale_rows(*, device: str, batch_size: int, quick: bool, verbose: bool) -> list[dict[str, Any]]:
    """Peak memory against genes and epoch time / memory against cells (backed ``.X``), from :mod:`._scale`."""
    from . import _scale

    genes: Sequence[int] = (200, 400) if quick else (2_000, 5_000, 20_000)
    cells: Sequence[int] = (1_000, 2_000) if quick else (10_000, 50_000, 200_000)
    rows: list[dict[str, Any]] = []
    g = _scale.gene_scaling(n_genes=genes, batch_size=batch_size, device=device)
    c = _scale.cell_scaling(n_cells=cells, batch_size=batch_size, device=device)
    for section, frame in (("memory_genes", g), ("cells_backed", c)):
        for rec in frame.to_dict("records"):
            for metric in ("peak_memory_mb", "rss_after_import_mb", "seconds_per_epoch", "seconds_per_step"):
                if metric in rec and rec[metric] == rec[metric]:
                    rows.append(
                        {
                            "section": section,
                            "method": "scsparse SparseVAE",
                            "n_genes": rec.get("n_genes"),
                            "n_cells": rec.get("n_cells"),
                            "batch_size": batch_size,
                            "metric": metric,
                            "value": float(rec[metric]),
                            "unit": "MB" if metric.endswith("_mb") else "s",
                            "seed": 0,
                        }
                    )
    if verbose:
        print(g.to_string(index=False), c.to_string(index=False), sep="\n", flush=True)
    return rows
