"""``scsparse bench stability``: what a refit with another seed keeps of each programme, and where the seed enters.

On each single-study data set of ``bench peers`` (:data:`._real_data.REAL_DATASETS`), SparseVAE is fitted
with several seeds in each of the :data:`VARIANTS`, and every pair of seeds of a variant is compared with
:func:`scsparse.generic.metrics.programme_agreement`, which separates what moves:

- ``jaccard`` — the programmes' gene sets (one-to-one matching, a programme without a counterpart counts 0; the
  measure ``bench peers`` calls stability);
- ``top_overlap`` and ``rbo`` — their cores: the 10 strongest genes of each matched programme, and the
  rank-biased overlap (p = 0.9) of the two rankings;
- ``loadings_corr`` — ``|corr|`` of the matched loading columns;
- ``n_active_diff`` — the difference in the number of active factors.

The variants separate the sources of randomness: ``default`` draws the initial weights and the training (the
train/validation split, the minibatch order, dropout and the sampled codes) from the seed, as a user's refit
does; ``fixed_init`` keeps the initial weights of seed 0 and draws only the training; ``fixed_training`` draws
only the initial weights. Two tried remedies run as variants too: ``nmf_start`` starts ``W`` from an NMF of the
data (``SparseVAE(mask_init="nmf")``), ``lambda0_ladder`` raises the spike's rate ``lambda0`` from 1.5 to the
model's over the first 80 epochs (:class:`Lambda0Ladder`). Each fit is also scored as ``bench peers`` scores
it (held-out cell-type accuracy, the known programmes, programme size) with its held-out negative
log-likelihood, so a change that raises agreement can be checked for what it costs.

On the data sets of ``bench peers``' multi-study arm (named with ``datasets``; ``kang_studies``,
``cellbench_studies``) the model is :class:`~scsparse.model.MultiStudySparseVAE` with the arm's split of ``K``
(``K - 5`` shared factors, 5 specific to each study), and two fits are compared block by block: a shared programme
only with shared ones, a study's only with that study's, as its consensus matches them. The variants that do not
apply to it (``nmf_start``: the multi-study model has the constant start only) are left out there.

``results.csv`` has one row per data set, variant and seed; ``agreement.csv`` one row per pair of seeds;
``summary.md`` the mean ± sd of each measure per data set and variant with the targets. With at least 4 seeds, a
variant's single fits also give its consensus fits at no cost (:mod:`._consensus`): two disjoint sets of
``R`` seeds, each set's consensus, compared (``consensus.csv``), and each kept programme's reproducibility against
its best match in the other consensus (``consensus_programmes.csv``). Seeds on the same cells cannot tell whether
other cells of the same tissue would give the same programmes (and a deterministic method passes them by
construction): the resampling reading (``halves``, :mod:`._halves`) splits each single-study data set's
cells into two random halves, fits each with its own seeds (single fits, their pooled consensus, and NMF and cNMF
on the same halves) and compares fits of one half with fits of the other (``halves.csv``). The fits' programmes,
loadings and ``p*`` are saved under ``fits/``, so ``resume`` fits only what an earlier run into the same folder
left out.
"""

from __future__ import annotations

import json
import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scsparse.generic.metrics import AGREEMENT_MEASURES, ProgrammeSet, pairwise_agreement
from scsparse.utils import atomic_path, check_integer, write_text

from .._fits import fit_sparsevae, measured, user_model
from .._process import cpu_threads, quiet_training_logs
from .._programme_fit import FitBudget, read_sparsevae
from .._programme_scores import score_fit
from .._real_data import REAL_DATASETS, RealDataset, load_real_dataset
from .._report import (
    finish_run,
    make_output_dir,
    provenance,
    run_options,
    write_results,
    write_summary,
    wrote_line,
)
from .._settings import chosen_names
from ._consensus import (
    CONSENSUS_COLUMNS,
    REPRODUCIBILITY_COLUMNS,
    FitMask,
    consensus_agreement,
)
from ._halves import HALVES_COLUMNS, HALVES_PEERS, halves_agreement
from ._same_seed import SAME_SEED_COLUMNS, same_seed_agreement
from ._settings import (
    FIT_METRICS,
    VARIANTS,
    Lambda0Ladder,
    StabilityVariant,
)
from ._summary import summary_lines

__all__ = [
    "AGREEMENT_COLUMNS",
    "RESULT_COLUMNS",
    "SECTIONS",
    "VARIANTS",
    "Lambda0Ladder",
    "StabilityVariant",
    "run_stability",
]


#: The parts of a run: the variants with several seeds on all the cells, and the resampling reading.
SECTIONS: tuple[str, ...] = ("seeds", "halves")


RESULT_COLUMNS: list[str] = [
    "dataset", "variant", "seed", "init_seed", "training_seed", "n_cells", "n_genes", "n_factors", "max_epochs",
    *FIT_METRICS,
]  # fmt: skip
AGREEMENT_COLUMNS: list[str] = [
    "dataset",
    "variant",
    "seed_a",
    "seed_b",
    *AGREEMENT_MEASURES,
    "n_active_a",
    "n_active_b",
]


_FULL = FitBudget(n_factors=20, max_epochs=400)
_QUICK = FitBudget(n_factors=5, max_epochs=60)
_MULTI_STUDY = {name for name, spec in REAL_DATASETS.items() if spec.study_key}


def _fit_path(out_dir: Path, dataset: str, variant: str, seed: int, part: str = "") -> Path:
    return out_dir / "fits" / dataset / part / f"{variant}_seed{seed}"


@dataclass
class _SavedFit:
    """One run as it is saved: its row, programmes (gene names) and active loadings, with blocks if it has them."""

    row: dict[str, Any]
    programmes: dict[str, list[str]]
    loadings: np.ndarray
    scopes: dict[str, str] | None = None  # programme -> block (multi-study fits)
    factor_scopes: list[str] | None = None  # block of each loading column
    mask: FitMask | None = None  # p* and W of every factor, for the consensus of single fits

    def programme_set(self, genes: Sequence[str]) -> ProgrammeSet:
        """The fit as the agreement measures read it, genes as indices into ``genes``."""
        index = {g: j for j, g in enumerate(genes)}
        programmes = [np.asarray([index[g] for g in p], dtype=np.int64) for p in self.programmes.values()]
        scopes = None if self.scopes is None else [self.scopes[name] for name in self.programmes]
        return ProgrammeSet(programmes, self.loadings, scopes=scopes, factor_scopes=self.factor_scopes)


def _save_fit(path: Path, fit: _SavedFit) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path.with_suffix(".npy")) as tmp:
        np.save(tmp, fit.loadings)
    saved = {"row": fit.row, "programmes": fit.programmes, "scopes": fit.scopes, "factor_scopes": fit.factor_scopes}
    if fit.mask is not None:
        with atomic_path(path.with_suffix(".npz")) as tmp:
            np.savez_compressed(tmp, pip=fit.mask.pip, weights=fit.mask.weights)
        saved["factor_blocks"] = fit.mask.factor_blocks
    write_text(path.with_suffix(".json"), json.dumps(saved))  # last: the record of a complete fit


def _load_fit(path: Path, wanted: dict[str, Any]) -> _SavedFit | None:
    """A fit an earlier run saved, if it was made with the same cells, genes, ``K`` and epochs."""
    if not path.with_suffix(".json").is_file() or not path.with_suffix(".npy").is_file():
        return None
    saved = json.loads(path.with_suffix(".json").read_text())
    row = saved["row"]
    made = {k: row[k] for k in wanted}
    if made != wanted:
        raise ValueError(
            f"{path.with_suffix('.json')} was fitted with {made}; this run has {wanted}. Resume with the settings of "
            "the earlier run, or write to another --out."
        )
    mask = None
    if path.with_suffix(".npz").is_file():  # a fit saved without its p* gives no consensus
        with np.load(path.with_suffix(".npz")) as arrays:
            mask = FitMask(arrays["pip"], arrays["weights"], saved.get("factor_blocks"))
    return _SavedFit(
        row, saved["programmes"], np.load(path.with_suffix(".npy")), saved.get("scopes"), saved.get("factor_scopes"),
        mask,
    )  # fmt: skip


def _consensus_model(adata, budget: FitBudget, first_seed: int, spec: RealDataset, variant: StabilityVariant):
    """A consensus of ``variant.restarts`` restarts with seeds ``first_seed, first_seed + 1, ...``."""
    from scsparse.train import FitNotSettledWarning

    model_class, factors = user_model(adata, budget.n_factors, batch_key=spec.batch_key, study_key=spec.study_key)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitNotSettledWarning)
        return model_class.consensus(
            adata, variant.restarts, seed=first_seed, **factors, **variant.model_kwargs,
            train_kwargs={"max_epochs": budget.max_epochs, "enable_progress_bar": False},
        )  # fmt: skip


def _fit(
    dataset: str, variant: StabilityVariant, seed: int, adata, budget: FitBudget, row: dict[str, Any]
) -> _SavedFit:
    """Fit and score one run."""
    spec = REAL_DATASETS[dataset]
    init_seed, training_seed = variant.seeds(seed)
    with measured() as m:
        if variant.restarts > 1:
            model = _consensus_model(adata.copy(), budget, init_seed, spec, variant)
        else:
            train_kwargs = {"callbacks": variant.callbacks()} if variant.callbacks is not None else {}
            train_kwargs.update(variant.train_kwargs)
            model = fit_sparsevae(
                adata.copy(), budget.n_factors, budget.max_epochs, training_seed, spec.batch_key,
                init_seed=init_seed, train_kwargs=train_kwargs, study_key=spec.study_key, **variant.model_kwargs,
            )  # fmt: skip
        fit = read_sparsevae(model, adata.copy(), type(model).__name__)
    fit.seconds, fit.peak_mb = m["seconds"], m["peak_mb"]
    scores = score_fit(fit, adata, spec, seed)
    row.update({k: scores[k] for k in FIT_METRICS if k in scores})
    row["epochs"] = fit.extra["epochs"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row["heldout_nll"] = float(model.get_heldout_nll(n_mc_samples=50))
    active = model.active_factors()
    weights = model.get_loadings()
    loadings = weights[active].to_numpy(dtype=np.float64)
    pip = model.get_inclusion_probabilities()[weights.columns].to_numpy(dtype=np.float64)
    genes = np.asarray(adata.var_names).astype(str)
    programmes = {name: genes[idx].tolist() for name, idx in fit.programmes.items()}
    if not spec.study_key:
        mask = FitMask(pip, weights.to_numpy(dtype=np.float64)) if variant.restarts == 1 else None
        return _SavedFit(row, programmes, loadings, mask=mask)
    study = model.factor_table().set_index("factor")["study"].astype(str)
    block = {f: "shared" if study[f] == "all" else study[f] for f in weights.columns}
    mask = FitMask(pip, weights.to_numpy(dtype=np.float64), [block[f] for f in weights.columns])
    return _SavedFit(
        row, programmes, loadings, dict(fit.scope), [block[f] for f in active],
        mask if variant.restarts == 1 else None,
    )  # fmt: skip


def _halves(
    dataset: str, adata, seeds: int, draws: int, budget: FitBudget, out_dir: Path, resume: bool, verbose: bool
) -> pd.DataFrame:
    """The resampling reading of one data set: the default variant and the peers on random halves of its cells."""
    from .._programme_methods import MethodUnavailable, fit_peer

    spec = REAL_DATASETS[dataset]

    def fit_half(half, part: str) -> dict[int, FitMask]:
        return _run_variant(dataset, VARIANTS["default"], seeds, half, budget, out_dir, resume, verbose, part)[3]

    def fit_peer_half(method: str, half, seed: int) -> ProgrammeSet | None:
        try:
            fit = fit_peer(method, half, budget, seed, spec.batch_key)
        except MethodUnavailable as exc:
            if verbose:
                print(f"[stability] {dataset} halves: {method} not run ({exc})", flush=True)
            return None
        return ProgrammeSet(list(fit.programmes.values()))

    return halves_agreement(
        dataset, adata, seeds=seeds, draws=draws, fit_half=fit_half, fit_peer_half=fit_peer_half, peers=HALVES_PEERS
    )


def _run_variant(
    dataset: str,
    variant: StabilityVariant,
    seeds: int,
    adata,
    budget: FitBudget,
    out_dir: Path,
    resume: bool,
    verbose: bool,
    part: str = "",
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[int, ProgrammeSet], dict[int, FitMask | None]]:
    """Every seed of one variant on one data set, then the agreement of every pair of seeds.

    ``part`` names a subset of the data set's cells (a half of the resampling reading), whose fits are stored
    apart. Returns the rows, the pairs, each seed's programmes, and each seed's p* and ``W`` (``None`` for a
    consensus run, or a fit saved without).
    """
    genes = np.asarray(adata.var_names).astype(str).tolist()
    wanted = {
        "n_cells": adata.n_obs,
        "n_genes": adata.n_vars,
        "n_factors": budget.n_factors,
        "max_epochs": budget.max_epochs,
    }
    rows, fits, masks = [], {}, {}
    for seed in range(seeds):
        path = _fit_path(out_dir, dataset, variant.name, seed, part)
        earlier = _load_fit(path, wanted) if resume else None
        if earlier is not None:
            fits[seed], masks[seed] = earlier.programme_set(genes), earlier.mask
            rows.append(earlier.row)
            if verbose:
                print(f"[stability] {dataset}{part and ' ' + part} {variant.name} seed {seed}: kept from the earlier "
                      "run", flush=True)  # fmt: skip
            continue
        init_seed, training_seed = variant.seeds(seed)
        row = dict.fromkeys(RESULT_COLUMNS, math.nan)
        row.update(
            dataset=dataset, variant=variant.name, seed=seed, init_seed=init_seed, training_seed=training_seed, **wanted
        )
        saved = _fit(dataset, variant, seed, adata, budget, row)
        _save_fit(path, saved)
        fits[seed], masks[seed] = saved.programme_set(genes), saved.mask
        rows.append(saved.row)
        if verbose:
            print(
                f"[stability] {dataset}{part and ' ' + part} {variant.name} seed {seed}: {row['factors_kept']:.0f} "
                "active factors, "
                f"{row['programmes']:.0f} programmes (median {row['median_genes']:.0f} genes), "
                f"{row['epochs']:.0f} epochs, {row['seconds']:.0f} s",
                flush=True,
            )
    pairs = pairwise_agreement(fits, adata.n_vars)
    pairs.insert(0, "variant", variant.name)
    pairs.insert(0, "dataset", dataset)
    return rows, pairs.to_dict("records"), fits, masks


def run_stability(
    out: str | Path,
    *,
    seeds: int | None = None,
    quick: bool = False,
    max_epochs: int | None = None,
    datasets: str | Sequence[str] | None = None,
    methods: str | Sequence[str] | None = None,
    n_threads: int | None = 1,
    resume: bool = False,
    halves: int | None = None,
    sections: str | Sequence[str] | None = None,
    verbose: bool = True,
) -> pd.DataFrame:
    """Fit SparseVAE with several seeds per data set and variant and measure what the programmes keep.

    Parameters
    ----------
    out
        Output folder: ``results.csv``, ``agreement.csv``, ``summary.md`` and ``fits/``.
    seeds
        Seeds ``0 .. seeds - 1`` per data set and variant (default 5; quick: 2). At least 2.
    quick
        A smoke run: 300 cells and 300 genes of Kang, ``K = 5``, 60 epochs, the default variant.
    max_epochs
        Epoch budget (default 400; a fit stops earlier once settled).
    datasets
        Data sets (comma-separated or a list; default: the single-study data sets of ``bench peers``). The
        multi-study ones (``kang_studies``, ``cellbench_studies``) fit MultiStudySparseVAE and are compared block
        by block.
    methods
        Variants of :data:`VARIANTS` (default: all, on a multi-study data set those that apply to it; quick:
        ``default``).
    n_threads
        CPU threads for torch and the BLAS pools (``None``: the libraries' defaults).
    resume
        Keep the fits an earlier run into ``out`` saved (same cells, genes, ``K`` and epochs); fit only the others.
    halves
        Random halvings of each single-study data set's cells for the resampling reading (``halves.csv``; default
        1, quick: 0): each half fitted with ``seeds`` seeds of the default variant, and NMF and cNMF fitted to the
        same halves; fits of one half compared with fits of the other (:mod:`._halves`).
    sections
        Parts of :data:`SECTIONS` to run (comma-separated or a list; default: both): ``"seeds"``, the variants
        fitted with several seeds to all the cells; ``"halves"``, the resampling reading alone (with ``halves``
        of at least 1).
    verbose
        Print one line per fit.

    Returns
    -------
    pandas.DataFrame
        One row per data set, variant and seed (``results.csv``); ``attrs["agreement"]`` holds the pairs.

    Raises
    ------
    ValueError
        An unknown data set, variant or section, a variant named for a multi-study data set it does not apply to,
        fewer than two seeds, the ``halves`` section without halvings, or (``resume``) fits made with other
        settings.
    """
    seeds = (2 if quick else 5) if seeds is None else seeds
    check_integer("seeds", seeds)
    if seeds < 2:
        raise ValueError(f"Stability needs at least 2 seeds, got {seeds}.")
    budget = (_QUICK if quick else _FULL).with_max_epochs(max_epochs)
    single = [n for n in REAL_DATASETS if n not in _MULTI_STUDY]
    if datasets is None:
        chosen_data = ["kang"] if quick else single
    else:
        chosen_data = chosen_names(datasets, list(REAL_DATASETS), "data set(s)")
    chosen = chosen_names(methods if methods is not None or not quick else "default", list(VARIANTS), "variant(s)")
    if methods is not None and any(name in _MULTI_STUDY for name in chosen_data):
        refused = [v for v in chosen if not VARIANTS[v].multi_study]
        if refused:
            raise ValueError(
                f"The variant(s) {refused} do not apply to the multi-study data sets "
                f"{[n for n in chosen_data if n in _MULTI_STUDY]} (MultiStudySparseVAE has the constant start only). "
                "Leave them out, or choose single-study data sets for them."
            )
    halves = (0 if quick else 1) if halves is None else halves
    if isinstance(halves, bool) or not isinstance(halves, int) or halves < 0:
        raise ValueError(f"halves must be a whole number of random halvings (0: none), got {halves!r}.")
    chosen_sections = set(chosen_names(sections if sections is not None else list(SECTIONS), SECTIONS, "section(s)"))
    if chosen_sections == {"halves"} and not halves:
        raise ValueError("The 'halves' section needs at least one random halving: pass halves >= 1 (--halves N).")
    out_dir = make_output_dir(out)
    options = run_options(
        out_dir, seeds, quick, budget.max_epochs, datasets=chosen_data, methods=chosen, n_threads=n_threads,
        resume=resume, n_factors=budget.n_factors, halves=halves,
        sections=[name for name in SECTIONS if name in chosen_sections],
    )  # fmt: skip
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    pairs: list[dict[str, Any]] = []
    consensus, consensus_programmes, resampled, same_seed = [], [], [], []
    with cpu_threads(n_threads), quiet_training_logs():
        prov = provenance("stability", options)
        for name in chosen_data:
            adata = load_real_dataset(name, quick=quick)
            if verbose:
                print(f"[stability] {name}: {adata.n_obs} cells x {adata.n_vars} genes", flush=True)
            programme_sets: dict[str, dict[int, ProgrammeSet]] = {}
            for variant in chosen if "seeds" in chosen_sections else []:
                if name in _MULTI_STUDY and not VARIANTS[variant].multi_study:
                    continue  # not named by the user (refused above): left out where it does not apply
                new_rows, new_pairs, programme_sets[variant], masks = _run_variant(
                    name, VARIANTS[variant], seeds, adata, budget, out_dir, resume, verbose
                )
                rows += new_rows
                pairs += new_pairs
                if VARIANTS[variant].same_seed and "default" in programme_sets:
                    same_seed += same_seed_agreement(
                        name, variant, programme_sets[variant], programme_sets["default"], adata.n_vars
                    )
                    write_results(pd.DataFrame(same_seed, columns=SAME_SEED_COLUMNS), out_dir, SAME_SEED_COLUMNS,
                                  "same_seed.csv")  # fmt: skip
                if VARIANTS[variant].restarts == 1 and seeds >= 4:
                    if any(mask is None for mask in masks.values()):
                        print(
                            f"[stability] {name} {variant}: no consensus from these fits (some were saved without "
                            "their p*; refit them into a new --out)",
                            flush=True,
                        )
                    else:
                        found = consensus_agreement(name, variant, masks, adata.n_vars)
                        consensus.append(found[0])
                        consensus_programmes.append(found[1])
                write_results(pd.DataFrame(rows, columns=RESULT_COLUMNS), out_dir, RESULT_COLUMNS)
                write_results(
                    pd.DataFrame(pairs, columns=AGREEMENT_COLUMNS), out_dir, AGREEMENT_COLUMNS, "agreement.csv"
                )
            if halves and "halves" in chosen_sections and name not in _MULTI_STUDY:
                resampled.append(_halves(name, adata, seeds, halves, budget, out_dir, resume, verbose))
                write_results(pd.concat(resampled, ignore_index=True), out_dir, HALVES_COLUMNS, "halves.csv")
    df = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    agreement = pd.DataFrame(pairs, columns=AGREEMENT_COLUMNS)
    if "seeds" not in chosen_sections:  # written above fit by fit; here, headers only
        write_results(df, out_dir, RESULT_COLUMNS)
        write_results(agreement, out_dir, AGREEMENT_COLUMNS, "agreement.csv")
    written = ["results.csv", "agreement.csv", "summary.md"]
    if consensus:
        consensus_df = pd.concat(consensus, ignore_index=True)
        programmes_df = pd.concat(consensus_programmes, ignore_index=True)
        write_results(consensus_df, out_dir, CONSENSUS_COLUMNS, "consensus.csv")
        write_results(programmes_df, out_dir, REPRODUCIBILITY_COLUMNS, "consensus_programmes.csv")
        written[2:2] = ["consensus.csv", "consensus_programmes.csv"]
    else:
        consensus_df = programmes_df = None
    halves_df = pd.concat(resampled, ignore_index=True) if resampled else None
    same_seed_df = pd.DataFrame(same_seed, columns=SAME_SEED_COLUMNS) if same_seed else None
    if same_seed_df is not None:
        written.insert(2, "same_seed.csv")
    if halves_df is not None:
        written.insert(2, "halves.csv")
    seconds = time.perf_counter() - start
    write_summary(
        out_dir,
        summary_lines(
            df, agreement, prov, quick=quick, total_seconds=seconds, consensus=consensus_df,
            consensus_programmes=programmes_df, halves=halves_df, same_seed=same_seed_df,
        ),
    )  # fmt: skip
    df.attrs["agreement"] = agreement
    return finish_run(df, out_dir, wrote_line("stability", written, out_dir=out_dir, seconds=seconds), verbose=verbose)
