"""Benchmarks of the papers, reproducible from one call.

:func:`run` dispatches by name to the functions registered in :data:`BENCHMARKS`; each writes
``results.csv`` (one row per method, setting and seed), ``summary.md`` (provenance, what ran, mean ± sd over
seeds, the paper's claims beside ours, which data it ran on) and figures into ``out``, and returns the
per-run results. :func:`run_all` runs every benchmark (``scsparse bench all``).

Each benchmark lives in a folder of its own, ``_NAME/``, imported on first use, so that ``scsparse bench NAME``
only pays for the benchmark it runs. The names:

- ``"synthetic"`` — recovery of the ground-truth factors of Eq. 9 of Moran et al. (2022).
- ``"multistudy"`` / ``"multistudy_real"`` — shared and study-specific programmes of simulated multi-study
  counts; the multi-study sparse VAE on Kang et al. (2018) PBMCs and on CellBench.
- ``"bars"`` / ``"mocap"`` — oi-VAE's bars (which factor drives which image row, K = 8 and 16, extras pruned;
  Ainsworth et al. 2018, Fig. 2) and CMU motion capture with joints as groups (held-out log-likelihood against
  a VAE, top joints per factor; Tables 1-2).
- ``"text"`` / ``"semisynthetic"`` — held-out NLL of abstracts for every method and SparseVAE topics (Tables 1b
  and 3b); LDA-based documents whose topic correlations shift between training and test (Table 2).
- ``"speed"`` — time per epoch of the sparse VAE against the per-gene loop of the reference algorithm and
  SCVI, decoder FLOP/s against a matmul peak, learned sparsity, memory against genes and cells.
- ``"zeisel"`` — cell types predicted from the factors on Zeisel et al. (2015), quantile-normalised (Gaussian)
  and raw counts (NB) (Moran et al. 2022, Table 4).
- ``"movielens"`` — held-out NLL, Recall@5 and NDCG@10 on binarised MovieLens (ml-latest-small, ml-100k)
  and the top movies of sparse VAE factors (Moran et al. 2022, Tables 1a and 3a).
- ``"peers"`` — SparseVAE against LDVAE, DRVI, NMF, cNMF and PCA on real single-cell data (Kang, PBMC 3k,
  Zeisel, CellBench, three 10x PBMC chemistries): biology recovered, parsimony, held-out cell-type accuracy, batch
  leakage, stability over seeds, time and memory.
- ``"stability"`` — what a refit of SparseVAE with another seed keeps of each programme (gene sets, cores,
  loadings, number of factors), with the sources of randomness separated.
- ``"programme_size"`` — programme size, precision and recall against planted supports as the number of cells
  grows (2,000 to 100,000), with and without a dense background of small effects, and of a programme active in a
  rare population (2% of the cells).
- ``"guided"`` — programmes started from known gene sets on Kang (Hallmark interferon, cell-type markers, a planted
  decoy): SparseVAE guided and unguided against Spectra and expiMap given the same sets.
- ``"patches"``, ``"smiley"``, ``"fmnist"`` — sparse coding of whitened image patches with a linear generator
  (Fallah & Rozell 2022, Table 1); VSC vs beta-VAE latent-attribute correlation on Smiley and held-out ELBO
  against latent size on Fashion-MNIST (Tonolini et al. 2019).

The benchmarks need the ``bench`` extra (``pip install 'scsparse[bench]'``); importing this package without it
raises an :class:`ImportError` that says so.

Every benchmark function has the signature ``fn(out, *, seeds, quick, max_epochs, **options)``; the
options it takes beyond those are discovered from its signature (e.g. ``rho`` for ``"synthetic"``,
``device`` for ``"speed"``).

A benchmark's folder ``_NAME/`` holds ``_run`` (its settings, full and ``quick``, and ``run_NAME``, which the
folder's ``__init__`` exports) and, beside it, a module per job: the methods' fits (``_methods``), their scoring
(``_scoring``), the summary (``_summary``), helpers named by what they do (``_timing``, ``_scale`` of ``speed``).
What several benchmarks share is written once, in the modules at the top of this package, which belong to no
benchmark; a benchmark imports no other benchmark's folder, and every module at the top serves more than one
benchmark (``tests/house`` checks both):

- ``_fits`` — how SparseVAE is fitted (as a user fits it, or the papers' fixed epochs), how scvi-tools' own
  models are fitted (seeded), and how a fit is measured; ``_restarts`` — restarts and the best of them;
- ``_real_data``, ``_programme_fit``, ``_programme_scores`` — the real single-cell data sets and their gene
  selection, a fit read as gene programmes, and how programmes are scored (``peers``, ``stability``);
- ``_cell_scores``, ``_vae_scores``, ``_documents``, ``_documents_summary`` — scores of cell representations, of
  VAEs on held-out data, and the text benchmarks' settings, methods, tables and verdicts;
- ``_settings``, ``_process``, ``_paper`` — a run's settings and option checks; its logs, threads and memory; the
  papers' network depth and the notes where a run departs from them;
- ``_report`` — the one writer of ``results.csv``, ``summary.md`` (provenance head, met / not-met lines) and
  figures; ``_tables`` — the summaries' ``mean ± sd`` tables.
"""

from __future__ import annotations

import importlib
import inspect
import multiprocessing
import os
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd

from scsparse.data import DataNotAvailableError
from scsparse.utils import write_csv

from ._report import make_output_dir, write_summary

try:  # what the benchmarks need beyond scsparse's own dependencies: the 'bench' extra
    import threadpoolctl  # noqa: F401
except ImportError as exc:
    raise ImportError(
        f"scsparse's benchmarks need threadpoolctl, which comes with the 'bench' extra: pip install 'scsparse[bench]' "
        f"({exc})."
    ) from exc

__all__ = ["BENCHMARKS", "run", "run_all"]

#: Benchmark name -> ``"folder:function"`` inside this package (imported lazily). ``run_all`` runs them in this
#: order; the peers comparison, the longest, comes first so that benchmarks run side by side finish together.
_REGISTRY: dict[str, str] = {
    "peers": "_peers:run_peers",
    "synthetic": "_synthetic:run_synthetic",
    "multistudy": "_multistudy:run_multistudy",
    "multistudy_real": "_multistudy_real:run_multistudy_real",
    "bars": "_bars:run_bars",
    "mocap": "_mocap:run_mocap",
    "text": "_text:run_text",
    "semisynthetic": "_semisynthetic:run_semisynthetic",
    "speed": "_speed:run_speed",
    "movielens": "_movielens:run_movielens",
    "patches": "_patches:run_patches",
    "smiley": "_smiley:run_smiley",
    "fmnist": "_fmnist:run_fmnist",
    "zeisel": "_zeisel:run_zeisel",
    "stability": "_stability:run_stability",
    "programme_size": "_programme_size:run_programme_size",
    "guided": "_guided:run_guided",
}


class _LazyBenchmarks(Mapping[str, Callable[..., pd.DataFrame]]):
    """Read-only mapping of benchmark names to functions, importing a module on first access."""

    def __init__(self, registry: Mapping[str, str]) -> None:
        self._registry = registry

    def __getitem__(self, name: str) -> Callable[..., pd.DataFrame]:
        module, func = self._registry[name].split(":")
        return getattr(importlib.import_module(f"{__name__}.{module}"), func)

    def __iter__(self) -> Iterator[str]:
        return iter(self._registry)

    def __len__(self) -> int:
        return len(self._registry)

    def __repr__(self) -> str:
        return f"BENCHMARKS({', '.join(self._registry)})"


#: Benchmark name -> function ``fn(out, *, seeds, quick, max_epochs, **options) -> DataFrame``.
BENCHMARKS: Mapping[str, Callable[..., pd.DataFrame]] = _LazyBenchmarks(_REGISTRY)


def _bench_kwargs(name: str, fn: Callable[..., Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """The options ``fn`` takes, with ``None`` meaning "the benchmark's default"; unknown ones raise."""
    params = inspect.signature(fn).parameters
    kwargs: dict[str, Any] = {}
    for key, value in options.items():
        if value is None:
            continue
        if key not in params:
            raise ValueError(f"Benchmark {name!r} does not take {key!r}")
        kwargs[key] = list(value) if key == "rho" else value
    return kwargs


def run(
    name: str,
    *,
    out: str | os.PathLike[str],
    seeds: int | None = None,
    quick: bool = False,
    max_epochs: int | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Run a benchmark by name and write its results, summary and figures to ``out``.

    Parameters
    ----------
    name
        A key of :data:`BENCHMARKS` (e.g. ``"synthetic"``).
    out
        Output folder (created if needed).
    seeds
        Number of seeds (datasets / model initialisations), ``0 .. seeds - 1``; ``None`` uses the
        benchmark's default.
    quick
        A short smoke run (fewer epochs, smaller data).
    max_epochs
        Training epochs, overriding the benchmark's default and ``quick``.
    **options
        Benchmark-specific options (``rho`` for ``"synthetic"``, ``device`` for ``"speed"``, ...); ``None``
        values are ignored.

    Returns
    -------
    pandas.DataFrame
        One row per method, setting and seed (the content of ``out/results.csv``).

    Raises
    ------
    ValueError
        For an unknown benchmark name, or an option the benchmark does not take.

    Examples
    --------
    >>> from scsparse.generic.benchmarks import run
    >>> df = run("synthetic", out="bench_syn", seeds=5, rho=[0.0, 0.4])  # doctest: +SKIP
    """
    if name not in BENCHMARKS:
        raise ValueError(f"Unknown benchmark {name!r}; available: {', '.join(sorted(BENCHMARKS))}")
    fn = BENCHMARKS[name]
    kwargs = _bench_kwargs(name, fn, {"seeds": seeds, "quick": quick, "max_epochs": max_epochs, **options})
    return fn(out, **kwargs)


def _run_one(
    name: str,
    fn: Callable[..., pd.DataFrame],
    out: Path,
    kwargs: Mapping[str, Any],
    skip_missing_data: bool,
) -> tuple[dict[str, Any], str | None]:
    """Run one benchmark of :func:`run_all`: its index row and, when it failed, the traceback."""
    start = time.perf_counter()
    failure = None
    try:
        df = fn(out, **_bench_kwargs(name, fn, kwargs))
        status, n_rows = "ok", len(df)
    except Exception as exc:  # noqa: BLE001 - every benchmark runs; failures are reported together
        if skip_missing_data and isinstance(exc, DataNotAvailableError):
            status, n_rows = f"not run: data not available ({exc})", 0
        else:
            status, n_rows = f"failed: {type(exc).__name__}: {exc}", 0
            failure = traceback.format_exc()
    row = {
        "benchmark": name,
        "status": status,
        "rows": n_rows,
        "seconds": round(time.perf_counter() - start, 1),
        "out": str(out),
    }
    return row, failure


def run_all(
    out: str | os.PathLike[str],
    *,
    quick: bool = True,
    seeds: int | None = None,
    max_epochs: int | None = None,
    names: Sequence[str] | None = None,
    skip_missing_data: bool = False,
    jobs: int = 1,
    **options: Any,
) -> pd.DataFrame:
    """Run every benchmark (or ``names``) into ``out/NAME`` and write an index ``out/summary.md``.

    Every benchmark runs even when an earlier one fails; the index records status and wall time of each,
    and a :class:`RuntimeError` naming the failures is raised at the end.

    Parameters
    ----------
    out
        Output folder; each benchmark writes into its own sub-folder.
    quick
        Small settings (default ``True``: the whole suite in minutes).
    seeds, max_epochs
        Passed to every benchmark (``None``: each benchmark's default).
    names
        Subset of :data:`BENCHMARKS` to run (default: all, in registry order).
    skip_missing_data
        A benchmark whose data is not in the local cache (:class:`scsparse.data.DataNotAvailableError`) is
        recorded as ``"not run: data not available (...)"`` instead of failing the run (for a machine without
        the offline data copy). Off by default, so that a broken data path cannot pass unnoticed.
    jobs
        Benchmarks run side by side, each in a process of its own (default 1: one after another in this
        process). With ``jobs > 1`` the benchmarks share the CPU cores, so their wall times (and the timings
        of ``"speed"``) are not records, and their printed lines interleave. The index keeps the registry
        order whatever the order of finishing.
    **options
        Passed to the benchmarks that take them (others ignore them).

    Returns
    -------
    pandas.DataFrame
        One row per benchmark: ``benchmark``, ``status`` (``"ok"``, the error, or ``"not run: ..."``), ``rows``
        (result rows),
        ``seconds`` (wall time) and ``out`` (its folder).

    Examples
    --------
    >>> from scsparse.generic.benchmarks import run_all
    >>> index = run_all("bench_out", quick=True, jobs=2)  # doctest: +SKIP
    """
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer (benchmarks run side by side), got {jobs!r}")
    root = make_output_dir(out)
    selected = list(names) if names is not None else list(BENCHMARKS)
    unknown = [n for n in selected if n not in BENCHMARKS]
    if unknown:
        raise ValueError(f"Unknown benchmark(s) {unknown}; available: {', '.join(sorted(BENCHMARKS))}")
    tasks = []
    for name in selected:
        fn = BENCHMARKS[name]
        params = inspect.signature(fn).parameters
        extra = {k: v for k, v in options.items() if k in params}
        kwargs = {"seeds": seeds, "quick": quick, "max_epochs": max_epochs, **extra}
        tasks.append((name, fn, root / name, kwargs, skip_missing_data))
    if jobs == 1 or len(tasks) < 2:
        results = [_run_one(*task) for task in tasks]
    else:
        # spawn: a fresh interpreter per worker, so no torch or BLAS thread pool is inherited through fork
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=context) as pool:
            futures = [pool.submit(_run_one, *task) for task in tasks]
            results = [future.result() for future in futures]
    rows = [row for row, _ in results]
    failures = {row["benchmark"]: failure for row, failure in results if failure is not None}
    index = pd.DataFrame(rows)
    lines = [
        "# scsparse benchmarks",
        "",
        f"quick={quick}, seeds={seeds if seeds is not None else 'default'}, max_epochs={max_epochs or 'default'}",
        "",
        "| benchmark | status | rows | seconds | summary |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        link = f"[{r['benchmark']}/summary.md]({r['benchmark']}/summary.md)"
        lines.append(f"| {r['benchmark']} | {r['status']} | {r['rows']} | {r['seconds']} | {link} |")
    write_summary(root, lines)
    write_csv(index, Path(root) / "index.csv", index=False)
    if failures:
        detail = "\n".join(f"--- {n}\n{tb}" for n, tb in failures.items())
        raise RuntimeError(f"{len(failures)} benchmark(s) failed: {', '.join(failures)}\n{detail}")
    return index
