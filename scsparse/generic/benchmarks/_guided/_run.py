"""``scsparse bench guided``: programmes that start from known gene sets, SparseVAE against Spectra and expiMap.

Every method of :data:`._methods.GUIDED_METHODS` is given the same cells, genes and gene sets on the
embedded Kang PBMCs (:func:`scsparse.data.kang_pbmc`: 1,975 cells, 2,004 genes, control and IFN-beta stimulated):

- the interferon set, ``HALLMARK_INTERFERON_ALPHA_RESPONSE`` (MSigDB Hallmark, the copy shipped with scsparse);
- cell-type marker sets (:data:`MARKER_SETS`), well-known PBMC markers, every one of them in the data's genes;
- a planted decoy (:data:`DECOY`): :data:`DECOY_SIZE` genes drawn at random (seed :data:`DECOY_SEED`) among the genes
  in no set and no held-out list, which no programme should own.

The held-out interferon genes (:func:`heldout_interferon_genes`), given to no method, judge the genes a method adds to
the interferon set: ``HALLMARK_INTERFERON_GAMMA_RESPONSE`` outside the alpha set, and the well-known
interferon-stimulated genes of :data:`HELDOUT_ISGS`, less every gene of the sets the methods get.

Per method and seed (``results.csv``):

- ``ifn_auroc`` — how well the activity of the interferon set's programme separates stimulated from control cells,
  in either direction (``max(AUC, 1 - AUC)``); ``ifn_retention`` its share of the set's genes in the data,
  ``ifn_jaccard`` its Jaccard with them; ``ifn_found`` — 1 when the programme is on, its AUROC is at least
  :data:`FOUND_AUROC` and it keeps at least half of the set;
- ``ifn_added`` — its genes outside the set; ``ifn_added_heldout`` how many of them are held-out interferon genes,
  ``ifn_added_precision`` their share, ``ifn_heldout_p`` the hypergeometric p of that many or more among the genes
  outside the set;
- ``markers_kept`` — marker sets whose programme is on and keeps at least half of its set;
- ``decoy_off`` — 1 when the method's own mechanism switched the decoy off or flagged it (blank where it has none);
  ``decoy_jaccard`` the Jaccard of the decoy's programme with the decoy;
- ``accuracy``, ``balanced_accuracy`` — held-out cell type from the method's representation
  (:func:`scsparse.tl.label_accuracy`, a 30% stratified split seeded by the seed);
- ``seconds``, ``peak_mb`` — wall time and peak resident-memory growth of the fit and its reading.

The methods' programmes are kept in ``programmes.json``; ``agreement.csv`` has, per method and set, the mean Jaccard
of its programmes over pairs of seeds. ``summary.md`` (:mod:`._summary`) has the table with ties written as
ties. A method that is not installed gets rows with ``status`` "not installed: <reason>"; in a full run a method
that fails is recorded as "failed: <error>" and the run goes on, a ``quick`` run raises.
"""

from __future__ import annotations

import itertools
import json
import math
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scsparse.utils import check_integer, write_text

from .._process import cpu_threads, quiet_training_logs
from .._programme_methods import MethodUnavailable
from .._report import finish_run, make_output_dir, provenance, run_options, write_results, write_summary, wrote_line
from .._settings import chosen_names
from ._methods import GUIDED_METHODS, GuidedBudget, GuidedFit, fit_guided_method
from ._summary import summary_lines

__all__ = [
    "DECOY",
    "HELDOUT_ISGS",
    "IFN_SET",
    "MARKER_SETS",
    "RESULT_COLUMNS",
    "guided_data",
    "heldout_interferon_genes",
    "run_guided",
    "score_fit",
]

IFN_SET = "HALLMARK_INTERFERON_ALPHA_RESPONSE"
_IFN_HELDOUT_SET = "HALLMARK_INTERFERON_GAMMA_RESPONSE"
DECOY = "DECOY_RANDOM"
DECOY_SIZE = 20
DECOY_SEED = 0
FOUND_AUROC = 0.9

#: Well-known PBMC markers, one set per cell type of the Kang data (each gene is in its 2,004 genes).
MARKER_SETS: dict[str, list[str]] = {
    "MARKERS_B": ["MS4A1", "CD79A", "CD79B", "CD19", "BANK1", "CD22", "FCRLA", "VPREB3", "TCL1A"],
    "MARKERS_T": ["CD3D", "CD3E", "CCR7", "LEF1", "CD8A", "CD8B"],
    "MARKERS_NK": ["GNLY", "NKG7", "KLRD1", "GZMB", "PRF1", "NCAM1", "GZMA"],
    "MARKERS_CD14_MONO": ["CD14", "LYZ", "S100A8", "S100A9", "VCAN"],
    "MARKERS_FCGR3A_MONO": ["FCGR3A", "MS4A7", "CDKN1C", "LST1", "RHOC"],
    "MARKERS_DC": ["FCER1A", "CD1C", "CST3", "HLA-DQA1", "HLA-DQB1"],
}

#: Well-known interferon-stimulated genes (Schoggins et al. 2011; Schneider et al. 2014). Those in neither Hallmark
#: interferon set are held out (on Kang: IFI6, GBP1, GBP5, APOBEC3A, CCL8, TNFSF13B, HSH2D, ANKRD22, WARS).
HELDOUT_ISGS: tuple[str, ...] = (
    "ISG15", "IFI44L", "IFI44", "IFIT1", "IFIT2", "IFIT3", "IFIT5", "SIGLEC1", "CMPK2", "HERC5", "HERC6", "EPSTI1",
    "XAF1", "SAMD9", "SAMD9L", "DDX60", "DDX60L", "PARP14", "PARP12", "PARP9", "DTX3L", "SP110", "SP100", "TRIM5",
    "TRIM21", "TRIM22", "TRIM25", "ZC3HAV1", "OASL", "OAS1", "OAS2", "OAS3", "MX1", "MX2", "IFI6", "IFI27", "IFITM1",
    "IFITM2", "IFITM3", "ISG20", "BST2", "LY6E", "RSAD2", "USP18", "STAT1", "STAT2", "IRF7", "IRF9", "IFIH1",
    "DDX58", "EIF2AK2", "GBP1", "GBP2", "GBP4", "GBP5", "APOBEC3A", "APOBEC3G", "PLSCR1", "LGALS3BP", "LAMP3", "RTP4",
    "SPATS2L", "TNFSF10", "CXCL10", "CCL8", "CCL2", "IDO1", "SOCS1", "LAP3", "PML", "ADAR", "HELZ2", "NMI", "IFI35",
    "IFI16", "LGALS9", "TNFSF13B", "SECTM1", "ETV7", "PSME2", "UBE2L6", "TAP1", "PSMB9", "TRIM38", "TYMP", "ZBP1",
    "PARP10", "SLFN5", "HSH2D", "APOL6", "CD274", "IRF1", "IRF8", "BATF2", "ANKRD22", "FCGR1A", "SERPING1", "GCH1",
    "WARS", "CASP1", "CASP4", "IL15", "IL15RA",
)  # fmt: skip

RESULT_COLUMNS: list[str] = [
    "dataset", "method", "seed", "status", "n_cells", "n_genes", "n_sets", "ifn_found", "ifn_auroc",
    "ifn_retention", "ifn_jaccard", "ifn_n_genes", "ifn_added", "ifn_added_heldout", "ifn_added_precision",
    "ifn_heldout_p", "markers_kept", "decoy_off", "decoy_jaccard", "accuracy", "balanced_accuracy", "seconds",
    "peak_mb",
]  # fmt: skip
AGREEMENT_COLUMNS: list[str] = ["dataset", "method", "gene_set", "pairs", "jaccard"]

_FULL = GuidedBudget()
_QUICK = GuidedBudget(sparsevae_epochs=15, spectra_epochs=30, expimap_epochs=6, expimap_anneal=3)
_QUICK_CELLS, _QUICK_GENES = 300, 300


def heldout_interferon_genes(genes, hallmark: dict[str, list[str]], given=()) -> list[str]:
    """The held-out interferon genes in ``genes``: the Hallmark gamma set and :data:`HELDOUT_ISGS`, less the alpha set
    and the ``given`` genes (those of the sets the methods get: a marker such as BANK1 is in the gamma set).

    ``hallmark`` is the Hallmark library (:func:`scsparse.tl.load_gene_sets`).
    """
    present = set(map(str, genes))
    taken = set(hallmark[IFN_SET]) | set(given)
    pool = [*hallmark[_IFN_HELDOUT_SET], *HELDOUT_ISGS]
    return [g for g in dict.fromkeys(pool) if g in present and g not in taken]


def guided_data(quick: bool = False) -> tuple[Any, dict[str, list[str]], list[str]]:
    """The Kang data, the gene sets every method gets (in the data's genes) and the held-out interferon genes.

    ``quick``: :data:`_QUICK_CELLS` cells drawn with seed 0 and the sets' and held-out genes with the most variable
    others, :data:`_QUICK_GENES` genes in all.
    """
    from scsparse.data import kang_pbmc
    from scsparse.tl import load_gene_sets

    adata = kang_pbmc()
    hallmark = load_gene_sets("hallmark_human")
    genes = list(map(str, adata.var_names))
    present = set(genes)
    sets = {IFN_SET: [g for g in hallmark[IFN_SET] if g in present]}
    sets.update({name: [g for g in members if g in present] for name, members in MARKER_SETS.items()})
    heldout = heldout_interferon_genes(genes, hallmark, itertools.chain(*sets.values()))
    taken = set(itertools.chain(*sets.values(), heldout, hallmark[_IFN_HELDOUT_SET]))
    pool = [g for g in genes if g not in taken]
    sets[DECOY] = sorted(np.random.default_rng(DECOY_SEED).choice(pool, size=DECOY_SIZE, replace=False).tolist())
    if quick:
        rng = np.random.default_rng(0)
        adata = adata[np.sort(rng.choice(adata.n_obs, size=_QUICK_CELLS, replace=False))].copy()
        needed = set(itertools.chain(*sets.values(), heldout))
        counts = adata.layers["counts"]
        counts = counts.toarray() if hasattr(counts, "toarray") else np.asarray(counts)
        spread = np.log1p(counts).var(axis=0)
        order = [j for j in np.argsort(-spread, kind="stable") if genes[j] not in needed]
        n_more = max(_QUICK_GENES - len(needed), 0)
        keep = np.isin(genes, list(needed))
        keep[order[:n_more]] = True
        adata = adata[:, keep].copy()
    return adata, sets, heldout


# ---------------------------------------------------------------------------------------------- scoring
def _jaccard(a, b) -> float:
    a, b = set(a), set(b)
    return len(a & b) / len(a | b) if a | b else math.nan


def _auroc(activity: np.ndarray, positive: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    if not np.isfinite(activity).all() or np.ptp(activity) == 0:
        return 0.5
    auc = float(roc_auc_score(positive, activity))
    return max(auc, 1.0 - auc)


def _set_programme(fit: GuidedFit, name: str, members: list[str]) -> tuple[str | None, list[str]]:
    """The programme the fit ties to a set, or the one that overlaps it most where the fit ties none."""
    tied = fit.tied.get(name)
    if tied is not None:
        return tied, fit.programmes.get(tied, [])
    if not fit.programmes:
        return None, []
    best = max(fit.programmes, key=lambda p: _jaccard(fit.programmes[p], members) or 0.0)
    return best, fit.programmes[best]


def score_fit(
    fit: GuidedFit, adata, sets: dict[str, list[str]], heldout: list[str], seed: int
) -> tuple[dict[str, float], dict[str, list[str]]]:
    """The metrics of one fit (the ``results.csv`` columns from ``ifn_found`` on) and its programme for each set."""
    from scipy.stats import hypergeom

    from scsparse.tl import label_accuracy

    stim = (adata.obs["condition"].astype(str) != "control").to_numpy()
    chosen = {name: _set_programme(fit, name, members) for name, members in sets.items()}
    ifn_members = sets[IFN_SET]
    ifn_name, ifn_genes = chosen[IFN_SET]
    on = bool(ifn_genes) and not fit.off.get(IFN_SET, False)
    auroc = _auroc(np.asarray(fit.activity[ifn_name], dtype=np.float64), stim) if ifn_name is not None else 0.5
    retention = len(set(ifn_genes) & set(ifn_members)) / len(ifn_members)
    added = [g for g in ifn_genes if g not in set(ifn_members)]
    outside = adata.n_vars - len(ifn_members)
    n_heldout = len(set(heldout) - set(ifn_members))
    hits = len(set(added) & set(heldout))
    markers_kept = sum(
        bool(chosen[name][1])
        and not fit.off.get(name, False)
        and len(set(chosen[name][1]) & set(sets[name])) >= len(sets[name]) / 2
        for name in MARKER_SETS
        if name in sets
    )
    labels = label_accuracy(fit.representation, adata.obs["cell_type"].astype(str).to_numpy(), seed=seed)
    scores = {
        "ifn_found": float(on and auroc >= FOUND_AUROC and retention >= 0.5),
        "ifn_auroc": auroc,
        "ifn_retention": retention,
        "ifn_jaccard": _jaccard(ifn_genes, ifn_members) if ifn_genes else 0.0,
        "ifn_n_genes": float(len(ifn_genes)),
        "ifn_added": float(len(added)),
        "ifn_added_heldout": float(hits),
        "ifn_added_precision": hits / len(added) if added else math.nan,
        "ifn_heldout_p": float(hypergeom.sf(hits - 1, outside, n_heldout, len(added))) if added else math.nan,
        "markers_kept": float(markers_kept),
        "decoy_off": float(fit.off[DECOY]) if DECOY in fit.off else math.nan,
        "decoy_jaccard": _jaccard(chosen[DECOY][1], sets[DECOY]) if chosen[DECOY][1] else 0.0,
        "accuracy": labels["accuracy"],
        "balanced_accuracy": labels["balanced_accuracy"],
    }
    return scores, {name: list(genes) for name, (_, genes) in chosen.items()}


def agreement_table(programmes: dict[str, dict[str, dict[str, list[str]]]], dataset: str) -> pd.DataFrame:
    """Per method and set, the mean Jaccard of its programmes over pairs of seeds (``programmes``: method -> seed
    -> set -> genes).
    """
    rows = []
    for method, by_seed in programmes.items():
        seeds = sorted(by_seed)
        pairs = list(itertools.combinations(seeds, 2))
        names = list(by_seed[seeds[0]]) if seeds else []
        for name in names:
            values = [_jaccard(by_seed[a][name], by_seed[b][name]) for a, b in pairs]
            values = [0.0 if math.isnan(v) else v for v in values]  # both empty: no programme to agree on
            rows.append(
                {"dataset": dataset, "method": method, "gene_set": name, "pairs": len(pairs),
                 "jaccard": float(np.mean(values)) if values else math.nan}
            )  # fmt: skip
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


# ---------------------------------------------------------------------------------------------- the run
def _row(method: str, seed: int, adata, sets, status: str) -> dict[str, Any]:
    row = dict.fromkeys(RESULT_COLUMNS, math.nan)
    row.update(
        dataset="kang", method=method, seed=seed, status=status, n_cells=adata.n_obs, n_genes=adata.n_vars,
        n_sets=len(sets),
    )  # fmt: skip
    return row


def run_guided(
    out: str | Path,
    *,
    seeds: int | None = None,
    quick: bool = False,
    max_epochs: int | None = None,
    methods: str | None = None,
    n_threads: int | None = 1,
    verbose: bool = True,
) -> pd.DataFrame:
    """Run the guided-programmes benchmark and write ``results.csv``, ``agreement.csv``, ``programmes.json`` and
    ``summary.md`` into ``out``.

    Parameters
    ----------
    out
        Output folder.
    seeds
        Seeds per method (default 3; ``quick``: 2).
    quick
        A smoke run: 300 cells, 300 genes, a few epochs of every method; its numbers are not read.
    max_epochs
        SparseVAE's most epochs (default 400; ``quick``: 15); the peers keep their recommended budgets.
    methods
        Methods to run, comma-separated (default: all of :data:`._methods.GUIDED_METHODS`).
    n_threads
        CPU threads of each fit (default 1).
    verbose
        Print a line per fit and the files written.

    Returns
    -------
    pandas.DataFrame
        One row per method and seed (the content of ``results.csv``).
    """
    seeds = (2 if quick else 3) if seeds is None else seeds
    check_integer("seeds", seeds)
    if max_epochs is not None:
        check_integer("max_epochs", max_epochs, fix="Or None: the default.")
    chosen = chosen_names(methods, GUIDED_METHODS, "method(s)")
    budget = _QUICK if quick else _FULL
    if max_epochs is not None:
        budget = GuidedBudget(max_epochs, budget.spectra_epochs, budget.expimap_epochs, budget.expimap_anneal)
    out_dir = make_output_dir(out)
    start = time.perf_counter()
    adata, sets, heldout = guided_data(quick)
    options = run_options(out_dir, seeds, quick, budget.sparsevae_epochs, methods=chosen, n_threads=n_threads)
    rows: list[dict[str, Any]] = []
    kept: dict[str, dict[str, dict[str, list[str]]]] = {}
    with quiet_training_logs(), cpu_threads(n_threads):
        prov = provenance("guided", options)  # inside: it records the threads the fits use
        for method in chosen:
            for seed in range(seeds):
                try:
                    fit = fit_guided_method(method, adata, sets, seed, budget)
                except MethodUnavailable as exc:
                    rows.append(_row(method, seed, adata, sets, str(exc)))
                    break
                except Exception as exc:  # noqa: BLE001 - a full run records the failure and goes on
                    if quick:
                        raise
                    traceback.print_exc()
                    rows.append(_row(method, seed, adata, sets, f"failed: {type(exc).__name__}: {exc}"))
                    continue
                scores, programmes = score_fit(fit, adata, sets, heldout, seed)
                row = _row(method, seed, adata, sets, "ok")
                row.update(scores, seconds=fit.seconds, peak_mb=fit.peak_mb)
                rows.append(row)
                kept.setdefault(method, {})[str(seed)] = programmes
                if verbose:
                    print(
                        f"[guided] {method} seed {seed}: IFN AUROC {row['ifn_auroc']:.3f}, retention "
                        f"{row['ifn_retention']:.2f}, added {row['ifn_added']:.0f}, decoy off {row['decoy_off']}, "
                        f"{fit.seconds:.0f} s",
                        flush=True,
                    )
                write_results(pd.DataFrame(rows, columns=RESULT_COLUMNS), out_dir, RESULT_COLUMNS)
    df = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    write_results(df, out_dir, RESULT_COLUMNS)
    agreement = agreement_table(kept, "kang")
    write_results(agreement, out_dir, AGREEMENT_COLUMNS, name="agreement.csv")
    record = {"sets": sets, "heldout_interferon": heldout, "programmes": kept}
    write_text(out_dir / "programmes.json", json.dumps(record, indent=1))
    lines = summary_lines(
        df, agreement, sets, heldout, prov, ifn_set=IFN_SET, decoy=DECOY, found_auroc=FOUND_AUROC, quick=quick,
        total_seconds=time.perf_counter() - start,
    )  # fmt: skip
    write_summary(out_dir, lines)
    files = ["results.csv", "agreement.csv", "programmes.json", "summary.md"]
    done = wrote_line("guided", files, out_dir=out_dir, seconds=time.perf_counter() - start)
    return finish_run(df, out_dir, done, verbose=verbose)
