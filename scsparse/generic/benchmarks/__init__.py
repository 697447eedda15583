"""Benchmarks of the papers, reproducible from one call.

:func:`run` dispatches by name to the functions in :data:`BENCHMARKS`; each writes ``results.csv`` (one
row per method, setting and seed), ``summary.md`` (provenance, what ran, mean ± sd over seeds, the paper's
claims beside ours) and figures into ``out``, and returns the per-run results.

- ``"synthetic"`` — :func:`run_synthetic`: recovery of the ground-truth factors of Eq. 9 of Moran et al.
  (2022) (DCI disentanglement, F-score of the support of W, active factors, held-out NLL and MSE).
- ``"multistudy"`` — :func:`run_multistudy`: recovery of shared and study-specific programmes of simulated
  multi-study counts by the multi-study sparse VAE and two single-study sparse VAE baselines.
- ``"multistudy_real"`` — :func:`run_multistudy_real`: the multi-study sparse VAE on Kang et al. (2018)
  PBMCs (interferon programme, cell types across conditions) and CellBench (cell lines across technologies).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Sequence

import pandas as pd

from ._multistudy import run_multistudy, run_multistudy_real
from ._synthetic import METHODS, RESULT_COLUMNS, MethodOutput, SyntheticSplit, run_synthetic

__all__ = [
    "BENCHMARKS",
    "METHODS",
    "RESULT_COLUMNS",
    "MethodOutput",
    "SyntheticSplit",
    "run",
    "run_multistudy",
    "run_multistudy_real",
    "run_synthetic",
]

#: Benchmark name -> function ``fn(out, *, seeds, quick, max_epochs, [rho], ...) -> DataFrame``.
BENCHMARKS: dict[str, Callable[..., pd.DataFrame]] = {
    "synthetic": run_synthetic,
    "multistudy": run_multistudy,
    "multistudy_real": run_multistudy_real,
}


def run(
    name: str,
    *,
    out: str | os.PathLike[str],
    seeds: int = 5,
    rho: Sequence[float] | None = None,
    quick: bool = False,
    max_epochs: int | None = None,
) -> pd.DataFrame:
    """Run a benchmark by name and write its results, summary and figures to ``out``.

    Parameters
    ----------
    name
        A key of :data:`BENCHMARKS` (``"synthetic"``).
    out
        Output folder (created if needed).
    seeds
        Number of seeds (datasets / model initialisations), ``0 .. seeds - 1``.
    rho
        Factor correlations, for the benchmarks that take them (``"synthetic"``; default ``[0.4]``).
        ``None`` uses the benchmark's default.
    quick
        A short smoke run (fewer epochs).
    max_epochs
        Training epochs, overriding the benchmark's default and ``quick``.

    Returns
    -------
    pandas.DataFrame
        One row per method, setting and seed (the content of ``out/results.csv``).

    Raises
    ------
    ValueError
        For an unknown benchmark name, or ``rho`` given to a benchmark that does not take it.

    Examples
    --------
    >>> from scsparse.generic.benchmarks import run
    >>> df = run("synthetic", out="bench_syn", seeds=5, rho=[0.0, 0.4])  # doctest: +SKIP
    """
    if name not in BENCHMARKS:
        raise ValueError(f"Unknown benchmark {name!r}; available: {', '.join(sorted(BENCHMARKS))}")
    fn = BENCHMARKS[name]
    kwargs: dict = {"seeds": seeds, "quick": quick, "max_epochs": max_epochs}
    if rho is not None:
        if "rho" not in inspect.signature(fn).parameters:
            raise ValueError(f"Benchmark {name!r} does not take rho")
        kwargs["rho"] = list(rho)
    return fn(out, **kwargs)
