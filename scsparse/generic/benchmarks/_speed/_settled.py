"""The settled section of ``scsparse bench speed``: epochs once the mask has settled, every entry or the active set.

A fresh model's epochs (the epoch section) are those before the mask settles, when every entry of ``W`` is still
nonzero. Here, for each number of factors, a model of all the cells trains with exact zeros and the decoder on its
active set (``train(exact_zeros=True)``) until its mask has settled — as many steps as ``settle_epochs`` epochs of
``settle_cells`` cells — and goes on in the same fit for ``rounds`` blocks of ``epochs`` epochs, which are timed. One
``train()`` call, because the active set's checks judge a zero entry by a running mean of its gradient, which a model
built from the settled weights would start afresh (the mean is not saved), and whose first checks would then readmit the
entries one minibatch's noise puts over their bound. Then two things train in turn for ``epochs`` epochs, in rounds, so
that a slowdown during the run falls on both sides of their ratio:

- **every entry** — the settled weights with the whole mask readmitted, trained with the default (dense) steps;
- **SCVI** — a fresh ``scvi.model.SCVI`` at the same number of factors.

The active set's rounds come from one fit and are not interleaved with the other two.
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


def _settled_fit(
    adata, k: int, *, settle_epochs: int, blocks: int, epochs: int, n_hidden: int, batch_size: int, device: str,
    seed: int,
):  # fmt: skip
    """A model trained with exact zeros for ``settle_epochs`` epochs, then ``blocks`` timed blocks of ``epochs``.

    Returns the module's state, the share of ``W`` active at the end and the median epoch time of each block.
    """
    from scsparse.model import SparseVAE

    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, n_latent=k, n_hidden=n_hidden, seed=seed)
    timer = EpochTimer(device)
    kwargs = timed_train_kwargs(device, batch_size, timer)
    model.train(max_epochs=settle_epochs + blocks * epochs, seed=seed, exact_zeros=True, **kwargs)
    timed = timer.epochs[settle_epochs:]
    per_block = [statistics.median(timed[i * epochs : (i + 1) * epochs]) for i in range(blocks)]
    return model.module.state_dict(), model.module.decoder.prune_mask.float().mean().item(), per_block


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
        The mask settles in as many steps as ``settle_epochs`` epochs of ``settle_cells`` cells take, on all cells.
    epochs, rounds
        Epochs of each timed block of the settled fit and of each timed fit of every entry and of SCVI (their first
        left out of their median), and the number of blocks and rounds.
    batch_size, n_hidden, device, seed
        As in the other sections.
    verbose
        Print one line per number of factors.
    """
    import torch

    from scsparse.model import SparseVAE

    base = {"section": "settled", "n_genes": adata.n_vars, "n_cells": adata.n_obs, "batch_size": batch_size}
    rows: list[dict[str, Any]] = []
    # the settling steps of settle_epochs epochs of settle_cells cells, as epochs of all the cells
    settle_on_all = max(1, math.ceil(settle_epochs * min(settle_cells, adata.n_obs) / adata.n_obs))
    for k in latents:
        state, active, sparse = _settled_fit(
            adata, k, settle_epochs=settle_on_all, blocks=rounds, epochs=epochs, n_hidden=n_hidden,
            batch_size=batch_size, device=device, seed=seed,
        )  # fmt: skip

        def every_entry(k: int = k, state: dict = state) -> float:
            SparseVAE.setup_anndata(adata, layer="counts")
            model = SparseVAE(adata, n_latent=k, n_hidden=n_hidden, seed=seed)
            model.module.load_state_dict(state)
            model.module.decoder.readmit_(torch.ones_like(model.module.decoder.prune_mask))
            timer = EpochTimer(device)
            model.train(max_epochs=epochs, seed=seed, **timed_train_kwargs(device, batch_size, timer))
            return timer.per_epoch()

        def theirs(k: int = k) -> float:
            return scvi_epoch_seconds(
                adata, n_latent=k, n_hidden=n_hidden, epochs=epochs, batch_size=batch_size, device=device, seed=seed
            )

        every, scvi_times = [], []
        for _ in range(rounds):
            every.append(every_entry())
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
