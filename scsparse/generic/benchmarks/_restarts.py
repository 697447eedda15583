"""Restarts of one method on one data set: their seeds, and the best of them by the training objective."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from scsparse.utils import check_integer

__all__ = [
    "RESTART_SEED_STEP",
    "best_of_restarts",
]


#: Seed offset between the restarts of one method on one dataset: restart ``r`` uses ``seed + r * this``, so
#: restart 0 is the single fit of that seed.
RESTART_SEED_STEP = 1000


def best_of_restarts(
    fit: Callable[[int], Any], seed: int, n_restarts: int, objective: Callable[[Any], float] | None = None
) -> Any:
    """Fit ``n_restarts`` times and keep the fit with the lowest training objective.

    The sparse VAE's objective is not convex and the EM on the Spike-and-Slab Lasso can settle on a split or
    merged programme depending on the seed. The choice uses the training objective only
    (:func:`scsparse.model.select_best`), never the true programmes, so a benchmark may use it like NMF's
    ``n_init``.

    Parameters
    ----------
    fit
        ``fit(seed)`` builds, trains and returns one fitted model: a scvi-tools model of scsparse (a
        :class:`~scsparse.model.SparseVAE` or :class:`~scsparse.model.MultiStudySparseVAE`), or any model
        when ``objective`` is given.
    seed
        Seed of restart 0; restart ``r`` uses ``seed + r * RESTART_SEED_STEP``.
    n_restarts
        Number of fits (1: just ``fit(seed)``).
    objective
        ``objective(model)``, the training objective of a fit (lower is better), e.g.
        ``lambda m: m.training_objective(X)`` for a model of :mod:`scsparse.generic.models`. ``None``: the
        scvi-tools models' own, through :func:`scsparse.model.select_best`.

    Returns
    -------
    The selected model.
    """
    from scsparse.model import select_best

    n_restarts = check_integer("n_restarts", n_restarts)
    fits = [fit(int(seed) + r * RESTART_SEED_STEP) for r in range(n_restarts)]
    if len(fits) == 1:
        return fits[0]
    if objective is None:
        return select_best(fits)[0]
    values = [float(objective(f)) for f in fits]
    return fits[int(np.argmin(values))]
