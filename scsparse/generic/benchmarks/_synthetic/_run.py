"""Synthetic benchmark of Moran et al. (2022): recovering the ground-truth factors of Eq. 9.

Every method of the paper's Figure 3 (sparse VAE, VAE, beta-VAE, VSC, oi-VAE) is fitted on the same
simulated datasets, splits and seeds in one run, and scored by held-out NLL and MSE, DCI disentanglement,
support F-score of ``W`` (methods with a feature x factor loading) and the number of active factors.
"""

from __future__ import annotations

import functools
import math
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from scsparse.generic.metrics import dci_disentanglement, estimated_support, match_factors, support_confusion
from scsparse.utils import check_integer, torch_threads, write_csv

from .. import _report as report
from .._process import quiet_training_logs
from .._tables import markdown_table
from ._methods import (
    ACTIVE_UNIT_THRESHOLD,
    BETA_GRID,
    DCI_SEED,
    METHODS,
    PAPER_RHOS,
    PAPER_SEEDS,
    QUICK_EPOCHS,
    QUICK_RHO,
    SYNTHETIC_SETTINGS,
    VALIDATION_SEED,
    FitFn,
    MethodOutput,
    SyntheticSplit,
    fit_beta_vae,
    make_split,
)
from ._summary import summary_lines, write_figure, write_figure3

__all__ = ["RESULT_COLUMNS", "active_units", "run_synthetic", "select_beta"]

#: Columns of ``results.csv``, in order.
RESULT_COLUMNS: tuple[str, ...] = (
    "method",
    "seed",
    "rho",
    "beta",
    "n_active",
    "active_units",
    "w_fscore",
    "w_precision",
    "w_recall",
    "dci",
    "heldout_nll",
    "heldout_mse",
    "fit_seconds",
)


def active_units(z: np.ndarray, threshold: float = ACTIVE_UNIT_THRESHOLD) -> int:
    """Number of active latent units (Burda et al. 2016): ``Var_cells(E_q[z_k | x]) > threshold``.

    A unit whose posterior mean does not vary across cells carries no information about them (it has
    collapsed onto the prior or been switched off); this count applies to every method alike.

    Parameters
    ----------
    z
        Posterior means of the cells, shape ``(n_obs, K)``.
    threshold
        Variance threshold (Burda et al.: 0.01).

    Returns
    -------
    int
        Number of columns of ``z`` whose variance across rows exceeds ``threshold``.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.column_stack([np.linspace(-1, 1, 50), np.full(50, 0.3)])
    >>> active_units(z)
    1
    """
    z = np.asarray(z, dtype=np.float64)
    if z.ndim != 2:
        raise ValueError(f"z must be 2-d (cells x factors), got shape {z.shape}")
    return int(np.sum(z.var(axis=0) > threshold))


def _score(data: Any, split: SyntheticSplit, res: MethodOutput) -> dict[str, float]:
    """Metrics of one fitted method on one dataset."""
    z_all = np.asarray(res.z, dtype=np.float64)
    if z_all.shape[0] != split.adata_all.n_obs:
        raise ValueError(f"codes have {z_all.shape[0]} rows, expected {split.adata_all.n_obs} (all cells)")
    if not np.all(np.isfinite(z_all)):
        raise FloatingPointError("the method returned non-finite codes (training diverged)")
    Z = np.asarray(data.Z, dtype=np.float64)
    f, prec, rec = math.nan, math.nan, math.nan
    match = None
    if res.W is not None:
        # a true factor is matched to a code by correlation, columns of W that select any feature first: a
        # switched-off code can still track a true factor (see match_factors)
        selecting = estimated_support(res.W, pip=res.pip).any(axis=0)
        match = match_factors(z_all[split.train_idx], Z[split.train_idx], among=selecting)
        conf = support_confusion(res.W, data.W_support, pip=res.pip, column_match=match)
        f, prec, rec = conf.f1, conf.precision, conf.recall
    dci = dci_disentanglement(z_all, Z, regressor="gbt", seed=DCI_SEED).disentanglement
    x_test = np.asarray(split.adata_test.X, dtype=np.float64)
    mse = float(np.mean((x_test - np.asarray(res.test_mean, dtype=np.float64)) ** 2))
    res.extra["column_match"] = match
    return {
        "beta": float(res.beta),
        "n_active": float(res.n_active),
        "active_units": float(active_units(z_all)),
        "w_fscore": float(f),
        "w_precision": float(prec),
        "w_recall": float(rec),
        "dci": float(dci),
        "heldout_nll": float(res.heldout_nll),
        "heldout_mse": mse,
        "fit_seconds": float(res.fit_seconds),
    }


def select_beta(
    rho: float,
    *,
    betas: Sequence[float] = BETA_GRID,
    n_validation: int = 1,
    n_obs: int = 1000,
    max_epochs: int = 200,
    n_latent: int = 5,
    verbose: bool = False,
) -> tuple[float, pd.DataFrame]:
    """Choose the beta-VAE's ``beta`` for one ``rho`` on validation datasets, never on the test datasets.

    Rule: for ``i = 0 .. n_validation - 1`` simulate an Eq. 9 dataset with seed ``10000 + i`` (disjoint
    from the test seeds ``0 .. seeds - 1``), fit a beta-VAE for every ``beta`` on its training cells,
    compute the DCI disentanglement of all its cells' codes; keep the ``beta`` with the highest mean
    validation DCI (ties: the smaller ``beta``). DCI is the metric the benchmark compares, and the
    validation data are simulated from the same model as the test data, so this picks the best beta the
    way the paper's "best beta" does but without looking at any test dataset.

    Parameters
    ----------
    rho
        Correlation of the true factors.
    betas
        Candidates (the paper: 2, 4, 6, 8, 16).
    n_validation
        Number of validation datasets.
    n_obs, max_epochs, n_latent
        As in :func:`run_synthetic`.
    verbose
        Print one line per fit.

    Returns
    -------
    tuple
        The chosen ``beta`` and a table with one row per validation dataset and ``beta``
        (``rho``, ``validation_seed``, ``beta``, ``dci``, ``heldout_nll``, ``chosen``).

    Examples
    --------
    >>> from scsparse.generic.benchmarks._synthetic._run import select_beta
    >>> beta, table = select_beta(0.4, betas=[2.0, 8.0], n_obs=200, max_epochs=2)
    >>> beta in (2.0, 8.0), len(table)
    (True, 2)
    """
    betas = [float(b) for b in betas]
    if not betas or any(not (b > 0 and math.isfinite(b)) for b in betas):
        raise ValueError(f"betas must be a non-empty list of positive numbers, got {betas}")
    check_integer("n_validation", n_validation)
    rows = []
    for i in range(int(n_validation)):
        data, split = make_split(n_obs, rho, VALIDATION_SEED + i)
        for beta in betas:
            res = fit_beta_vae(split, max_epochs, n_latent, beta=beta)
            dci = dci_disentanglement(res.z, data.Z, regressor="gbt", seed=DCI_SEED).disentanglement
            rows.append(
                {
                    "rho": float(rho),
                    "validation_seed": VALIDATION_SEED + i,
                    "beta": beta,
                    "dci": float(dci),
                    "heldout_nll": res.heldout_nll,
                }
            )
            if verbose:
                print(
                    f"[synthetic] select beta rho={rho:g} val seed={VALIDATION_SEED + i} beta={beta:g}: DCI={dci:.3f}"
                )
    table = pd.DataFrame(rows)
    mean_dci = table.groupby("beta", sort=True)["dci"].mean()
    best = float(mean_dci.index[int(np.argmax(mean_dci.to_numpy()))])  # argmax: first (smallest) on ties
    table["chosen"] = table["beta"] == best
    return best, table


# ---------------------------------------------------------------------------------------------- runner
def run_synthetic(
    out: str | os.PathLike[str],
    *,
    rho: Sequence[float] | None = None,
    seeds: int | None = None,
    first_seed: int = 0,
    quick: bool = False,
    max_epochs: int | None = None,
    n_obs: int = 1000,
    n_latent: int = 5,
    methods: Sequence[tuple[str, FitFn]] | None = None,
    betas: Sequence[float] = BETA_GRID,
    n_validation: int = 1,
    n_threads: int | None = 1,
    verbose: bool = True,
) -> pd.DataFrame:
    """Recover the ground-truth factors of the synthetic data of Moran et al. (2022), Eq. 9 (Figure 3).

    For every ``rho`` and seed ``s``: simulate ``simulate_eq9(n_obs, rho, seed=s)``, hold out a fixed 20%
    of the cells (drawn from the seed alone), fit every method on the other cells and score it. The
    beta-VAE's ``beta`` is chosen per ``rho`` on separate validation datasets (:func:`select_beta`).

    Parameters
    ----------
    out
        Output folder; receives ``results.csv``, ``beta_selection.csv``, ``summary.md``, ``figure3.png``
        and ``synthetic.png``. ``results.csv`` is rewritten after every dataset, so a long run can be
        followed.
    rho
        Correlations of the two true factors; ``None``: the paper's 0, 0.2, 0.4, 0.6, 0.8 (``quick``: 0.4).
    seeds
        Number of datasets per ``rho``: seeds ``first_seed .. first_seed + seeds - 1``; ``None``: the paper's 25
        (``quick``: 1).
    first_seed
        The first dataset's seed: a long run can be split over processes or machines (e.g. ``seeds=10`` and
        ``seeds=15, first_seed=10`` make up the paper's 25), and their ``results.csv`` concatenated.
    quick
        A smoke run: 4 epochs, and unless given, one ``rho`` and one seed; every method still runs.
    max_epochs
        Epochs, overriding both ``quick`` and the paper's 200.
    n_obs
        Cells per dataset (the paper: 1000).
    n_latent
        Number of latent factors fitted (the paper: 5, an overestimate of the true 2).
    methods
        ``(name, fit_fn)`` pairs; default :data:`METHODS` (SparseVAE, VAE, beta-VAE, VSC, oi-VAE).
        ``fit_fn(split, max_epochs, n_latent)`` returns a :class:`MethodOutput`; the entry whose
        ``fit_fn`` is :func:`fit_beta_vae` gets the ``beta`` chosen per ``rho``.
    betas
        beta-VAE candidates (the paper: 2, 4, 6, 8, 16); one value is used as is, without selection.
    n_validation
        Validation datasets per ``rho`` for the choice of ``beta``.
    n_threads
        Torch intra-op threads while fitting (restored afterwards); ``None`` leaves the setting alone. The
        default 1 is the fastest for these tiny networks and avoids oversubscribing shared cores.
    verbose
        Print progress and the final table to stdout.

    Returns
    -------
    pandas.DataFrame
        One row per method, ``rho`` and seed with the columns of :data:`RESULT_COLUMNS`: ``beta`` (the
        beta-VAE's), ``n_active`` (factors the model keeps on; ``nan`` without a switch), ``active_units``
        (codes whose posterior mean varies, every method), ``w_fscore``, ``w_precision``, ``w_recall``
        (support of ``W``; ``nan`` without a feature x factor loading), ``dci`` (DCI disentanglement on all
        cells), ``heldout_nll`` (per test cell), ``heldout_mse`` (test reconstruction) and ``fit_seconds``.

    Raises
    ------
    ValueError
        For an empty ``rho``, a non-positive ``seeds``, ``max_epochs`` or ``n_validation``, ``n_latent < 2``,
        a ``rho`` outside ``[-1, 1]`` or an empty ``methods``.

    Examples
    --------
    >>> from scsparse.generic.benchmarks._synthetic._run import run_synthetic
    >>> df = run_synthetic("bench_syn", rho=[0.0, 0.4], seeds=5)  # doctest: +SKIP
    """
    start = time.perf_counter()
    rhos = [float(r) for r in (rho if rho is not None else ((QUICK_RHO,) if quick else PAPER_RHOS))]
    if not rhos:
        raise ValueError("rho must contain at least one value, e.g. rho=[0.0, 0.4]")
    if any(not -1.0 <= r <= 1.0 for r in rhos):
        raise ValueError(f"every rho must lie in [-1, 1] (a correlation), got {rhos}")
    seeds = (1 if quick else PAPER_SEEDS) if seeds is None else seeds
    check_integer("seeds", seeds)
    if isinstance(first_seed, bool) or not isinstance(first_seed, int) or first_seed < 0:
        raise ValueError(f"first_seed must be a non-negative integer, got {first_seed!r}")
    if first_seed + int(seeds) > VALIDATION_SEED:
        raise ValueError(
            f"test seeds must stay below {VALIDATION_SEED}, where beta's validation datasets start; got first_seed="
            f"{first_seed} and seeds={seeds}"
        )
    if max_epochs is not None:
        check_integer("max_epochs", max_epochs)
    if n_latent < 2:
        raise ValueError(f"n_latent must be at least the 2 true factors, got {n_latent}")
    seeds = int(seeds)
    if max_epochs is not None:
        epochs = int(max_epochs)
    else:
        epochs = QUICK_EPOCHS if quick else int(SYNTHETIC_SETTINGS["max_epochs"])
    methods = list(METHODS if methods is None else methods)
    if not methods:
        raise ValueError("methods must contain at least one (name, fit_fn) pair")
    betas = [float(b) for b in betas]
    if not betas:
        raise ValueError("betas must contain at least one value, e.g. betas=[2, 4, 6, 8, 16]")
    check_integer("n_validation", n_validation)
    has_beta = any(fn is fit_beta_vae for _, fn in methods)
    out_dir = report.make_output_dir(out)
    options = {
        "out": str(out_dir),
        "rho": rhos,
        "seeds": seeds,
        "first_seed": first_seed,
        "quick": bool(quick),
        "max_epochs": max_epochs,
        "epochs_used": epochs,
        "n_obs": n_obs,
        "n_latent": n_latent,
        "methods": [name for name, _ in methods],
        "betas": betas,
        "n_validation": int(n_validation),
        "n_threads": n_threads,
    }

    rows: list[dict[str, Any]] = []
    selections: list[pd.DataFrame] = []
    heatmaps: dict[float, dict[str, Any]] = {}
    with torch_threads(n_threads), quiet_training_logs():
        prov = report.provenance("synthetic", options)
        for r in rhos:
            fits: list[tuple[str, FitFn]] = []
            for name, fit_fn in methods:
                if fit_fn is fit_beta_vae:
                    if len(betas) > 1:
                        beta, table = select_beta(
                            r,
                            betas=betas,
                            n_validation=int(n_validation),
                            n_obs=n_obs,
                            max_epochs=epochs,
                            n_latent=n_latent,
                            verbose=verbose,
                        )
                        selections.append(table)
                    else:
                        beta = betas[0]
                    fit_fn = functools.partial(fit_beta_vae, beta=beta)
                fits.append((name, fit_fn))
            for s in range(first_seed, first_seed + seeds):
                data, split = make_split(n_obs, r, s)
                for name, fit_fn in fits:
                    res = fit_fn(split, epochs, n_latent)
                    scores = _score(data, split, res)
                    rows.append({"method": name, "seed": s, "rho": r, **scores})
                    if verbose:
                        print(
                            f"[synthetic] {name} rho={r:g} seed={s}: n_active={scores['n_active']:g} "
                            f"units={scores['active_units']:g} F={scores['w_fscore']:.3f} DCI={scores['dci']:.3f} "
                            f"NLL={scores['heldout_nll']:.3f} MSE={scores['heldout_mse']:.3f} "
                            f"({scores['fit_seconds']:.1f} s)",
                            flush=True,
                        )
                    if s == first_seed and res.W is not None and r not in heatmaps:
                        heatmaps[r] = {
                            "method": name,
                            "seed": s,
                            "W": np.asarray(res.W),
                            "pip": np.asarray(res.pip) if res.pip is not None else np.full_like(res.W, np.nan),
                            "active": list(res.extra.get("active_factors", [])),
                            "column_match": res.extra.get("column_match"),
                        }
                report.write_results(pd.DataFrame(rows, columns=list(RESULT_COLUMNS)), out_dir, RESULT_COLUMNS)

    df = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    report.write_results(df, out_dir, RESULT_COLUMNS)
    selection = (
        pd.concat(selections, ignore_index=True)
        if selections
        else pd.DataFrame(columns=["rho", "validation_seed", "beta", "dci", "heldout_nll", "chosen"])
    )
    write_csv(selection, out_dir / "beta_selection.csv", index=False)
    lines = summary_lines(
        df,
        prov,
        rhos=rhos,
        seeds=seeds,
        first_seed=first_seed,
        quick=quick,
        n_obs=n_obs,
        n_latent=n_latent,
        epochs=epochs,
        methods=[name for name, _ in methods],
        betas=betas if has_beta else [],
        n_validation=int(n_validation),
        selection=selection,
        total_seconds=time.perf_counter() - start,
    )
    report.write_summary(out_dir, lines)
    write_figure3(out_dir, df)
    write_figure(out_dir, df, heatmaps)
    table = markdown_table(df, ["method", "rho"], ["n_active", "w_fscore", "dci", "heldout_mse"])
    files = ["results.csv", "beta_selection.csv", "summary.md", "figure3.png", "synthetic.png"]
    return report.finish_run(
        df, out_dir, table, report.wrote_line("synthetic", files, out_dir=out_dir), verbose=verbose
    )
