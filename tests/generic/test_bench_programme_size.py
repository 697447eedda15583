"""bench programme_size: scores against planted supports, the real subsamples' scores, and smoke runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scsparse.generic.benchmarks import BENCHMARKS
from scsparse.generic.benchmarks._programme_size._real import (
    _factor_programmes,
    _subsample,
    score_cores,
    subsample_sizes,
)
from scsparse.generic.benchmarks._programme_size._run import (
    PROGRAMME_SIZE_SETTINGS,
    RESULT_COLUMNS,
    _effect_pip,
    _effect_scores,
    _rare_scores,
    _simulate,
    paired_programmes,
    rare_cells,
    run_programme_size,
    support_scores,
)
from scsparse.generic.metrics import ProgrammeSet


def _truth() -> np.ndarray:
    truth = np.zeros((10, 2), dtype=bool)
    truth[0:4, 0] = truth[4:8, 1] = True  # genes 8 and 9: driven by no programme
    return truth


def test_support_scores_pair_planted_programmes_with_factors():
    pip = np.zeros((10, 3))
    pip[[0, 1, 2, 3, 8], 1] = 0.9  # planted 0, plus an undriven gene
    pip[[4, 5], 2] = 0.8  # half of planted 1
    w = np.zeros((10, 3))
    w[:, 1] = [5, 4, 3, 2, 0, 0, 0, 0, 9, 0]  # the undriven gene is the strongest
    w[:, 2] = [0, 0, 0, 0, 3, 2, 0, 0, 0, 0]
    s = support_scores(pip, w, _truth(), n_top=2)
    assert s["n_active"] == 2 and s["median_size"] == 3.5 and s["max_size"] == 5
    assert s["precision"] == pytest.approx((4 / 5 + 2 / 2) / 2)
    assert s["recall"] == pytest.approx((4 / 4 + 2 / 4) / 2)
    assert s["jaccard"] == pytest.approx((4 / 5 + 2 / 4) / 2)
    assert s["slab_outside"] == pytest.approx(1 / 7)
    assert s["top_precision"] == pytest.approx((1 / 2 + 2 / 2) / 2)  # factor 1's top 2: gene 8 (out), gene 0 (in)


def test_support_scores_without_an_active_factor_recover_nothing():
    s = support_scores(np.full((10, 3), 0.1), np.zeros((10, 3)), _truth())
    assert s["n_active"] == 0 and s["recall"] == 0 and s["jaccard"] == 0
    assert np.isnan(s["precision"]) and np.isnan(s["top_precision"])


def test_a_planted_programme_without_a_factor_counts_zero_recall():
    pip = np.zeros((10, 1))
    pip[0:4, 0] = 0.9
    s = support_scores(pip, pip, _truth())
    assert s["precision"] == 1.0 and s["recall"] == pytest.approx(0.5) and s["jaccard"] == pytest.approx(0.5)


def test_paired_programmes_give_each_planted_programme_its_factor_or_none():
    pip = np.zeros((10, 3))
    pip[[4, 5, 6], 0] = 0.9  # planted 1 without gene 7
    pip[[0, 1, 2, 3, 8, 9], 2] = 0.9  # planted 0 and the two undriven genes
    pairs = paired_programmes(pip, _truth())
    assert pairs["factor"].tolist() == [2.0, 0.0]
    assert pairs["recall"].tolist() == pytest.approx([1.0, 0.75])
    assert pairs["precision"].tolist() == pytest.approx([4 / 6, 1.0])
    assert pairs["jaccard"].tolist() == pytest.approx([4 / 6, 0.75])
    one = np.zeros((10, 2))
    one[[4, 5, 6, 7], 1] = 0.9  # one active factor, taken by planted 1: planted 0 is left without one
    pairs = paired_programmes(one, _truth())
    assert np.isnan(pairs.loc[0, "factor"]) and pairs.loc[0, "recall"] == 0 and np.isnan(pairs.loc[0, "precision"])
    assert pairs.loc[1].tolist() == [1.0, 1.0, 1.0, 1.0]


def test_the_rare_programme_is_the_last_planted_one_scored_in_both_readings():
    truth = np.zeros((10, 3), dtype=bool)
    truth[0:4, 0] = truth[4:7, 1] = truth[7:10, 2] = True  # the last: the rare population's programme
    pip = np.zeros((10, 3))
    pip[0:4, 0] = pip[4:7, 1] = 0.9
    pip[[7, 8, 3], 2] = 0.9  # two of its three genes and one of programme 0's
    effect = np.where(np.arange(3) == 2, 0.0, pip)  # the effect reading drops the rare factor's genes
    s = _rare_scores(pip, effect, truth)
    assert s["rare_recall"] == pytest.approx(2 / 3) and s["rare_precision"] == pytest.approx(2 / 3)
    assert s["rare_jaccard"] == pytest.approx(2 / 4) and s["rare_effect_recall"] == 0.0


def test_the_rare_population_is_its_share_of_the_cells_with_a_programme_of_its_own():
    assert rare_cells(100_000, 0.02) == 2_000 and rare_cells(10, 0.02) == 1 and rare_cells(10, 0.9) == 5
    settings = {**PROGRAMME_SIZE_SETTINGS, "n_genes": 200}
    data = _simulate(settings, "rare", 1_000, seed=0)
    assert (data.study == "study1").sum() == 20 and (data.study == "study0").sum() == 980
    rare_genes = data.W_specific_support["study1"][:, 0]
    assert rare_genes.sum() == settings["genes_per_programme"]
    others = data.W_shared_support.any(1) | data.W_specific_support["study0"].any(1)
    assert (rare_genes & ~others).sum() >= 2  # anchor genes that no other programme drives
    assert data.Z_specific["study1"].shape == (20, 1)
    planted = _simulate(settings, "planted", 1_000, seed=0)
    assert planted.W_specific_support["study1"].shape == (200, 0)


def test_the_effect_reading_keeps_only_the_genes_each_factor_moves_enough():
    class Response:
        def programmes(self, min_effect):
            assert min_effect == PROGRAMME_SIZE_SETTINGS["min_effect"]
            return {"f1": ["g0", "g1", "g2", "g3"]}  # factor 1 without the undriven gene 8; factor 2 moves nothing

    class Model:
        adata = type("A", (), {"var_names": pd.Index([f"g{j}" for j in range(10)])})()
        factor_names = ["f0", "f1", "f2"]

        def get_factor_response(self, n_cells):
            assert n_cells == PROGRAMME_SIZE_SETTINGS["response_cells"]
            return Response()

    pip = np.zeros((10, 3))
    pip[[0, 1, 2, 3, 8], 1] = 0.9
    pip[[4, 5], 2] = 0.8
    s = _effect_scores(_effect_pip(Model(), pip, PROGRAMME_SIZE_SETTINGS), pip, _truth(), PROGRAMME_SIZE_SETTINGS)
    assert s == {"effect_median_size": 4.0, "effect_precision": 1.0, "effect_recall": pytest.approx(0.5)}


def test_quick_run_writes_a_row_per_scenario_size_and_seed(tmp_path):
    assert BENCHMARKS["programme_size"] is run_programme_size
    df = run_programme_size(tmp_path, quick=True, cells=[200, 400], methods="planted,background", verbose=False)
    assert list(df.columns) == RESULT_COLUMNS
    assert df[["scenario", "n_cells"]].values.tolist() == [
        ["planted", 200], ["planted", 400], ["background", 200], ["background", 400],
    ]  # fmt: skip
    assert (df["n_genes"] == 60).all() and df["seconds"].gt(0).all()
    assert pd.read_csv(tmp_path / "results.csv").shape == df.shape
    summary = (tmp_path / "summary.md").read_text()
    assert "| planted | 400 |" in summary and "not assessed (quick smoke run)" in summary
    assert "Read by effect size" in summary and "precision (by effect size)" in summary
    assert (tmp_path / "programme_size.png").stat().st_size > 0


def test_quick_run_of_the_rare_scenario_scores_the_rare_programme(tmp_path):
    df = run_programme_size(tmp_path, quick=True, cells=[300], methods="planted,rare", verbose=False)
    planted, rare = df.iloc[0], df.iloc[1]
    assert planted[["rare_jaccard", "rare_recall", "rare_precision", "rare_effect_recall"]].isna().all()
    assert 0 <= rare["rare_jaccard"] <= rare["rare_recall"] <= 1 and 0 <= rare["rare_effect_recall"] <= 1
    summary = (tmp_path / "summary.md").read_text()
    assert "one of the rare population (2% of the cells)" in summary
    assert "The rare population's programme (scenario `rare`; 6 cells of the rare population at 300 cells)" in summary
    assert "at most 10,000 training cells (the likelihood tempered by 10,000 / n above that)" in summary


def test_real_subsample_sizes_read_zero_as_every_cell_and_refuse_more_than_there_are():
    assert subsample_sizes([2000, 0, 500, 2000], 2860) == [500, 2000, 2860]
    with pytest.raises(ValueError, match="2,860 cells; cannot subsample 3,000"):
        subsample_sizes([500, 3000], 2860)


def test_real_subsamples_of_one_seed_are_nested():
    import anndata as ad

    adata = ad.AnnData(np.zeros((50, 3), dtype=np.float32))
    small, large = _subsample(adata, 10, seed=3), _subsample(adata, 30, seed=3)
    assert set(small.obs_names) <= set(large.obs_names) and (small.n_obs, large.n_obs) == (10, 30)
    assert set(_subsample(adata, 10, seed=4).obs_names) != set(small.obs_names)


def test_a_factor_programme_holds_its_slab_genes_strongest_first():
    pip = np.array([[0.9, 0.1], [0.6, 0.2], [0.2, 0.3], [0.8, 0.4]])
    w = np.array([[1.0, 0.0], [-3.0, 0.0], [5.0, 0.0], [2.0, 0.0]])
    programmes = _factor_programmes(pip, w)
    assert len(programmes) == 1 and programmes[0].tolist() == [1, 3, 0]  # |w| 3, 2, 1; gene 2 below 0.5


def test_cores_are_scored_against_the_largest_subsample_of_the_same_seed():
    loadings = np.random.default_rng(0).normal(size=(30, 2))
    full = ProgrammeSet([np.arange(0, 10), np.arange(10, 20)], loadings)
    half = ProgrammeSet([np.arange(0, 10)], loadings[:, :1])  # one of the two programmes, same core
    other = ProgrammeSet([np.arange(20, 30)], loadings[:, :1])  # a seed of its own: nothing in common
    rows = [{"scenario": "chemistries", "n_cells": n, "seed": s} for n, s in ((500, 0), (2860, 0), (500, 1), (2860, 1))]
    rows.append({"scenario": "planted", "n_cells": 500, "seed": 0})
    sets = {(500, 0): half, (2860, 0): full, (500, 1): other, (2860, 1): full}
    score_cores(rows, sets, seed=0, n_genes=30, n_top=10)
    assert rows[0]["core_overlap"] == pytest.approx(0.5) and rows[0]["core_rbo"] == pytest.approx(0.5)
    assert np.isnan(rows[1]["core_overlap"])  # the largest against itself: not scored
    assert "core_overlap" not in rows[2] and "core_overlap" not in rows[4]  # another seed, another scenario
    score_cores(rows, sets, seed=1, n_genes=30, n_top=10)
    assert rows[2]["core_overlap"] == 0.0


@pytest.mark.filterwarnings("ignore::scsparse.model.ZeroGenesWarning")  # a 150-cell subsample has genes it never sees
def test_quick_run_of_the_real_scenario(shared_data, tmp_path):
    df = run_programme_size(tmp_path, quick=True, methods="chemistries", verbose=False)
    assert list(df.columns) == RESULT_COLUMNS
    assert df["n_cells"].tolist() == [150, 300] and (df["scenario"] == "chemistries").all()
    assert df["precision"].isna().all() and (df["n_genes"] == 300).all()
    summary = (tmp_path / "summary.md").read_text()
    assert "## Real data: subsamples of the PBMC chemistries" in summary and "## Simulations" not in summary
    with pytest.raises(ValueError, match="cannot subsample 400"):
        run_programme_size(tmp_path, quick=True, methods="chemistries", cells=[400], verbose=False)


def test_unknown_scenario_and_bad_sizes_are_refused(tmp_path):
    with pytest.raises(ValueError, match="scenario"):
        run_programme_size(tmp_path, quick=True, methods="dense", verbose=False)
    with pytest.raises(ValueError, match="cells"):
        run_programme_size(tmp_path, quick=True, cells=[0], verbose=False)
    with pytest.raises(ValueError, match="max_prior_cells must be a positive whole number of cells or 'all'"):
        run_programme_size(tmp_path, quick=True, max_prior_cells=0, verbose=False)


def test_max_prior_cells_reaches_every_fit_and_the_summary(tmp_path, monkeypatch):
    from scsparse.generic.benchmarks._programme_size import _run as _programme_size

    seen = []
    real_fit = _programme_size.fit_sparsevae

    def fit(*args, **kwargs):
        seen.append(kwargs["max_prior_cells"])
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(_programme_size, "fit_sparsevae", fit)
    run_programme_size(tmp_path / "all", quick=True, cells=[200], methods="planted", max_prior_cells="all",
                       verbose=False)  # fmt: skip
    run_programme_size(tmp_path / "cap", quick=True, cells=[200], methods="planted", max_prior_cells=150,
                       verbose=False)  # fmt: skip
    run_programme_size(tmp_path / "default", quick=True, cells=[200], methods="planted", verbose=False)
    assert seen == [None, 150, PROGRAMME_SIZE_SETTINGS["max_prior_cells"]] and seen[-1] == 10_000
    assert "seed=s, max_prior_cells=None)`" in (tmp_path / "all" / "summary.md").read_text()
    assert "seed=s, max_prior_cells=150)`" in (tmp_path / "cap" / "summary.md").read_text()
    assert "seed=s)`" in (tmp_path / "default" / "summary.md").read_text()
