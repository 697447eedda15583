"""How a fit's programmes are scored on real data (``bench peers``, ``bench stability``): what they say, and what
they cost.

Each metric, what it rewards and its blind spot (also on the documentation page):

Biology recovered
    ``enriched_share`` — share of programmes with a gene set at BH-adjusted p < :data:`SIGNIFICANCE` (adjusted
    within the programme, over the data set's libraries). Leans towards broad programmes: more genes give more
    overlaps and more power. ``distinct_terms`` — gene sets found across the programmes; leans the same way and
    rewards many programmes. ``best_fold`` — median over enriched programmes of their best set's fold enrichment:
    leans towards small, focused programmes, the balance to the two before. ``interferon_recovered`` /
    ``interferon_p`` (Kang) — whether one programme, more active in the stimulated cells, is enriched for the
    Hallmark interferon response, and its adjusted p (1 when none). ``markers_recovered`` — share of the labelled
    cell types (with >= :data:`._real_data.MIN_TYPE_CELLS` cells) with a programme that is most active in that
    type and enriched for that type's PanglaoDB markers; a programme shared by several types counts for one of
    them only, so merged subsets (T-cell subtypes) cost recovery.
Parsimony
    ``median_genes`` — median programme size (lower: easier to read; blind to whether the genes are right);
    ``redundancy`` — mean over programmes of the largest Jaccard index with another programme (lower: programmes
    say different things); ``factors_kept`` — factors with a programme (reported, neither better nor worse).
Information
    ``accuracy`` — held-out accuracy of a logistic regression on every factor the method returns
    (:func:`scsparse.tl.label_accuracy`, 30% of cells held out): how much of the cell identity the
    representation keeps. Rewards dense representations; a sparse, interpretable model may trade some away.
Disentanglement (an outside standard: DRVI's scores, :func:`scsparse.generic.metrics.label_disentanglement`)
    ``lms_smi``, ``msas_smi``, ``msgs_smi``, ``lms_spn``, ``msas_spn``, ``msgs_spn`` — every factor the method
    returns scored against each process — each labelled cell type, and the condition's group as one process where
    the data set has one (Kang: the stimulated cells; :func:`disentanglement_processes`) — by scaled mutual
    information (SMI) and same-process neighbours (SPN), aggregated by one-to-one matching (LMS: each process needs
    its own factor), the best factor per process (MSAS) and the gap to the second best (MSGS: one factor per
    process, not several). Blind spot: these are not the only processes in the data (cell cycle, activation), and
    a factor for a programme shared by several types scores low although it is right.
Batch leakage
    ``batch_leakage`` — mean share of each programme's activity explained by batch
    (:func:`scsparse.generic.metrics.batch_association`; lower is better). Blind spot: where batches differ in
    cell composition, part of it is biology.
Multi-study arm
    ``shared_programmes`` — programmes that belong to every study (reported, neither better nor worse).
    ``transfer_accuracy`` — accuracy on the other studies' cells of a classifier trained on the first study's
    cells, on the representation every study shares: whether cell identity is found the same way in each study.
    Blind spot: a representation that ignores the studies' differences altogether scores as well.
    ``interferon_specific`` (Kang) — whether the interferon programme is recovered and the strongest one belongs
    to the stimulated study (1; 0 when it is shared or not recovered): the response exists in the stimulated
    cells only. On this arm the interferon
    programme may be a stimulated study's programme or a shared one more active in the stimulated cells, and
    ``batch_leakage`` is measured on the shared programmes only.
Stability
    ``stability`` — mean matched Jaccard index of the programmes between this seed's fit and every other seed's
    (:func:`scsparse.generic.metrics.matched_programme_agreement`); beside it, as
    :func:`scsparse.generic.metrics.programme_agreement` separates what moves, ``stability_top10`` (the overlap of
    the 10 strongest genes of programmes paired on their rankings) and ``stability_rbo`` (their rank-biased overlap).
Cost
    ``seconds`` and ``peak_mb`` (fitting and reading the programmes).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from anndata import AnnData

from ._programme_fit import EQUAL_SIZES, ProgrammeFit
from ._real_data import INTERFERON_TERMS, MIN_TYPE_CELLS, RealDataset, gene_set_library, study_names

__all__ = [
    "DISENTANGLEMENT",
    "EQUAL_SIZE_METRICS",
    "HIGHER_IS_BETTER",
    "LOWER_IS_BETTER",
    "METRICS",
    "SIGNIFICANCE",
    "SIZE_DEPENDENT",
    "disentanglement_processes",
    "score_fit",
    "stability_scores",
]

#: Adjusted p below which a programme counts as enriched for a gene set.
SIGNIFICANCE = 0.01
#: Gene sets with fewer or more genes among the data's genes are not tested.
SET_SIZE = (5, 500)

#: The disentanglement columns, ``<aggregation>_<similarity>`` of
#: :func:`scsparse.generic.metrics.label_disentanglement`.
DISENTANGLEMENT: tuple[str, ...] = tuple(f"{a}_{s}" for s in ("smi", "spn") for a in ("lms", "msas", "msgs"))
#: The metrics that depend on the size of the programmes (their list sizes and how many there are).
SIZE_DEPENDENT: tuple[str, ...] = (
    "enriched_share", "distinct_terms", "best_fold", "interferon_recovered", "interferon_p", "markers_recovered",
    "redundancy",
)  # fmt: skip
#: The equal-size reading: each size-dependent metric with every programme cut to ``n`` genes, ``<metric>_at<n>``.
EQUAL_SIZE_METRICS: tuple[str, ...] = tuple(f"{m}_at{n}" for n in EQUAL_SIZES for m in SIZE_DEPENDENT)
#: Metric columns of ``results.csv``, in the order of the summary tables.
#: Agreement of a seed's programmes with the other seeds': gene sets (matched Jaccard), cores, rankings.
STABILITY: tuple[str, ...] = ("stability", "stability_top10", "stability_rbo")
METRICS: tuple[str, ...] = (
    "enriched_share", "distinct_terms", "best_fold", "interferon_recovered", "interferon_p", "markers_recovered",
    "median_genes", "redundancy", "factors_kept", "programmes", "shared_programmes", "accuracy",
    *DISENTANGLEMENT, "transfer_accuracy", "interferon_specific", "batch_leakage", *STABILITY, "seconds",
    "peak_mb",
    *EQUAL_SIZE_METRICS,
)  # fmt: skip
_HIGHER = {"enriched_share", "distinct_terms", "best_fold", "interferon_recovered", "markers_recovered"}
_LOWER = {"interferon_p", "redundancy"}
HIGHER_IS_BETTER = frozenset(
    _HIGHER
    | {"accuracy", "transfer_accuracy", "interferon_specific", *STABILITY, *DISENTANGLEMENT}
    | {f"{m}_at{n}" for m in _HIGHER for n in EQUAL_SIZES}
)
LOWER_IS_BETTER = frozenset(
    _LOWER
    | {"median_genes", "batch_leakage", "seconds", "peak_mb"}
    | {f"{m}_at{n}" for m in _LOWER for n in EQUAL_SIZES}
)


def _gene_sets(spec: RealDataset) -> dict[str, list[str]]:
    sets: dict[str, list[str]] = {}
    for library in spec.libraries:
        sets.update(gene_set_library(library))
    return sets


def _enrichment(fit: ProgrammeFit, adata: AnnData, sets: Mapping[str, list[str]]) -> pd.DataFrame:
    """ORA of every programme (:func:`scsparse.tl.enrich_gene_lists`); ``programme`` names the programme."""
    from scsparse.tl import enrich_gene_lists

    genes = np.asarray(adata.var_names).astype(str)
    lists = {name: genes[idx].tolist() for name, idx in fit.programmes.items()}
    table = enrich_gene_lists(lists, sets, background=genes, min_size=SET_SIZE[0], max_size=SET_SIZE[1])
    sign = np.where(table["direction"] == "positive", "+", "-")
    return table.assign(programme=table["factor"].astype(str) + sign)


def _top_group(activity: np.ndarray, groups: np.ndarray, among: Sequence[str]) -> str:
    """The group of ``among`` where the (standardised) activity is highest on average."""
    sd = activity.std()
    z = (activity - activity.mean()) / (sd if sd > 0 else 1.0)
    means = {g: float(z[groups == g].mean()) for g in among}
    return max(means, key=means.get)


def _markers_recovered(fit: ProgrammeFit, sig: pd.DataFrame, labels: np.ndarray, spec: RealDataset) -> float:
    counts = pd.Series(labels).value_counts()
    types = [t for t in counts.index if counts[t] >= MIN_TYPE_CELLS and t in spec.markers]
    if not types:
        return math.nan
    top = {name: _top_group(act, labels, types) for name, act in fit.activity.items()}
    recovered = 0
    for t in types:
        wanted = {f"PanglaoDB: {m}" for m in spec.markers[t]}
        progs = [name for name, group in top.items() if group == t]
        recovered += bool(len(sig[sig["programme"].isin(progs) & sig["term"].isin(wanted)]))
    return recovered / len(types)


def _interferon(
    fit: ProgrammeFit, table: pd.DataFrame, adata: AnnData, spec: RealDataset
) -> tuple[float, float, float]:
    """Whether an interferon programme of the stimulated cells is found, its adjusted p, and (multi-study arm)
    whether it belongs to the stimulated study.

    A candidate programme is more active in the stimulated cells; on the multi-study arm it may instead belong to
    the stimulated study, and a programme of another study is no candidate.
    """
    column, group = spec.condition
    stimulated = (adata.obs[column] == group).to_numpy()

    def candidate(name: str) -> bool:
        scope = fit.scope.get(name, "shared")
        more = fit.activity[name][stimulated].mean() > fit.activity[name][~stimulated].mean()
        return scope == group or (scope == "shared" and bool(more))

    up = [name for name in fit.activity if candidate(name)]
    ifn = table[table["programme"].isin(up) & table["term"].isin([f"Hallmark: {t}" for t in INTERFERON_TERMS])]
    if not len(ifn):
        return 0.0, 1.0, (0.0 if fit.scope else math.nan)
    best = ifn.loc[ifn["p_adj"].idxmin()]
    p = float(best["p_adj"])
    found = p < SIGNIFICANCE
    specific = float(found and fit.scope.get(str(best["programme"])) == group) if fit.scope else math.nan
    return float(found), p, specific


def _transfer_accuracy(fit: ProgrammeFit, adata: AnnData, spec: RealDataset, labels: np.ndarray) -> float:
    """Trained on the first study's cells (sorted), tested on the others', on ``fit.transfer``."""
    from ._cell_scores import transfer_accuracy

    reference = adata.obs[spec.study_key].astype(str).to_numpy() == study_names(adata, spec.study_key)[0]
    return transfer_accuracy(np.asarray(fit.transfer), labels, reference, ~reference)


def disentanglement_processes(adata: AnnData, spec: RealDataset, labels: np.ndarray) -> pd.DataFrame:
    """The processes the disentanglement scores look for: each labelled cell type, and the condition's group as
    one process where the data set has one (Kang: the stimulated cells). A binary condition is one process; as two
    label categories it would be two complementary processes, each claiming a factor of its own.
    """
    processes = pd.get_dummies(pd.Series(labels, index=adata.obs_names), dtype=bool)
    processes.columns = [str(c) for c in processes.columns]
    if spec.condition:
        column, group = spec.condition
        processes[f"{column}: {group}"] = (adata.obs[column].astype(str) == group).to_numpy()
    return processes


def score_fit(fit: ProgrammeFit, adata: AnnData, spec: RealDataset, seed: int) -> dict[str, float]:
    """Every metric of one fit but ``stability`` (see :func:`stability_scores`); ``nan`` where it does not apply.

    Parameters
    ----------
    fit
        The fit, read as programmes.
    adata
        The data set's cells and genes, with the label and batch columns of ``spec``.
    spec
        The data set's definition.
    seed
        Seed of the held-out split of the label classifier.
    """
    from scsparse.generic.metrics import batch_association, label_disentanglement
    from scsparse.tl import label_accuracy

    sizes = [idx.size for idx in fit.programmes.values()]
    row: dict[str, float] = dict.fromkeys(METRICS, math.nan)
    row.update(
        factors_kept=float(fit.n_kept),
        programmes=float(len(sizes)),
        median_genes=float(np.median(sizes)) if sizes else math.nan,
        seconds=fit.seconds,
        peak_mb=fit.peak_mb,
    )
    labels = np.asarray(adata.obs[spec.label_key]).astype(str) if spec.label_key else None
    if labels is not None and fit.factors is not None:
        row["accuracy"] = label_accuracy(fit.factors, labels, seed=seed)["accuracy"]
        scores = label_disentanglement(fit.factors, disentanglement_processes(adata, spec, labels))
        row.update({name.replace("-", "_").lower(): v for name, v in scores.items()})  # "LMS-SMI" -> "lms_smi"
    if spec.study_key:
        row["shared_programmes"] = float(sum(s == "shared" for s in fit.scope.values()))
        if labels is not None and fit.transfer is not None:
            row["transfer_accuracy"] = _transfer_accuracy(fit, adata, spec, labels)
    leaky = [n for n in fit.activity if not spec.study_key or fit.scope.get(n) == "shared"]
    if spec.batch_key and leaky:
        scores = np.column_stack([fit.activity[n] for n in leaky])
        row["batch_leakage"] = float(batch_association(scores, np.asarray(adata.obs[spec.batch_key])).mean())
    sets = _gene_sets(spec)  # once for the own reading and every equal-size one
    row.update(_programme_scores(fit, adata, spec, labels, sets))
    for n in EQUAL_SIZES:  # the equal-size reading: the same metrics with every programme cut to n genes
        sized = _programme_scores(dataclasses.replace(fit, programmes=fit.cut(n)), adata, spec, labels, sets)
        row.update({f"{m}_at{n}": sized[m] for m in SIZE_DEPENDENT})
    return row


def _programme_scores(
    fit: ProgrammeFit, adata: AnnData, spec: RealDataset, labels: np.ndarray | None, sets: Mapping[str, list[str]]
) -> dict[str, float]:
    """The metrics of the programmes' gene lists: redundancy, enrichment (against ``sets``), the known programmes."""
    from scsparse.generic.metrics import programme_redundancy

    sizes = [idx.size for idx in fit.programmes.values()]
    row: dict[str, float] = dict.fromkeys((*SIZE_DEPENDENT, "interferon_specific"), math.nan)
    if sizes:
        row["redundancy"] = float(programme_redundancy(list(fit.programmes.values()), adata.n_vars).mean())
    if spec.libraries:
        if not sizes:
            row.update(enriched_share=0.0, distinct_terms=0.0, interferon_recovered=0.0, interferon_p=1.0)
            row["markers_recovered"] = 0.0 if spec.markers else math.nan
            if not spec.condition:
                row["interferon_recovered"] = row["interferon_p"] = math.nan
            elif spec.study_key:
                row["interferon_specific"] = 0.0
            return row
        table = _enrichment(fit, adata, sets)
        sig = table[table["p_adj"] < SIGNIFICANCE]
        row["enriched_share"] = sig["programme"].nunique() / len(sizes)
        row["distinct_terms"] = float(sig["term"].nunique())
        if len(sig):
            row["best_fold"] = float(sig.groupby("programme")["fold_enrichment"].max().median())
        if spec.condition:
            row["interferon_recovered"], row["interferon_p"], specific = _interferon(fit, table, adata, spec)
            if spec.study_key:
                row["interferon_specific"] = specific
        if spec.markers and labels is not None:
            row["markers_recovered"] = _markers_recovered(fit, sig, labels, spec)
    return row


def stability_scores(
    programmes_by_seed: Mapping[int, Sequence[np.ndarray]], n_genes: int
) -> dict[int, dict[str, float]]:
    """For each seed, the mean agreement of its programmes with every other seed's, by each :data:`STABILITY`
    measure (``nan`` with one seed).
    """
    from scsparse.generic.metrics import ProgrammeSet, programme_agreement

    measures = {"stability": "jaccard", "stability_top10": "top_overlap", "stability_rbo": "rbo"}
    sets = {s: ProgrammeSet(list(progs)) for s, progs in programmes_by_seed.items()}
    out: dict[int, dict[str, float]] = {}
    for s in sets:
        pairs = [programme_agreement(sets[s], sets[t], n_genes) for t in sets if t != s]
        out[s] = {}
        for name, measure in measures.items():
            finite = [p[measure] for p in pairs if p[measure] == p[measure]]
            out[s][name] = float(np.mean(finite)) if finite else math.nan
    return out
