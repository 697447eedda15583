"""How each gene's decoded expression responds to one factor: latent traversals averaged over cells.

``W`` says *which* genes a factor drives (``p*``) and how strongly it enters each gene's decoder input
(``|w_jk|``), but the decoder is nonlinear, so the *direction* and *shape* of a gene's response to the factor are
the decoder's. :func:`factor_response` traverses one factor at a time over a grid of values and decodes, keeping
each cell's other factors, batch and library as they are, and averages the decoded expression over the cells
(the partial dependence of each gene on the factor). A gene with ``w_jk = 0`` does not see factor ``k``: its
decoder output is unchanged along the traversal (for count likelihoods its normalised expression can still move
a little, because the expression of all genes sums to one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from scsparse._checks import InvalidInputError
from scsparse._options import COUNT_LIKELIHOODS
from scsparse.results import FactorResponse, resolve_factors

__all__ = ["factor_response"]


def _check_options(n_steps: int, span: tuple[float, float], n_cells: int | None, library_size: float) -> None:
    if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)) or n_steps < 2:
        raise InvalidInputError(f"n_steps must be an integer >= 2 (the two ends of the traversal), got {n_steps!r}.")
    try:
        lo, hi = (float(v) for v in span)
    except (TypeError, ValueError):
        raise InvalidInputError(f"span must be two quantiles (low, high), got {span!r}.") from None
    if not 0.0 <= lo < hi <= 1.0:
        raise InvalidInputError(f"span must be two quantiles with 0 <= low < high <= 1, got {span!r}.")
    if n_cells is not None and (isinstance(n_cells, bool) or not isinstance(n_cells, (int, np.integer)) or n_cells < 1):
        raise InvalidInputError(f"n_cells must be a positive integer or None (all cells), got {n_cells!r}.")
    if not np.isfinite(library_size) or library_size <= 0:
        raise InvalidInputError(f"library_size must be a positive number, got {library_size!r}.")


def factor_response(
    model: Any,
    factors: Sequence[str | int] | str | int | None = None,
    *,
    n_steps: int = 9,
    span: tuple[float, float] = (0.02, 0.98),
    indices: Sequence[int] | None = None,
    n_cells: int | None = 500,
    library_size: float = 1e4,
    batch_size: int | None = None,
    seed: int = 0,
) -> FactorResponse:
    """Traverse factors of a trained sparse VAE and average the decoded expression over cells.

    See :meth:`scsparse.model.SparseVAE.get_factor_response`, which calls this with the model.
    """
    import torch

    if not model.is_trained_:
        raise InvalidInputError("The model is not trained yet: call model.train() first.")
    _check_options(n_steps, span, n_cells, float(library_size))
    names = list(model.factor_names)
    chosen = resolve_factors(names, model.active_factors(), factors, source="the model")
    adata = model.adata
    pool = np.arange(adata.n_obs) if indices is None else np.asarray(indices, dtype=int)
    if pool.size == 0 or pool.min() < 0 or pool.max() >= adata.n_obs:
        raise InvalidInputError(f"indices must be positions of cells in the model's AnnData (0 .. {adata.n_obs - 1}).")
    module = model.module
    is_count = module.gene_likelihood in COUNT_LIKELIHOODS
    Z, present = _posterior_means(model, pool, batch_size)
    rng = np.random.default_rng(seed)
    grid = np.zeros((len(chosen), n_steps))
    expression = np.zeros((len(chosen), n_steps, adata.n_vars))
    counts = []
    module.eval()
    for row, name in enumerate(chosen):
        k = names.index(name)
        eligible = np.flatnonzero(present[:, k])
        if eligible.size == 0:
            raise InvalidInputError(f"No cell among those given has factor {name!r} (it belongs to another study).")
        if n_cells is not None and eligible.size > n_cells:
            eligible = np.sort(rng.choice(eligible, size=n_cells, replace=False))
        grid[row] = np.quantile(Z[eligible, k], np.linspace(span[0], span[1], n_steps))
        values = torch.as_tensor(grid[row], dtype=torch.float32, device=module.device)
        total = torch.zeros(n_steps, adata.n_vars, dtype=torch.float64, device=module.device)
        loader = model._make_data_loader(adata=adata, indices=pool[eligible], batch_size=batch_size)
        with torch.inference_mode():
            for tensors in loader:
                inf = module.inference(**module._get_inference_input(tensors))
                z = inf["qz"].loc.unsqueeze(0).repeat(n_steps, 1, 1)  # (steps, cells, K)
                z[:, :, k] = values[:, None]
                if inf.get("latent_mask") is not None:
                    z = z * inf["latent_mask"]
                gen = module.generative(**module._get_generative_input(tensors, {**inf, "z": z}))
                value = gen["px"].get_normalized("scale") * (float(library_size) if is_count else 1.0)
                total += value.sum(1, dtype=torch.float64)
        expression[row] = (total / eligible.size).cpu().numpy()
        counts.append(int(eligible.size))
    unit = f"counts per {library_size:g}" if is_count else "decoder mean"
    return FactorResponse(
        grid=pd.DataFrame(grid, index=chosen, columns=[f"step_{s}" for s in range(n_steps)]),
        expression=expression,
        genes=pd.Index(adata.var_names),
        n_cells=pd.Series(counts, index=chosen, name="n_cells"),
        unit=unit,
        gene_likelihood=module.gene_likelihood,
        is_counts=is_count,
        pip=model.get_inclusion_probabilities().loc[:, chosen].copy(),
        model_factors=names,
    )


def _posterior_means(model: Any, pool: np.ndarray, batch_size: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Posterior means of the cells in ``pool`` and which factors each cell has (multi-study: its own blocks)."""
    import torch

    module = model.module
    means, masks = [], []
    loader = model._make_data_loader(adata=model.adata, indices=pool, batch_size=batch_size)
    with torch.inference_mode():
        for tensors in loader:
            inf = module.inference(**module._get_inference_input(tensors))
            loc = inf["qz"].loc
            mask = inf.get("latent_mask")
            means.append(loc.cpu().numpy())
            masks.append(np.ones(loc.shape, dtype=bool) if mask is None else mask.cpu().numpy() > 0)
    return np.concatenate(means), np.concatenate(masks)
