"""Pick the best of several fits of one model to one dataset, by the training objective."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from scsparse._checks import InvalidInputError
from scsparse.results import OVERLAP_FRACTION, jaccard_matrix

__all__ = ["select_best"]


def _n_overlapping(model: Any, pip_threshold: float = 0.5) -> int:
    """Active factors of ``model`` whose gene set overlaps another active factor's (Jaccard index above the
    threshold of :func:`scsparse.tl.factor_diagnostics`).
    """
    pip = model.get_inclusion_probabilities()  # every factor (shared and specific ones of a multi-study model)
    active = model.active_factors(pip_threshold)
    if len(active) < 2:
        return 0
    return int((jaccard_matrix(pip[active].to_numpy() > pip_threshold) > OVERLAP_FRACTION).any(1).sum())


def select_best(models: Sequence[Any]) -> tuple[Any, pd.DataFrame]:
    """The fit with the lowest training objective among fits of the same model to the same cells.

    The sparse VAE's objective is not convex: the EM on the Spike-and-Slab Lasso can settle on a split
    programme (one programme over two columns) or a merged one, depending on the seed. As with NMF's or
    k-means' ``n_init``, fitting a few seeds and keeping the one with the lowest objective
    (:meth:`~scsparse.model.SparseVAE.training_objective`) is a label-free way around it.

    Parameters
    ----------
    models
        Trained :class:`~scsparse.model.SparseVAE` or :class:`~scsparse.model.MultiStudySparseVAE` models of the
        same class, on the same genes and training cells (typically: the same AnnData and settings, a different
        model ``seed`` each and the same ``train(seed=...)``, which fixes the split).

    Returns
    -------
    best
        The model with the lowest objective (the first of equals).
    table
        One row per model, in the order given: ``seed`` (of the model's initial weights), ``objective``,
        ``n_active``, ``n_overlapping`` (active factors whose genes overlap another active factor's, Jaccard index
        above :data:`scsparse.tl.OVERLAP_FRACTION`: a sign of merged or duplicated programmes, see
        :func:`scsparse.tl.factor_diagnostics`) and ``selected``. The choice uses the objective alone.

    Examples
    --------
    >>> fits = []
    >>> for seed in range(4):  # initial weights from seed; one split and minibatch order from train(seed=0)
    ...     model = scsparse.model.SparseVAE(adata, seed=seed)
    ...     model.train(max_epochs=100, seed=0)
    ...     fits.append(model)
    >>> best, table = scsparse.model.select_best(fits)
    """
    models = list(models)
    if not models:
        raise InvalidInputError("select_best needs at least one trained model.")
    kinds = {type(m).__name__ for m in models}
    if len(kinds) > 1:
        raise InvalidInputError(f"select_best compares fits of one model class, got {sorted(kinds)}.")
    genes = [tuple(m._gene_names) for m in models]
    cells = [tuple(sorted(map(int, m.train_indices))) if m.train_indices is not None else () for m in models]
    if len(set(genes)) > 1 or len(set(cells)) > 1 or len({m.adata.n_obs for m in models}) > 1:
        raise InvalidInputError(
            "select_best compares objectives of fits to the same data: the models differ in their genes or "
            "training cells. Fit every model on the same AnnData with the same train_size, and give every fit the "
            "same train(seed=...): the split follows the training seed, the initial weights the model's seed."
        )
    rows = [
        {
            "seed": getattr(m, "init_seed", getattr(m, "seed", None)),
            "objective": m.training_objective(),
            "n_active": len(m.active_factors()),
            "n_overlapping": _n_overlapping(m),
        }
        for m in models
    ]
    table = pd.DataFrame(rows)
    best = int(table["objective"].idxmin())
    table["selected"] = table.index == best
    return models[best], table
