"""Tests of ``scsparse bench peers``: programme metrics, reading of the methods, scoring, targets and the runner."""

from __future__ import annotations

import json
import math
from pathlib import Path

import anndata as ad
import numpy as np
import pandas as pd
import pytest

from scsparse.generic.benchmarks import BENCHMARKS
from scsparse.generic.benchmarks._peers._run import RESULT_COLUMNS, run_peers
from scsparse.generic.benchmarks._peers._summary import peers_targets, summary_lines
from scsparse.generic.benchmarks._programme_fit import FitBudget, ProgrammeFit
from scsparse.generic.benchmarks._programme_methods import (
    PEER_METHODS,
    MethodUnavailable,
    _top_by_sign,
    drvi_selected_genes,
    fit_peer,
    signed_programmes,
    slab_programmes,
)
from scsparse.generic.benchmarks._programme_scores import (
    _markers_recovered,
    disentanglement_processes,
    score_fit,
    stability_scores,
)
from scsparse.generic.benchmarks._real_data import REAL_DATASETS, RealDataset
from scsparse.generic.metrics import batch_association, matched_programme_agreement, programme_redundancy

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


@pytest.fixture
def offline_data(monkeypatch):
    if not SHARED_DATA.is_dir():
        pytest.skip(f"offline data copy not found at {SHARED_DATA}")
    monkeypatch.setenv("SCSPARSE_DATA_DIR", str(SHARED_DATA))
    monkeypatch.setenv("SCSPARSE_OFFLINE", "1")


# ------------------------------------------------------------------------------------------ programme metrics
def test_programme_redundancy_is_the_largest_overlap_with_another_programme():
    red = programme_redundancy([[0, 1, 2, 3], [0, 1, 2, 3], [4, 5], [5, 6, 7]], n_genes=8)
    assert red.tolist() == pytest.approx([1.0, 1.0, 0.25, 0.25])
    assert programme_redundancy([[0, 1]], n_genes=2).tolist() == [0.0]
    with pytest.raises(ValueError, match="outside"):
        programme_redundancy([[0, 9], [1]], n_genes=3)


def test_matched_programme_agreement_pairs_one_to_one_and_counts_the_unmatched():
    a = [[0, 1, 2], [3, 4, 5], [6, 7]]
    assert matched_programme_agreement(a, list(reversed(a)), n_genes=8) == pytest.approx(1.0)
    # one programme split into two: only one half can be matched, the other counts as 0
    split = matched_programme_agreement([[0, 1, 2, 3]], [[0, 1], [2, 3]], n_genes=4)
    assert split == pytest.approx(0.5 / 2)
    assert matched_programme_agreement([], [[0]], n_genes=2) == 0.0
    assert math.isnan(matched_programme_agreement([], [], n_genes=2))


def test_batch_association_is_eta_squared():
    rng = np.random.default_rng(0)
    batch = np.repeat(["a", "b", "c"], 100)
    pure_batch = np.repeat([0.0, 1.0, 2.0], 100)
    noise = rng.normal(size=300)
    eta = batch_association(np.column_stack([pure_batch, noise, np.ones(300)]), batch)
    assert eta[0] == pytest.approx(1.0) and eta[1] < 0.05 and eta[2] == 0.0
    mixed = batch_association(pure_batch + rng.normal(scale=1.0, size=300), batch)[0]
    assert 0.2 < mixed < 0.8
    with pytest.raises(ValueError, match="entries"):
        batch_association(np.zeros((3, 1)), ["a", "b"])
    with pytest.raises(ValueError, match="NaN"):
        batch_association(np.array([[np.nan], [1.0]]), ["a", "b"])


# ------------------------------------------------------------------------------------------ reading programmes
def test_top_genes_by_sign_and_signed_programmes():
    w = np.array([0.5, -2.0, 1.5, 0.0, -0.1])
    assert _top_by_sign(w, 2, 1).tolist() == [2, 0]
    assert _top_by_sign(w, 5, -1).tolist() == [1, 4]  # only negative weights, strongest first
    scores = np.arange(6.0).reshape(3, 2)
    progs, act = signed_programmes(np.column_stack([w, np.abs(w)]), scores, 2)
    assert set(progs) == {"0+", "0-", "1+"}  # no negative loading in factor 1
    assert act["0-"].tolist() == (-scores[:, 0]).tolist() and act["1+"].tolist() == scores[:, 1].tolist()


def test_slab_programmes_keep_the_genes_in_the_slab_by_sign_and_rank_the_rest_after_them():
    weights = np.array([[2.0, 0.0], [1.0, -1.0], [0.1, -3.0], [1.5, 0.5], [-0.2, 0.0]])
    slab = np.array([[1.0, 0.0], [0.9, 0.8], [0.2, 1.0], [0.4, 0.3], [0.9, 0.1]])
    progs, act, rankings = slab_programmes(weights, slab, np.arange(6.0).reshape(3, 2), n_rank=3)
    assert {k: v.tolist() for k, v in progs.items()} == {"0+": [0, 1], "0-": [4], "1-": [2, 1]}  # 1+: none in the slab
    assert rankings["0+"].tolist() == [0, 1, 3]  # the slab genes, then the direction's others by weight (1.5 > 0.1)
    assert act["1-"].tolist() == [-1.0, -3.0, -5.0]


def _labelled_counts(n_per_type: int = 60, n_genes: int = 40, seed: int = 0) -> ad.AnnData:
    """Counts of three cell types, each with its own block of ten up-regulated genes; two batches."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(["t0", "t1", "t2"], n_per_type)
    rate = np.full((labels.size, n_genes), 1.0)
    for k in range(3):
        rate[np.ix_(labels == f"t{k}", np.arange(10 * k, 10 * k + 10))] = 8.0
    counts = rng.poisson(rate).astype(np.float32)
    adata = ad.AnnData(counts.copy())
    adata.obs_names = [f"c{i}" for i in range(labels.size)]
    adata.var_names = [f"G{j}" for j in range(n_genes)]
    adata.layers["counts"] = counts
    adata.obs["cell_type"] = pd.Categorical(labels)
    adata.obs["batch"] = pd.Categorical(np.tile(["b0", "b1"], labels.size // 2))
    return adata


@pytest.mark.parametrize("method", ["NMF (KL)", "PCA"])
def test_matrix_methods_find_the_planted_blocks(method):
    adata = _labelled_counts()
    fit = fit_peer(method, adata, FitBudget(n_factors=3, n_top=10), seed=0)
    assert fit.method == method and fit.factors.shape == (adata.n_obs, 3) and fit.n_kept == 3
    blocks = [set(range(10 * k, 10 * k + 10)) for k in range(3)]
    found = [max(len(set(p.tolist()) & b) for p in fit.programmes.values()) for b in blocks]
    assert min(found) >= 8
    assert fit.seconds > 0 and set(fit.activity) == set(fit.programmes)
    assert "_scvi_uuid" not in adata.uns and not adata.obsm  # the caller's AnnData is left alone


def test_drvi_rule_keeps_strong_or_specific_effects_of_at_least_e_fold():
    # genes (columns): a gene one direction drives alone; one two directions drive alike; one driven weakly; one
    # where a weak direction is still specific (it moves the gene when the other is at its maximum)
    mx = np.array([[4.0, 2.0, 0.9, 3.0], [0.2, 1.8, 0.0, 1.2]])
    mn = np.array([[3.0, 0.5, 0.5, 2.0], [0.0, 0.4, 0.0, 0.5]])
    assert drvi_selected_genes(mx, mn).tolist() == [[True, True, False, True], [False, True, False, True]]
    mn_unspecific = mn.copy()
    mn_unspecific[1, 3] = 0.1  # below a tenth of the gene's largest specific effect, and 1.2 < 3.0 / 2
    assert not drvi_selected_genes(mx, mn_unspecific)[1, 3]
    with pytest.raises(ValueError, match="one shape"):
        drvi_selected_genes(mx, mn[:, :2])


def test_drvi_at_its_defaults_reads_programmes_by_its_own_rule():
    pytest.importorskip("scvi.external", reason="scvi-tools")
    from scsparse.generic.benchmarks._programme_methods import MethodUnavailable, _drvi_default_n_latent

    try:
        n_latent = _drvi_default_n_latent()
    except MethodUnavailable as exc:
        pytest.skip(str(exc))
    adata = _labelled_counts()
    fit = fit_peer("DRVI (defaults)", adata, FitBudget(n_factors=3, max_epochs=200, n_top=10), seed=0)
    assert fit.extra["n_latent"] == n_latent and fit.factors.shape == (adata.n_obs, n_latent)
    assert fit.n_kept == 3  # its own mechanism switches the spare dimensions off: one per planted block
    sizes = {len(genes) for genes in fit.programmes.values()}
    assert sizes != {10}  # the rule decides each programme's size, not the budget's top 10
    blocks = [set(range(10 * k, 10 * k + 10)) for k in range(3)]
    found = [max(len(set(p.tolist()) & b) for p in fit.programmes.values()) for b in blocks]
    assert min(found) == 10
    for name in fit.programmes:  # the equal-size reading cuts DRVI's ranking by its score, not the selection
        assert fit.cut(5)[name].tolist() == fit.rankings[name][:5].tolist()


def test_fit_peer_rejects_unknown_methods():
    with pytest.raises(ValueError, match="Unknown method"):
        fit_peer("FactorX", _labelled_counts(), FitBudget(), seed=0)


# ------------------------------------------------------------------------------------------ scoring
def _planted_fit(adata: ad.AnnData) -> ProgrammeFit:
    labels = adata.obs["cell_type"].to_numpy()
    programmes = {f"{k}+": np.arange(10 * k, 10 * k + 10) for k in range(3)}
    activity = {f"{k}+": (labels == f"t{k}").astype(float) for k in range(3)}
    return ProgrammeFit("PCA", np.column_stack(list(activity.values())), programmes, activity, n_kept=3, seconds=1.0)


def test_score_fit_parsimony_accuracy_and_batch(monkeypatch):
    adata = _labelled_counts()
    spec = RealDataset("toy", "toy", lambda: adata, label_key="cell_type", batch_key="batch")
    row = score_fit(_planted_fit(adata), adata, spec, seed=0)
    assert row["median_genes"] == 10 and row["redundancy"] == 0.0 and row["programmes"] == 3
    assert row["accuracy"] == pytest.approx(1.0)
    assert row["batch_leakage"] < 0.05  # batches alternate within every type
    assert math.isnan(row["enriched_share"]) and math.isnan(row["interferon_p"])  # no gene sets


def test_score_fit_enrichment_and_interferon(monkeypatch):
    from scsparse.generic.benchmarks import _programme_scores

    adata = _labelled_counts()
    adata.obs["condition"] = np.where(adata.obs["cell_type"] == "t0", "stimulated", "control")
    sets = {
        "Hallmark: HALLMARK_INTERFERON_ALPHA_RESPONSE": [f"G{j}" for j in range(8)],
        "PanglaoDB: T cells": [f"G{j}" for j in range(10, 18)],
        "PanglaoDB: B cells": [f"G{j}" for j in range(20, 26)],
    }
    monkeypatch.setattr(_programme_scores, "_gene_sets", lambda spec: sets)
    spec = RealDataset(
        "toy", "toy", lambda: adata, label_key="cell_type", libraries=("custom",),
        markers={"t0": ("NK cells",), "t1": ("T cells",), "t2": ("B cells",)}, condition=("condition", "stimulated"),
    )  # fmt: skip
    row = score_fit(_planted_fit(adata), adata, spec, seed=0)
    assert row["enriched_share"] == 1.0 and row["distinct_terms"] == 3
    assert row["interferon_recovered"] == 1.0 and row["interferon_p"] < 1e-3
    assert row["markers_recovered"] == pytest.approx(2 / 3)  # t0's programme is interferon, not NK markers
    assert row["best_fold"] > 3


def test_disentanglement_counts_the_condition_as_one_process():
    adata = _labelled_counts()
    stimulated = np.arange(adata.n_obs) % 2 == 0  # half the cells of every type
    adata.obs["condition"] = np.where(stimulated, "stimulated", "control")
    labels = adata.obs["cell_type"].to_numpy().astype(str)
    spec = RealDataset("toy", "toy", lambda: adata, label_key="cell_type", condition=("condition", "stimulated"))
    processes = disentanglement_processes(adata, spec, labels)
    assert list(processes.columns) == ["t0", "t1", "t2", "condition: stimulated"]
    assert processes["condition: stimulated"].tolist() == stimulated.tolist()
    fit = _planted_fit(adata)
    fit.factors = np.column_stack([fit.factors, stimulated.astype(float)])  # a factor for the condition too
    with_condition = score_fit(fit, adata, spec, seed=0)
    without = score_fit(fit, adata, RealDataset("toy", "toy", lambda: adata, label_key="cell_type"), seed=0)
    assert with_condition["lms_smi"] == pytest.approx(1.0) and without["lms_smi"] == pytest.approx(1.0)
    fit.factors = fit.factors[:, :3]  # no factor for the condition: a process without its factor
    assert score_fit(fit, adata, spec, seed=0)["lms_smi"] == pytest.approx(0.75)


def test_markers_need_the_programme_to_be_highest_in_that_type():
    labels = np.repeat(["a", "b"], 20)
    fit = ProgrammeFit("x", np.zeros((40, 1)), {"0+": np.arange(3)}, {"0+": (labels == "b").astype(float)}, 1)
    sig = pd.DataFrame({"programme": ["0+"], "term": ["PanglaoDB: A"]})
    spec = RealDataset("toy", "toy", lambda: None, markers={"a": ("A",), "b": ("B",)})
    assert _markers_recovered(fit, sig, labels, spec) == 0.0  # enriched for a's markers, but highest in b
    fit.activity["0+"] = (labels == "a").astype(float)
    assert _markers_recovered(fit, sig, labels, spec) == 0.5


def test_stability_scores_average_over_the_other_seeds():
    same, other = [np.arange(5), np.arange(5, 10)], [np.arange(10, 15), np.arange(15, 20)]
    out = stability_scores({0: same, 1: same, 2: other}, n_genes=20)
    assert out[0]["stability"] == pytest.approx(0.5) and out[2]["stability"] == pytest.approx(0.0)
    assert out[0]["stability_top10"] == pytest.approx(0.5) and out[0]["stability_rbo"] == pytest.approx(0.5)
    assert all(math.isnan(v) for v in stability_scores({0: same}, n_genes=20)[0].values())


def test_stability_top10_and_rbo_see_the_cores_that_the_jaccard_index_of_long_lists_misses():
    core = np.arange(10)
    a = [np.concatenate([core, np.arange(10, 60)])]  # the same 10 strongest genes, different tails
    b = [np.concatenate([core, np.arange(60, 110)])]
    out = stability_scores({0: a, 1: b}, n_genes=110)
    assert out[0]["stability"] == pytest.approx(10 / 110)
    assert out[0]["stability_top10"] == 1.0 and out[0]["stability_rbo"] > 0.6


# ------------------------------------------------------------------------------------------ targets and summary
def _results(sparse: dict, peer: dict) -> pd.DataFrame:
    rows = []
    for dataset in ("kang", "pbmc3k"):
        for method, values in (("SparseVAE", sparse), ("LDVAE", peer)):
            row = dict.fromkeys(RESULT_COLUMNS, math.nan)
            row.update(dataset=dataset, method=method, seed=0, status="ok", n_cells=10, n_genes=5, **values)
            rows.append(row)
    return pd.DataFrame(rows)


def test_targets_met_and_not_met():
    good = {"median_genes": 12, "redundancy": 0.05, "interferon_recovered": 1.0, "interferon_p": 1e-20,
            "markers_recovered": 0.8, "accuracy": 0.85}  # fmt: skip
    peer = {"median_genes": 50, "redundancy": 0.1, "interferon_recovered": 1.0, "interferon_p": 1e-10,
            "markers_recovered": 0.6, "accuracy": 0.86}  # fmt: skip
    verdicts = [v for _, _, v in peers_targets(_results(good, peer))]
    assert verdicts and set(verdicts) == {"met"}
    bad = {**good, "accuracy": 0.8, "redundancy": 0.2}
    table = peers_targets(_results(bad, peer))
    missed = [t for _, t, v in table if v == "not met"]
    assert any("accuracy" in t for t in missed) and any("redundant" in t for t in missed)
    assert {v for _, _, v in peers_targets(_results(good, peer), assessed=False)} == {"not assessed (quick smoke run)"}


def test_summary_names_losses_and_runs_not_run():
    df = _results({"median_genes": 12, "accuracy": 0.8}, {"median_genes": 50, "accuracy": 0.9})
    extra = df.iloc[[0]].assign(method="DRVI", status="not run: needs scvi-tools >= 1.5")
    df = pd.concat([df, extra], ignore_index=True)
    from scsparse.generic.benchmarks._report import provenance

    text = "\n".join(summary_lines(df, provenance("peers", {}), FitBudget(), quick=False, total_seconds=60.0))
    assert "kang / DRVI: not run: needs scvi-tools >= 1.5" in text
    assert "- accuracy (single fits): scsparse 0.800 (SparseVAE); ahead: LDVAE 0.900" in text
    assert "## Targets (Kang and PBMC 3k)" in text


def test_summary_of_a_data_set_without_a_scsparse_fit_says_there_is_nothing_to_compare():
    # a record fitted in parts: the peers of a data set have run, SparseVAE not yet; "nowhere" would read as a win
    df = _results({"accuracy": 0.8}, {"accuracy": 0.9})
    from scsparse.generic.benchmarks._report import provenance

    text = "\n".join(summary_lines(df, provenance("peers", {}), FitBudget(), quick=False, total_seconds=60.0))
    assert "ahead: LDVAE 0.900" in text and "- nowhere" not in text
    peers_only = df[df["method"] != "SparseVAE"]
    text = "\n".join(summary_lines(peers_only, provenance("peers", {}), FitBudget(), quick=False, total_seconds=60.0))
    assert "- no scsparse model has run on this data set, so there is nothing to compare" in text
    assert "- nowhere" not in text
    even = _results({"accuracy": 0.9}, {"accuracy": 0.9})
    text = "\n".join(summary_lines(even, provenance("peers", {}), FitBudget(), quick=False, total_seconds=60.0))
    assert "- nowhere" in text


def test_summary_shows_p_values_by_their_geometric_mean_and_ties_are_not_losses():
    seeds = []
    # the peer finds 7 and 5 of 7 types' markers, SparseVAE 6 of 7 twice: the same mean, rounded differently
    for seed, (p_ours, p_peer, markers_peer) in enumerate([(1e-20, 1e-12, 1.0), (1e-22, 1e-16, 5 / 7)]):
        frame = _results(
            {"interferon_recovered": 1.0, "interferon_p": p_ours, "markers_recovered": 6 / 7},
            {"interferon_recovered": 1.0, "interferon_p": p_peer, "markers_recovered": markers_peer},
        )
        seeds.append(frame.assign(seed=seed))
    df = pd.concat(seeds, ignore_index=True)
    assert (1.0 + 5 / 7) / 2 > 6 / 7
    from scsparse.generic.benchmarks._report import provenance

    text = "\n".join(summary_lines(df, provenance("peers", {}), FitBudget(), quick=False, total_seconds=60.0))
    # the geometric mean and the range, not the arithmetic mean (5e-21) and not "0.000 ± 0.000"
    assert "| SparseVAE | 1.000 ± 0.000 | 1.0e-21 (1.0e-22 to 1.0e-20) |" in text
    assert "0.000 ± 0.000" not in text
    assert "- **interferon_p** (lower is better): SparseVAE (1e-21)" in text
    assert "- markers_recovered: scsparse" not in text  # a tie is no loss
    markers = [v for _, t, v in peers_targets(df) if "marker" in t]
    assert markers and set(markers) == {"met"}


def test_summary_shows_costs_by_their_median_and_range():
    seeds = []
    # SparseVAE's third seed ran beside another job: its mean (135 s) says little, its median (55 s) does
    # the peer fits in under a second or two (PCA): written with two significant digits, not as "0"
    for seed, (ours, peer) in enumerate([(50.0, 0.38), (55.0, 0.412), (300.0, 2.4)]):
        frame = _results({"seconds": ours, "peak_mb": 100.0 + seed}, {"seconds": peer, "peak_mb": 90.0})
        seeds.append(frame.assign(seed=seed))
    df = pd.concat(seeds, ignore_index=True)
    from scsparse.generic.benchmarks._report import provenance

    text = "\n".join(summary_lines(df, provenance("peers", {}), FitBudget(), quick=False, total_seconds=60.0))
    assert "seconds (median; range)" in text and "peak_mb (median; range)" in text
    assert "| 55 (50-300) | 101 (100-102) |" in text and "| 0.41 (0.38-2.4) | 90 (90-90) |" in text
    assert "| fastest (median seconds) | tie: 55 vs 0.41 (LDVAE) |" in text  # tie: 50-300 s over the seeds


# ------------------------------------------------------------------------------------------ the runner
def test_registered_and_rejects_unknown_names(tmp_path):
    assert "peers" in BENCHMARKS
    with pytest.raises(ValueError, match="Unknown data set"):
        run_peers(tmp_path, datasets="nowhere", quick=True)
    with pytest.raises(ValueError, match="Unknown method"):
        run_peers(tmp_path, methods="SparseVAE,FactorX", quick=True)
    assert set(REAL_DATASETS) == {"kang", "pbmc3k", "zeisel", "cellbench", "pbmc_3batch", "kang_studies"} | {
        "cellbench_studies"
    }
    assert PEER_METHODS[0] == "SparseVAE"


def test_a_run_not_told_which_methods_fits_all_but_the_restarts(offline_data, tmp_path, monkeypatch):
    from scsparse.generic.benchmarks._peers import _run as _peers

    calls = []

    def unavailable(method, *args, **kwargs):
        calls.append(method)
        raise MethodUnavailable("not fitted in this test")

    monkeypatch.setattr(_peers, "fit_peer", unavailable)
    df = run_peers(tmp_path, quick=True, seeds=1, datasets="kang", verbose=False)
    assert calls == [m for m in PEER_METHODS if m != "SparseVAE (restarts)"]
    assert df["status"].str.startswith("not run").all()
    run_peers(tmp_path / "named", quick=True, seeds=1, datasets="kang", methods="SparseVAE (restarts)", verbose=False)
    assert calls[-1] == "SparseVAE (restarts)"  # run when named


def test_quick_run_on_kang(offline_data, tmp_path):
    df = run_peers(
        tmp_path, quick=True, seeds=2, datasets="kang", max_epochs=40,
        methods="SparseVAE,SparseVAE (restarts),SparseVAE (consensus),NMF (KL)", verbose=False,
    )  # fmt: skip
    assert list(df.columns) == RESULT_COLUMNS and len(df) == 8
    assert set(df["status"]) == {"ok"}
    assert df["stability"].notna().all() and df["accuracy"].between(0, 1).all()
    assert (df.loc[df["method"] == "NMF (KL)", "median_genes"] == 50).all()
    for name in ("results.csv", "summary.md", "peers_kang.png"):
        assert (tmp_path / name).is_file()
    text = (tmp_path / "summary.md").read_text()
    assert "not assessed (quick smoke run)" in text and "## Kang" in text
    assert "2 restarts for SparseVAE (restarts), 2 restarts for SparseVAE (consensus)." in text
    assert "NMF replicates" not in text  # cNMF did not run
    assert "In short, SparseVAE against the single fits (NMF (KL))" in text
    assert "| least redundant programmes |" in text
    consensus = df[df["method"] == "SparseVAE (consensus)"]
    plain = df[df["method"] == "SparseVAE"]
    assert (consensus["seconds"].to_numpy() > plain["seconds"].to_numpy()).all()  # the plain fit's time included
    saved = pd.read_csv(tmp_path / "results.csv")
    assert len(saved) == 8


def test_resume_keeps_the_finished_fits_and_fits_the_rest(offline_data, tmp_path, monkeypatch):
    from scsparse.generic.benchmarks._peers import _run as _peers

    calls = []
    real = _peers.fit_peer
    monkeypatch.setattr(_peers, "fit_peer", lambda method, *a, **k: calls.append(method) or real(method, *a, **k))
    options = {"quick": True, "datasets": "kang", "methods": "NMF (KL),PCA", "verbose": False}
    first = run_peers(tmp_path, seeds=1, n_threads=2, **options)
    assert calls == ["NMF (KL)", "PCA"] and (tmp_path / "programmes" / "kang.json").is_file()
    assert "2 torch threads" in (tmp_path / "summary.md").read_text()  # the threads the fits ran with
    assert first["ref_seconds"].gt(0).all()  # the CPU's speed as each fit started, for rows of several runs
    assert "- CPU speed as the fits started" in (tmp_path / "summary.md").read_text()
    calls.clear()
    df = run_peers(tmp_path, seeds=2, resume=True, **options)
    assert calls == ["NMF (KL)", "PCA"]  # seed 1 only
    assert len(df) == 4 and df["stability"].notna().all()  # stability over both seeds, the kept one included
    kept = df[df["seed"] == 0].reset_index(drop=True)
    assert kept["median_genes"].tolist() == first["median_genes"].tolist()
    summary = (tmp_path / "summary.md").read_text()
    assert "resumed: 2 of the 4 rows were fitted by an earlier run into this folder" in summary
    fitting = df["seconds"].sum() / 60
    assert f"- fitting time, all fits (the sum of their seconds): {fitting:.1f} min" in summary
    # a kept fit that comes after the last new one is saved too (a stop right after it loses nothing)
    only_pca = run_peers(tmp_path / "b", seeds=1, **{**options, "methods": "PCA"})
    saved = []
    monkeypatch.setattr(_peers, "_save", lambda out_dir, done, current: saved.append([r["method"] for r in current]))
    run_peers(tmp_path / "b", seeds=1, resume=True, **options)
    assert saved[-1] == ["NMF (KL)", "PCA"]  # written once the kept PCA row joined, before the run ended
    stored = json.loads((tmp_path / "b" / "programmes" / "kang.json").read_text())
    assert set(stored) == {"NMF (KL)|0", "PCA|0"} and len(stored["PCA|0"]) == only_pca["programmes"].iloc[0]
    # two data sets: the second one's earlier fits survive the first one's writes to results.csv
    two = {**options, "datasets": "kang,pbmc3k", "methods": "PCA"}
    run_peers(tmp_path / "c", seeds=1, **two)
    calls.clear()
    both = run_peers(tmp_path / "c", seeds=1, resume=True, **two)
    assert calls == [] and sorted(both["dataset"]) == ["kang", "pbmc3k"]
    # a run of fewer methods and seeds carries the other fits over, rows and programmes, so a record is made in parts
    calls.clear()
    part = run_peers(tmp_path, seeds=1, resume=True, **{**options, "methods": "PCA"})
    assert calls == [] and len(part) == 4
    assert sorted(part[["method", "seed"]].to_numpy().tolist()) == sorted(df[["method", "seed"]].to_numpy().tolist())
    more = run_peers(tmp_path, seeds=3, resume=True, **{**options, "methods": "PCA"})
    assert calls == ["PCA"] and len(more) == 5  # seed 2 fitted, its programmes written beside the carried ones
    stored = json.loads((tmp_path / "programmes" / "kang.json").read_text())
    assert set(stored) == {"NMF (KL)|0", "NMF (KL)|1", "PCA|0", "PCA|1", "PCA|2"}
    with pytest.raises(ValueError, match="Resume with the settings of the earlier run"):
        run_peers(tmp_path, seeds=2, resume=True, max_epochs=7, **options)


def test_sparsevae_fits_are_stored_so_a_consensus_reuses_the_plain_fit_and_a_resume_its_restarts(
    offline_data, tmp_path, monkeypatch
):
    from scsparse.generic.benchmarks import _fits

    fitted = []
    real = _fits.fit_sparsevae
    monkeypatch.setattr(_fits, "fit_sparsevae", lambda *a, **k: fitted.append(a[3]) or real(*a, **k))
    options = {
        "quick": True, "seeds": 1, "datasets": "kang", "max_epochs": 40, "verbose": False,
        "methods": "SparseVAE,SparseVAE (consensus)",
    }  # fmt: skip
    first = run_peers(tmp_path, **options)
    assert fitted == [0, 1000]  # restart 0 of the consensus is the plain fit, loaded, not fitted again
    assert len(list((tmp_path / "models" / "kang").glob("*/fit.json"))) == 2
    plain, consensus = first["seconds"].tolist()
    assert consensus > plain  # the plain fit's seconds counted in the consensus'
    # a run stopped after the consensus' restarts but before its row: the resumed run fits nothing
    results = pd.read_csv(tmp_path / "results.csv")
    results[results["method"] == "SparseVAE"].to_csv(tmp_path / "results.csv", index=False)
    fitted.clear()
    again = run_peers(tmp_path, resume=True, **options)
    assert fitted == []
    programmes = json.loads((tmp_path / "programmes" / "kang.json").read_text())
    assert len(programmes["SparseVAE (consensus)|0"]) == first["programmes"].iloc[1]
    for metric in ("programmes", "median_genes", "accuracy", "redundancy"):
        assert again[metric].tolist() == pytest.approx(first[metric].tolist(), nan_ok=True)
    assert again["seconds"].iloc[1] >= plain  # the stored fits' own seconds, not the seconds spent loading them
    # without --resume the earlier run's fits are not trusted: fitted again
    fitted.clear()
    run_peers(tmp_path, **options)
    assert fitted == [0, 1000]


def test_summary_calls_differences_inside_the_seeds_spread_ties_and_skips_deterministic_stability():
    from scsparse.generic.benchmarks._peers._compare import loss_lines, method_means, method_spreads, winner_lines
    from scsparse.generic.benchmarks._programme_scores import METRICS

    rows = []
    for seed, (ours, peer) in enumerate([(0.50, 0.56), (0.60, 0.58), (0.55, 0.60)]):  # means 0.55 vs 0.58
        rows.append(
            {"dataset": "d", "method": "SparseVAE", "seed": seed, "status": "ok", "redundancy": ours, "stability": 0.3}
        )
        rows.append(
            {
                "dataset": "d",
                "method": "LDVAE",
                "seed": seed,
                "status": "ok",
                "redundancy": peer,
                "stability": 0.5 + 0.1 * seed,
            }
        )
        rows.append(
            {"dataset": "d", "method": "PCA", "seed": seed, "status": "ok", "redundancy": 0.9, "stability": 1.0}
        )
    df = pd.DataFrame(rows)
    for m in METRICS:
        df[m] = df.get(m, np.nan)
    means, sds = method_means(df), method_spreads(df)
    # redundancy 0.55 ± 0.05 vs 0.58 ± 0.02: inside the spread, a tie; without the spread SparseVAE would win alone
    best = winner_lines(means, ["redundancy"], sds)[0]
    assert "SparseVAE, LDVAE" in best
    assert (
        "SparseVAE (" in winner_lines(means, ["redundancy"])[0]
        and "LDVAE" not in winner_lines(means, ["redundancy"])[0]
    )
    # stability: PCA's 1.00 is not compared; LDVAE 0.6 ± 0.1 is ahead of SparseVAE's 0.3 beyond the spread
    assert "PCA" not in winner_lines(means, ["stability"], sds)[0]
    losses = loss_lines(means, ["stability", "redundancy"], sds)
    assert len(losses) == 1 and losses[0].startswith("- stability") and "LDVAE" in losses[0] and "PCA" not in losses[0]


def test_losses_compare_like_with_like_single_fits_and_consensus_methods_apart():
    from scsparse.generic.benchmarks._peers._compare import loss_lines, method_means

    values = {"SparseVAE": 0.10, "SparseVAE (consensus)": 0.05, "LDVAE": 0.08, "cNMF": 0.04}
    rows = [{"dataset": "d", "method": k, "seed": 0, "status": "ok", "redundancy": v} for k, v in values.items()]
    df = pd.DataFrame(rows).reindex(columns=RESULT_COLUMNS)
    losses = loss_lines(method_means(df), ["redundancy"])
    # LDVAE beats the single fit (not the consensus, which it is not compared with); cNMF beats the consensus
    assert losses == [
        "- redundancy (single fits): scsparse 0.100 (SparseVAE); ahead: LDVAE 0.080",
        "- redundancy (several fits): scsparse 0.050 (SparseVAE (consensus)); ahead: cNMF 0.040",
    ]


def test_close_values_are_written_with_the_digits_that_tell_them_apart():
    from scsparse.generic.benchmarks._peers._compare import loss_lines, method_means, verdict, versus, winner_lines

    values = {"SparseVAE": 0.064843, "DRVI": 0.064514, "PCA": 0.15}  # one seed: no spread, DRVI ahead
    rows = [{"dataset": "d", "method": k, "seed": 0, "status": "ok", "redundancy": v} for k, v in values.items()]
    means = method_means(pd.DataFrame(rows).reindex(columns=RESULT_COLUMNS))
    assert verdict(means, None, "SparseVAE", ["DRVI", "PCA"], "redundancy") == "behind: 0.0648 vs 0.0645 (DRVI)"
    assert verdict(means, None, "SparseVAE", ["PCA"], "redundancy") == "ahead: 0.065 vs 0.150 (PCA)"
    assert loss_lines(means, ["redundancy"]) == [
        "- redundancy (single fits): scsparse 0.0648 (SparseVAE); ahead: DRVI 0.0645"
    ]
    assert winner_lines(means, ["redundancy"]) == [
        "- **redundancy** (lower is better): DRVI (0.0645); SparseVAE 0.0648"
    ]
    assert versus(means, "SparseVAE", ["DRVI", "PCA"], "redundancy") == "SparseVAE 0.0648 vs DRVI 0.0645, PCA 0.150"


def test_in_short_compares_each_scsparse_model_with_its_budget_group_in_both_readings():
    from scsparse.generic.benchmarks._peers._compare import in_short_rows, method_means, method_spreads

    values = {  # method: (redundancy, at 20, at 50, accuracy) over two seeds
        "SparseVAE": [(0.10, 0.05, 0.12, 0.80), (0.12, 0.05, 0.14, 0.82)],
        "SparseVAE (consensus)": [(0.05, 0.04, 0.09, 0.85), (0.05, 0.04, 0.09, 0.85)],
        "LDVAE": [(0.08, 0.08, 0.08, 0.90), (0.08, 0.08, 0.08, 0.90)],
        "cNMF": [(0.05, 0.06, 0.05, 0.84), (0.06, 0.06, 0.05, 0.86)],
    }
    rows = [
        {"dataset": "d", "method": m, "seed": seed, "status": "ok", "redundancy": r, "redundancy_at20": r20,
         "redundancy_at50": r50, "accuracy": acc}
        for m, by_seed in values.items()
        for seed, (r, r20, r50, acc) in enumerate(by_seed)
    ]  # fmt: skip
    df = pd.DataFrame(rows).reindex(columns=RESULT_COLUMNS)
    tables = dict(in_short_rows(method_means(df), method_spreads(df)))
    single = {r[0]: r[1:] for r in tables["SparseVAE against the single fits (LDVAE)"]}
    several = {r[0]: r[1:] for r in tables["SparseVAE (consensus) against the several fits (cNMF)"]}
    assert single["least redundant programmes"] == [
        "behind: 0.110 vs 0.080 (LDVAE)", "ahead: 0.050 vs 0.080 (LDVAE)", "behind: 0.130 vs 0.080 (LDVAE)"
    ]  # fmt: skip
    assert single["cell types read off the factors (accuracy)"] == ["behind: 0.810 vs 0.900 (LDVAE)", "—", "—"]
    # 0.050 vs 0.055 ± 0.007 and 0.85 vs 0.85 ± 0.014: ties; at 20 genes the consensus is ahead
    assert several["least redundant programmes"][:2] == ["tie: 0.050 vs 0.055 (cNMF)", "ahead: 0.040 vs 0.060 (cNMF)"]
    assert several["cell types read off the factors (accuracy)"][0] == "tie: 0.850 vs 0.850 (cNMF)"
    assert "most programmes enriched" not in single  # no values: no row


def test_equal_size_reading_cuts_every_method_by_its_own_ranking():
    from scsparse.generic.benchmarks._programme_fit import EQUAL_SIZES, ProgrammeFit, extended_ranking

    # a SparseVAE programme of 3 genes (p* > 0.5, by |w|) extended by the other genes of its direction, by p*
    pip = np.array([0.9, 0.8, 0.95, 0.4, 0.45, 0.3, 0.49, 0.1])
    w = np.array([0.5, 0.9, 0.1, 0.2, 0.01, 0.3, 0.2, 0.0])
    same_direction = np.array([True, True, True, True, False, True, True, True])
    ranking = extended_ranking(np.array([1, 0, 2]), pip, w, same_direction)
    assert ranking.tolist() == [1, 0, 2, 6, 3, 5, 7]  # gene 4 goes the other way
    long = extended_ranking(np.arange(80), np.ones(80), np.ones(80), np.ones(80, dtype=bool))
    assert long.tolist() == list(range(max(EQUAL_SIZES)))

    fit = ProgrammeFit(
        "SparseVAE",
        None,
        {"0+": np.array([1, 0, 2]), "1+": np.arange(60)},
        {},
        2,
        rankings={"0+": ranking},
    )
    cut = fit.cut(5)
    assert cut["0+"].tolist() == [1, 0, 2, 6, 3] and cut["1+"].tolist() == [0, 1, 2, 3, 4]
    assert fit.cut(20)["0+"].size == 7  # a ranking shorter than n keeps what it has
    assert fit.programmes["0+"].tolist() == [1, 0, 2]  # the own reading is untouched


def test_p_values_are_compared_by_the_spread_of_their_log10_over_seeds():
    from scsparse.generic.benchmarks._peers._compare import (
        ahead_of_all,
        loss_lines,
        method_means,
        method_spreads,
        verdict,
        winner_lines,
    )

    # Kang's interferon programme at 20 genes in the record: SparseVAE's three seeds against NMF's deterministic p.
    # The geometric mean (1.3e-14) is 0.69 orders of magnitude below NMF's, inside the seeds' sd of 1.34: a tie.
    by_seed = {"SparseVAE": [6.3e-14, 9.2e-14, 3.6e-16], "NMF (KL)": [6.3e-14] * 3, "LDVAE": [1e-3, 2e-3, 4e-3]}
    rows = [
        {"dataset": "d", "method": m, "seed": seed, "status": "ok", "interferon_p": p}
        for m, ps in by_seed.items()
        for seed, p in enumerate(ps)
    ]
    df = pd.DataFrame(rows).reindex(columns=RESULT_COLUMNS)
    means, sds = method_means(df), method_spreads(df)
    assert sds.loc["SparseVAE", "interferon_p"] == pytest.approx(np.std(np.log10(by_seed["SparseVAE"]), ddof=1))
    assert sds.loc["NMF (KL)", "interferon_p"] == 0.0
    assert verdict(means, sds, "SparseVAE", ["NMF (KL)"], "interferon_p") == "tie: 1.3e-14 vs 6.3e-14 (NMF (KL))"
    # without the spread the same means read as a lead, which is what the rule forbids
    assert verdict(means, None, "SparseVAE", ["NMF (KL)"], "interferon_p").startswith("ahead")
    assert not ahead_of_all(means, "SparseVAE", ["NMF (KL)", "LDVAE"], "interferon_p", higher=False, sds=sds)
    assert "SparseVAE, NMF (KL)" in winner_lines(means, ["interferon_p"], sds)[0]
    # ten orders of magnitude are outside any seed's spread: ahead of LDVAE, and LDVAE's loss is not a peer's lead
    assert verdict(means, sds, "SparseVAE", ["LDVAE"], "interferon_p").startswith("ahead")
    assert loss_lines(means, ["interferon_p"], sds) == []
    # a peer far below scsparse's p beyond the spread is listed as ahead
    df.loc[df["method"] == "NMF (KL)", "interferon_p"] = 1e-30
    means, sds = method_means(df), method_spreads(df)
    assert loss_lines(means, ["interferon_p"], sds) == [
        "- interferon_p (single fits): scsparse 1.3e-14 (SparseVAE); ahead: NMF (KL) 1e-30"
    ]
