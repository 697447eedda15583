"""The settled section of ``scsparse bench speed``: epochs once the mask has settled, every entry or the active set.

A fresh model's epochs (the epoch section) are those before the mask settles, when every entry of ``W`` is still
nonzero. Here, for each number of factors, a model is first trained with exact zeros and the decoder on its active
set (``train(exact_zeros=True)``) until its mask has settled, on a subset of the
cells; its weights are then loaded into models of all the cells, and three things train in turn for a few epochs,
in rounds, so that a slow spell of a shared machine falls on every side of a ratio:

- **every entry** — the settled weights with the whole mask readmitted, trained with the default (dense) steps;
- **active set** — the settled weights trained with exact zeros and the active set (the check steps included);
- **SCVI** — a fresh ``scvi.model.SCVI`` at the same number of factors.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ._timing import EpochTimer, scvi_epoch_seconds, timed_train_kwargs

__all__ = ["SETTLED_LATENTS", "settled_rows", "settled_targets"]

#: Numbers of factors of the section.
SETTLED_LATENTS: tuple[int, ...] = (10, 20, 40)
#: Target of the settled active-set epoch against SCVI's, at K = 20.
SETTLED_TARGET = 1.5


def _settled_state(adata, k: int, *, n_cells: int, epochs: int, n_hidden: int, batch_size: int, device: str, seed: int):
    """The module state of a model trained with exact zeros for ``epochs`` epochs on the first ``n_cells`` cells."""
    from scsparse.model import SparseVAE

    sub = adata[: min(n_cells, adata.n_obs)].copy()
    SparseVAE.setup_anndata(sub, layer="counts")
    model = SparseVAE(sub, n_latent=k, n_hidden=n_hidden, seed=seed)
    kwargs = timed_train_kwargs(device, batch_size, EpochTimer(device))
    model.train(max_epochs=epochs, seed=seed, exact_zeros=True, **kwargs)
    return model.module.state_dict(), model.module.decoder.prune_mask.float().mean().item()


def settled_rows(
    adata,
    *,
    latents: Sequence[int] = SETTLED_LATENTS,
    settle_cells: int,
    settle_epochs: int,
    epochs: int,
    rounds: int,
    batch_size: int,
    n_hidden: int,
    device: str,
    seed: int,
    verbose: bool,
) -> list[dict[str, Any]]:
    """Rows of the settled section (``section="settled"``) for each number of factors in ``latents``.

    Parameters
    ----------
    adata
        The simulated counts (``layers["counts"]``).
    latents
        Numbers of factors.
    settle_cells, settle_epochs
        The subset and the epochs the mask settles on.
    epochs, rounds
        Epochs of each timed fit (the first left out of its median) and rounds of the three fits in turn.
    batch_size, n_hidden, device, seed
        As in the other sections.
    verbose
        Print one line per number of factors.
    """
    import torch

    from scsparse.model import SparseVAE

    base = {"section": "settled", "n_genes": adata.n_vars, "n_cells": adata.n_obs, "batch_size": batch_size}
    rows: list[dict[str, Any]] = []
    for k in latents:
        state, active = _settled_state(
            adata, k, n_cells=settle_cells, epochs=settle_epochs, n_hidden=n_hidden, batch_size=batch_size,
            device=device, seed=seed,
        )  # fmt: skip

        def ours(active_set: bool, k: int = k, state: dict = state) -> float:
            SparseVAE.setup_anndata(adata, layer="counts")
            model = SparseVAE(adata, n_latent=k, n_hidden=n_hidden, seed=seed)
            model.module.load_state_dict(state)
            if not active_set:
                model.module.decoder.readmit_(torch.ones_like(model.module.decoder.prune_mask))
            timer = EpochTimer(device)
            kwargs = timed_train_kwargs(device, batch_size, timer)
            model.train(max_epochs=epochs, seed=seed, exact_zeros=active_set, **kwargs)
            return timer.per_epoch()

        def theirs(k: int = k) -> float:
            return scvi_epoch_seconds(
                adata, n_latent=k, n_hidden=n_hidden, epochs=epochs, batch_size=batch_size, device=device, seed=seed
            )

        every, sparse, scvi_times = [], [], []
        for _ in range(rounds):
            every.append(ours(False))
            sparse.append(ours(True))
            scvi_times.append(theirs())
        ratios = [a / b for a, b in zip(sparse, scvi_times, strict=True)]
        dense_ratios = [a / b for a, b in zip(every, scvi_times, strict=True)]
        suffix = f", K = {k}"

        def row(method: str, metric: str, value: float, unit: str = "", suffix: str = suffix) -> dict[str, Any]:
            return {**base, "method": method + suffix, "metric": metric, "value": value, "unit": unit}

        rows += [
            row("SparseVAE, settled mask", "active_entries_fraction", active),
            row("SparseVAE, settled mask, every entry", "seconds_per_epoch", statistics.median(every), "s"),
            row("SparseVAE, settled mask, active set", "seconds_per_epoch", statistics.median(sparse), "s"),
            row("scvi-tools SCVI", "seconds_per_epoch", statistics.median(scvi_times), "s"),
            row("every entry / SCVI", "ratio", statistics.median(dense_ratios), "x"),
            row("active set / SCVI", "ratio", statistics.median(ratios), "x"),
            row("active set / SCVI", "ratio_lowest", min(ratios), "x"),
            row("active set / SCVI", "ratio_highest", max(ratios), "x"),
        ]
        if verbose:
            print(
                f"  settled, K = {k}: {active:.1%} of W active; epoch every entry {statistics.median(every):.2f} s, "
                f"active set {statistics.median(sparse):.2f} s, SCVI {statistics.median(scvi_times):.2f} s "
                f"(active set / SCVI {statistics.median(ratios):.2f}x, rounds {min(ratios):.2f}-{max(ratios):.2f}x)",
                flush=True,
            )
    return rows


def settled_targets(df: pd.DataFrame) -> list[tuple[bool, str]]:
    """The settled epoch target: the active set's epoch at most 1.5x SCVI's at K = 20 (rounds straddling it: a tie)."""
    sel = df[(df["section"] == "settled") & (df["method"] == "active set / SCVI, K = 20")]
    if not len(sel):
        return []

    def value(metric: str) -> float:
        v = sel.loc[sel["metric"] == metric, "value"]
        return float(v.mean()) if len(v) else math.nan

    ratio, low, high = value("ratio"), value("ratio_lowest"), value("ratio_highest")
    tie = low <= SETTLED_TARGET < high
    verdict = f"rounds {low:.2f}-{high:.2f}x" + (", a tie: the rounds straddle the target" if tie else "")
    return [
        (
            ratio <= SETTLED_TARGET and not tie,
            f"settled mask, active set: SparseVAE epoch <= {SETTLED_TARGET}x SCVI's at K = 20: {ratio:.2f}x "
            f"({verdict})",
        )
    ]
