"""``scsparse bench peers``: SparseVAE against the tools single-cell users would pick instead, on real data.

On each data set of :data:`._real_data.REAL_DATASETS`, every chosen method of :data:`._programme_methods.PEER_METHODS`
(by default :data:`._programme_methods.DEFAULT_METHODS`; on the data sets of the multi-study arm, of
:data:`._multistudy.MULTISTUDY_METHODS`) is fitted with
the same genes, the same maximum number of factors, the same seeds and the same epoch budget,
one after the other in one process, and its programmes are read the way its authors recommend. Each fit is
scored on biology recovered, parsimony, information, batch leakage, stability over seeds and cost
(:mod:`._programme_scores`). ``results.csv`` has one row per data set, method and seed; ``summary.md`` a table per
data set, who wins each metric, where SparseVAE loses, and the targets; ``peers_<data set>.png`` the main
metrics.

With ``resume``, the fits of an earlier run into the same folder (``results.csv`` and the programmes it saved in
``programmes/<data set>.json``) are kept and only the missing ones are fitted, so a run stopped part-way goes on
where it stopped; the SparseVAE models it saved in ``models/<data set>/`` (every restart as it ends) are loaded, so
a consensus stopped after some of its restarts fits only the others.

A method that cannot run in the environment (DRVI before scvi-tools 1.5, cNMF or MOFA+ without the ``peers``
extra) gets rows with ``status`` "not run: <reason>". In a full run a method that fails is recorded as
"failed: <error>" and the run goes on; ``quick`` runs raise instead, so a smoke test cannot pass over a broken
method.
"""

from __future__ import annotations

import functools
import json
import math
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scsparse.utils import check_integer, write_text

from .._fits import ModelStore
from .._process import cpu_threads, quiet_training_logs
from .._programme_fit import FitBudget
from .._programme_methods import DEFAULT_METHODS, PEER_METHODS, MethodUnavailable, fit_peer
from .._programme_scores import METRICS, score_fit, stability_scores
from .._real_data import REAL_DATASETS, load_real_dataset
from .._report import (
    finish_run,
    make_output_dir,
    provenance,
    reference_seconds,
    run_options,
    write_results,
    write_summary,
    wrote_line,
)
from .._settings import chosen_names
from ._multistudy import MULTISTUDY_METHODS, fit_multistudy_peer
from ._summary import peers_figure, summary_lines

__all__ = ["RESULT_COLUMNS", "run_peers"]

RESULT_COLUMNS: list[str] = [
    "dataset", "method", "seed", "status", "n_cells", "n_genes", "n_factors", "max_epochs", *METRICS,
    "settled", "epochs", "ref_seconds",
]  # fmt: skip

#: Settings of a full run and of ``quick`` (300 cells, 300 genes, 40 epochs: a smoke run of every data set and
#: method, whose numbers are not read).
_FULL = FitBudget(
    n_factors=20, max_epochs=400, n_top=50, restarts=3, consensus_restarts=5, cnmf_iterations=100, mofa_iterations=1000
)
_QUICK = FitBudget(
    n_factors=5, max_epochs=40, n_top=50, restarts=2, consensus_restarts=2, cnmf_iterations=10, mofa_iterations=100
)


def _warm_up() -> None:
    """Import what the methods import, so that no fit's time or memory includes a first import."""
    import importlib

    for module in (
        "scvi", "scanpy", "sklearn.decomposition", "scsparse.model", "scsparse.tl", "cnmf", "mofapy2.run.entry_point",
    ):  # fmt: skip
        try:
            importlib.import_module(module)
        except ImportError:
            pass


def _row(dataset: str, method: str, seed: int, adata, budget: FitBudget, status: str) -> dict[str, Any]:
    row = dict.fromkeys(RESULT_COLUMNS, math.nan)
    row.update(
        dataset=dataset,
        method=method,
        seed=seed,
        status=status,
        n_cells=adata.n_obs,
        n_genes=adata.n_vars,
        n_factors=budget.n_factors,
        max_epochs=budget.max_epochs,
    )
    return row


def _save(out_dir: Path, done: list[dict[str, Any]], current: list[dict[str, Any]]) -> None:
    """``results.csv`` of the data sets done and the fits of the current one: a stopped run keeps what it has."""
    write_results(pd.DataFrame(done + current, columns=RESULT_COLUMNS), out_dir, RESULT_COLUMNS)


def _programmes_file(out_dir: Path, name: str) -> Path:
    return out_dir / "programmes" / f"{name}.json"


def _save_programmes(
    out_dir: Path,
    name: str,
    programmes: dict[str, dict[int, list[np.ndarray]]],
    genes,
    carried: dict[str, list[list[str]]],
) -> None:
    """Every fit's programmes as gene names (``"method|seed"`` -> lists), for stability when a run is resumed.

    ``carried``: the saved programmes of the fits outside this run's methods and seeds, written back unchanged.
    """
    names = np.asarray(genes).astype(str)
    data = carried | {
        f"{m}|{s}": [names[p].tolist() for p in progs]
        for m, by_seed in programmes.items()
        for s, progs in by_seed.items()
    }
    path = _programmes_file(out_dir, name)
    path.parent.mkdir(exist_ok=True)
    write_text(path, json.dumps(data))


def _earlier_results(out_dir: Path) -> pd.DataFrame:
    path = out_dir / "results.csv"
    return pd.read_csv(path) if path.is_file() else pd.DataFrame(columns=RESULT_COLUMNS)


def _in_run(frame: pd.DataFrame, datasets: list[str], methods: list[str], seeds: int) -> pd.Series:
    """Which rows of ``frame`` this run makes (its data sets x methods x seeds ``0 .. seeds - 1``)."""
    return frame["dataset"].isin(datasets) & frame["method"].isin(methods) & (frame["seed"].astype(int) < seeds)


def _saved_programmes(out_dir: Path, name: str) -> dict[str, list[list[str]]]:
    """The programmes an earlier run into ``out_dir`` saved for data set ``name`` (``"method|seed"`` -> lists)."""
    file = _programmes_file(out_dir, name)
    return json.loads(file.read_text()) if file.is_file() else {}


def _carried_programmes(
    saved: dict[str, list[list[str]]], name: str, methods: list[str], seeds: int
) -> dict[str, list[list[str]]]:
    """The ``saved`` programmes of data set ``name`` made by fits outside this run's methods and seeds."""
    keys = pd.DataFrame([[name, *k.rsplit("|", 1)] for k in saved], columns=["dataset", "method", "seed"])
    made = _in_run(keys, [name], methods, seeds).to_numpy()
    return {k: v for (k, v), again in zip(saved.items(), made, strict=True) if not again}


def _earlier_fits(
    earlier: pd.DataFrame, saved: dict[str, list[list[str]]], out_dir: Path, name: str, adata, budget: FitBudget
) -> dict[tuple[str, int], tuple[dict[str, Any], list[np.ndarray]]]:
    """The fits of data set ``name`` in ``earlier`` (the ``results.csv`` an earlier run into ``out_dir`` left, read
    before this run wrote to it) with their ``saved`` programmes: ``(method, seed)`` -> (row, programmes).

    Raises
    ------
    ValueError
        When the earlier fits were made on other cells or genes, or with another ``K`` or epoch budget.
    """
    earlier = earlier[earlier["dataset"] == name]
    index = {g: j for j, g in enumerate(np.asarray(adata.var_names).astype(str))}
    wanted = (adata.n_obs, adata.n_vars, budget.n_factors, budget.max_epochs)
    out = {}
    for row in earlier.to_dict("records"):
        made = tuple(int(row[k]) for k in ("n_cells", "n_genes", "n_factors", "max_epochs"))
        if made != wanted:
            raise ValueError(
                f"{out_dir / 'results.csv'} holds {name} fits of {made[0]} cells x {made[1]} genes, K = {made[2]}, "
                f"{made[3]} epochs; this run has {wanted[0]} x {wanted[1]}, K = {wanted[2]}, {wanted[3]} epochs. "
                "Resume with the settings of the earlier run, or write to another --out."
            )
        key = f"{row['method']}|{int(row['seed'])}"
        if row["status"] == "ok" and key in saved:
            out[(str(row["method"]), int(row["seed"]))] = (row, [np.asarray([index[g] for g in p]) for p in saved[key]])
    return out


def _run_dataset(
    name: str,
    methods: list[str],
    seeds: int,
    budget: FitBudget,
    quick: bool,
    verbose: bool,
    save: Callable[[list[dict[str, Any]]], None],
    out_dir: Path,
    earlier_results: pd.DataFrame | None,
) -> tuple[list[dict[str, Any]], int]:
    """Every method and seed on one data set; ``save(rows)`` after each fit (stability is added at the end).

    With ``earlier_results`` (a resumed run), the fits they hold whose programmes were saved in ``out_dir`` are
    kept, not fitted again. Returns the rows and the number of them kept from the earlier run.
    """
    spec = REAL_DATASETS[name]
    methods = [m for m in methods if m in (MULTISTUDY_METHODS if spec.study_key else PEER_METHODS)]
    if not methods:
        return [], 0
    adata = load_real_dataset(name, quick=quick)
    if verbose:
        print(f"[peers] {name}: {adata.n_obs} cells x {adata.n_vars} genes", flush=True)
    rows: list[dict[str, Any]] = []
    n_kept = 0
    programmes: dict[str, dict[int, list[np.ndarray]]] = {m: {} for m in methods}
    saved = {} if earlier_results is None else _saved_programmes(out_dir, name)
    earlier = {} if earlier_results is None else _earlier_fits(earlier_results, saved, out_dir, name, adata, budget)
    for (method, seed), (_, kept) in earlier.items():  # every save below keeps them, whenever the run stops
        if method in programmes and seed < seeds:
            programmes[method][seed] = kept
    carried = _carried_programmes(saved, name, methods, seeds)
    # the SparseVAE fits, saved as they end: a seed's plain fit is restart 0 of its consensus, and a resumed run
    # loads the fits an earlier one finished, down to the single restarts of a consensus it was in the middle of
    store = ModelStore(out_dir / "models" / name, reuse=earlier_results is not None)
    for seed in range(seeds):
        for method in methods:
            if (method, seed) in earlier:
                rows.append(earlier[(method, seed)][0])
                n_kept += 1
                save(rows)
                if verbose:
                    print(f"[peers] {name} seed {seed} {method}: kept from the earlier run", flush=True)
                continue
            row = _row(name, method, seed, adata, budget, "ok")
            row["ref_seconds"] = reference_seconds()  # the CPU's speed as the fit starts (rows of several runs)
            try:
                if spec.study_key:
                    fit = fit_multistudy_peer(method, adata, budget, seed, spec.study_key)
                else:
                    fit = fit_peer(method, adata, budget, seed, spec.batch_key, store=store)
            except MethodUnavailable as exc:
                row["status"] = f"not run: {exc}"
            except Exception as exc:
                if quick:
                    raise
                row["status"] = f"failed: {type(exc).__name__}: {exc}"
                traceback.print_exc()
            else:
                row.update(score_fit(fit, adata, spec, seed))
                row.update({k: fit.extra.get(k, math.nan) for k in ("settled", "epochs")})
                programmes[method][seed] = list(fit.programmes.values())
                _save_programmes(out_dir, name, programmes, adata.var_names, carried)
            rows.append(row)
            save(rows)
            if verbose:
                shown = ", ".join(
                    f"{k} {row[k]:.3g}"
                    for k in ("factors_kept", "median_genes", "enriched_share", "accuracy", "seconds")
                    if isinstance(row[k], float) and not math.isnan(row[k])
                )
                print(f"[peers] {name} seed {seed} {method}: {row['status']}; {shown}", flush=True)
    for method, by_seed in programmes.items():
        for seed, values in stability_scores(by_seed, adata.n_vars).items():
            for row in rows:
                if row["method"] == method and row["seed"] == seed:
                    row.update(values)
    return rows, n_kept


def run_peers(
    out: str | Path,
    *,
    seeds: int | None = None,
    quick: bool = False,
    max_epochs: int | None = None,
    datasets: str | Sequence[str] | None = None,
    methods: str | Sequence[str] | None = None,
    n_threads: int | None = 1,
    resume: bool = False,
    verbose: bool = True,
) -> pd.DataFrame:
    """Fit SparseVAE and its peers on real single-cell data and compare their programmes.

    Parameters
    ----------
    out
        Output folder: ``results.csv``, ``summary.md``, ``peers_<data set>.png``, ``programmes/<data set>.json``
        and ``models/<data set>/`` (every SparseVAE fit, a few MB each, which ``resume`` loads).
    seeds
        Seeds ``0 .. seeds - 1`` per data set and method (default 3; quick: 1). Stability needs at least 2.
    quick
        A smoke run: 300 cells and 300 genes per data set, ``K = 5``, 40 epochs, 2 restarts, 10 cNMF replicates,
        100 MOFA+ iterations.
    max_epochs
        Epoch budget of the neural methods (default 400; SparseVAE may stop earlier once settled).
    datasets
        Data sets to run (comma-separated or a list; default: all of :data:`._real_data.REAL_DATASETS`).
    methods
        Methods to run (default: :data:`._programme_methods.DEFAULT_METHODS`, all of
        :data:`._programme_methods.PEER_METHODS` but the restarts, and, on the multi-study data sets, all of
        :data:`._multistudy.MULTISTUDY_METHODS`).
    n_threads
        CPU threads for torch and for the BLAS and OpenMP pools of the other methods (NMF, cNMF, MOFA+, PCA),
        through ``threadpoolctl`` (``None``: the libraries' defaults). One thread per method keeps methods that
        would use every core from being timed on more cores than the others.
    resume
        Keep the fits an earlier run into ``out`` finished (same cells, genes, ``K`` and epochs) and fit only the
        missing ones, loading the SparseVAE fits it saved (a consensus goes on after its last finished restart);
        the rows and programmes of the data sets, methods and seeds this run does not choose are carried over as
        they are (their stability as the run that made them measured it), so a record can be fitted in parts.
    verbose
        Print one line per fit.

    Returns
    -------
    pandas.DataFrame
        One row per data set, method and seed (the content of ``results.csv``).

    Raises
    ------
    ValueError
        For an unknown data set or method, a bad number of seeds or epochs, or (``resume``) earlier fits made
        with other settings.
    scsparse.data.DataNotAvailableError
        When a data set is not in the local cache.
    """
    seeds = (1 if quick else 3) if seeds is None else seeds
    check_integer("seeds", seeds)
    budget = (_QUICK if quick else _FULL).with_max_epochs(max_epochs)
    chosen_data = chosen_names(datasets, list(REAL_DATASETS), "data set(s)")
    chosen_methods = chosen_names(
        [*DEFAULT_METHODS, *MULTISTUDY_METHODS] if methods is None else methods,
        [*PEER_METHODS, *MULTISTUDY_METHODS],
        "method(s)",
    )
    out_dir = make_output_dir(out)
    options = run_options(
        out_dir, seeds, quick, budget.max_epochs, datasets=chosen_data, methods=chosen_methods,
        n_threads=n_threads, resume=resume, config=budget.__dict__,
    )  # fmt: skip
    start = time.perf_counter()
    earlier = _earlier_results(out_dir) if resume else None  # read once, before this run writes results.csv
    # the earlier fits this run does not make (other data sets, methods or seeds) are carried over as they are
    rows: list[dict[str, Any]] = (
        [] if earlier is None else earlier[~_in_run(earlier, chosen_data, chosen_methods, seeds)].to_dict("records")
    )
    figures: list[str] = []
    n_kept = 0
    with cpu_threads(n_threads), quiet_training_logs():
        prov = provenance("peers", options)  # inside the block: it records the threads the fits ran with
        _warm_up()
        for name in chosen_data:
            save = functools.partial(_save, out_dir, list(rows))
            new, kept = _run_dataset(name, chosen_methods, seeds, budget, quick, verbose, save, out_dir, earlier)
            rows += new
            n_kept += kept
            df = pd.DataFrame(rows, columns=RESULT_COLUMNS)
            write_results(df, out_dir, RESULT_COLUMNS)
            figure = peers_figure(df[df["dataset"] == name], name, out_dir)
            if figure is not None:
                figures.append(figure.name)
    df = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    seconds = time.perf_counter() - start
    write_summary(out_dir, summary_lines(df, prov, budget, quick=quick, total_seconds=seconds, n_kept=n_kept))
    done = wrote_line("peers", ["results.csv", "summary.md", *figures], out_dir=out_dir, seconds=seconds)
    return finish_run(df, out_dir, done, verbose=verbose)
