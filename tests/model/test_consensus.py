"""Tests of the consensus over restarts: matching, reproducibility, consensus p*, and the model it returns."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import anndata as ad
import numpy as np
import pandas as pd
import pytest

import scsparse
from scsparse.model import InvalidInputError, SparseVAE
from scsparse.model._consensus import CONSENSUS_COLUMNS, consensus_programmes
from scsparse.results import jaccard_matrix, read_results


def _planted_restarts(n_restarts: int = 5, seed: int = 0) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """p* and W of restarts that each find three planted programmes of 20 genes (in their own column order, each
    restart missing two genes of every programme and adding one, never the same as another restart's, the genes'
    strengths in the same order up to noise); restart 2 also has a programme no other restart has."""
    rng = np.random.default_rng(seed)
    n_genes, n_factors = 90, 6
    truth = np.zeros((n_genes, 3), dtype=bool)
    for k in range(3):
        truth[k * 20 : (k + 1) * 20, k] = True  # genes 60..89 belong to no programme
    strength = 3.0 - 0.1 * (np.arange(n_genes) % 20)  # within each programme, its first genes are its strongest
    pips, loadings = [], []
    for r in range(n_restarts):
        pip = np.full((n_genes, n_factors), 0.02)
        w = rng.normal(0.0, 0.05, (n_genes, n_factors))
        columns = rng.permutation(n_factors)[:4]
        for k in range(3):
            genes = truth[:, k].copy()
            genes[k * 20 + 2 * r : k * 20 + 2 * r + 2] = False  # two genes missed
            genes[60 + 3 * r + k] = True  # one gene added
            pip[genes, columns[k]] = rng.uniform(0.9, 1.0, genes.sum())
            w[genes, columns[k]] = strength[genes] + rng.normal(0.0, 0.02, genes.sum())
        if r == 2:
            pip[60:75, columns[3]] = 0.9  # a programme this restart alone finds
            w[60:75, columns[3]] = 1.0
        pips.append(pip)
        loadings.append(w)
    return truth, pips, loadings


def test_consensus_recovers_planted_programmes_and_flags_the_one_of_a_single_restart():
    truth, pips, loadings = _planted_restarts()
    result = consensus_programmes(pips, loadings)
    table = result.table
    assert list(table.columns) == CONSENSUS_COLUMNS
    kept = table[table["kept"]]
    assert len(kept) == 3 and (kept["reproducibility"] == 1.0).all()
    assert (kept["agreement"] > 0.7).all() and (kept["jaccard"] < 1.0).all()
    consensus_sets = result.pip > 0.5
    names = [f"factor_{k}" for k in range(pips[0].shape[1])]
    columns = [names.index(f) for f in kept["factor"]]
    # the consensus genes are the planted ones: a gene missed or added by one restart is outvoted
    jac = jaccard_matrix(truth, consensus_sets[:, columns])
    assert np.sort(jac.max(1)).tolist() == pytest.approx([1.0, 1.0, 1.0])
    assert (kept["n_anchor_genes"] == 20).all() and kept["identifiable"].all()
    if result.reference == 2:  # the lone programme belongs to the reference: it is there, flagged, switched off
        lone = table[~table["kept"]]
        assert len(lone) == 1 and lone["reproducibility"].iloc[0] == pytest.approx(1 / 5)
        assert not lone["identifiable"].iloc[0]
        assert (result.pip[:, names.index(lone["factor"].iloc[0])] == 0).all()
    else:  # the lone programme is not in the reference: it lowers restart 2's agreement
        assert result.restarts.loc[2, "agreement"] < result.restarts["agreement"].max()
    assert ((result.pip >= 0) & (result.pip <= 1)).all()


def test_the_lone_programme_of_the_reference_is_switched_off():
    # five restarts over 60 genes: programme 1 (genes 0-9) and programme 2 (core genes 10-19) everywhere,
    # restarts 2-4 adding five genes of their own to programme 2's tail; a third programme shared by restarts 0
    # and 1 only (genes 35-39), and one of each of restarts 2-4 alone (genes 40-44, 45-49, 50-54)
    def restart(extra: list[int], third: list[int]) -> np.ndarray:
        pip = np.full((60, 3), 0.01)
        pip[0:10, 0] = 0.99
        pip[[*range(10, 20), *extra], 1] = 0.99
        pip[third, 2] = 0.99
        return pip

    pips = [
        restart([], list(range(35, 40))), restart([], list(range(35, 40))),
        restart(list(range(20, 25)), list(range(40, 45))), restart(list(range(25, 30)), list(range(45, 50))),
        restart(list(range(30, 35)), list(range(50, 55))),
    ]  # fmt: skip
    result = consensus_programmes(pips, min_share=0.5)  # ranked by p*: ties in gene order, the same in every restart
    assert result.reference == 0  # restarts 0 and 1 agree most with the others; the first of equals
    table = result.table.set_index("factor")
    assert table["reproducibility"].tolist() == pytest.approx([1.0, 1.0, 2 / 5])
    assert table["kept"].tolist() == [True, True, False]
    assert (result.pip[:, 2] == 0).all()  # switched off: the factor is no longer active
    # consensus p*: programme 2's core is in every restart, each restart's extra genes in one of five
    assert (result.pip[10:20, 1] > 0.5).all() and (result.pip[20:35, 1] < 0.5).all()
    assert table.loc["factor_1", "n_genes"] == 10 and table.loc["factor_1", "identifiable"]
    assert not table.loc["factor_2", "identifiable"]


def test_consensus_rejects_bad_input():
    _, pips, loadings = _planted_restarts()
    with pytest.raises(InvalidInputError, match="at least 2 restarts"):
        consensus_programmes(pips[:1])
    with pytest.raises(InvalidInputError, match="differ in shape"):
        consensus_programmes([pips[0], pips[1][:, :3]])
    with pytest.raises(InvalidInputError, match="min_share"):
        consensus_programmes(pips, min_share=1.5)
    with pytest.raises(InvalidInputError, match="one W per restart"):
        consensus_programmes(pips, loadings[:2])


@pytest.fixture(scope="module")
def consensus_fit(counts_factory):
    adata = counts_factory(400, 30, 3, seed=2)
    adata.obs["group"] = np.where(np.arange(adata.n_obs) < 200, "a", "b")
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE.consensus(
        adata, n_restarts=2, seed=5, n_latent=4, n_hidden=16, mask_init="nmf",
        train_kwargs={"max_epochs": 30, "batch_size": 64, "enable_progress_bar": False},
    )  # fmt: skip
    return adata, model


def test_consensus_model_is_a_trained_model_with_the_consensus(consensus_fit, tmp_path):
    adata, model = consensus_fit
    assert model.is_trained_ and model.restarts_["seed"].tolist() == [5, 6]
    assert int(model.restarts_["reference"].sum()) == 1
    assert model.seed == int(model.restarts_.loc[model.restarts_["reference"], "seed"].iloc[0])
    kept = model.consensus_.loc[model.consensus_["kept"], "factor"].tolist()
    active = model.active_factors()
    assert active and set(active) <= set(kept)
    z = model.get_latent_representation()
    assert z.shape == (adata.n_obs, 4)
    de = model.differential_expression(groupby="group", group1="a", batch_size=128)
    assert len(de) == adata.n_vars
    model.write_results(adata, key_added="cons")
    res = read_results(adata, "cons")
    pd.testing.assert_frame_equal(res.consensus.reset_index(drop=True), model.consensus_.reset_index(drop=True))
    # saved and loaded, the consensus p* and tables come back
    model.save(tmp_path / "m", overwrite=True)
    back = SparseVAE.load(str(tmp_path / "m"), adata=adata)
    np.testing.assert_array_equal(back.get_inclusion_probabilities(), model.get_inclusion_probabilities())
    pd.testing.assert_frame_equal(back.consensus_, model.consensus_)
    np.testing.assert_allclose(back.get_latent_representation(), z, rtol=1e-5, atol=1e-6)
    # written to h5ad and read back
    adata.write_h5ad(tmp_path / "a.h5ad")
    again = read_results(ad.read_h5ad(tmp_path / "a.h5ad"), "cons")
    assert again.consensus["factor"].tolist() == model.consensus_["factor"].tolist()


def test_report_and_plot_read_the_consensus(consensus_fit, tmp_path):
    adata, model = consensus_fit
    model.write_results(adata, key_added="cons", overwrite=True)
    text = scsparse.tl.fit_report(adata, key="cons")
    assert "### How reproducible each programme is" in text and "Consensus of 2 restarts" in text
    table = model.consensus_
    every = table[table["kept"] & (table["reproducibility"] == 1.0)]["factor"].tolist()
    line = next(line for line in text.splitlines() if line.startswith("- recovered by every restart"))
    assert f"{len(every)} of the {int(table['kept'].sum())} kept" in line
    assert all(f in line for f in every)
    scsparse.pl.reproducibility(adata, key="cons", save=tmp_path / "r.png", show=False)
    assert (tmp_path / "r.png").stat().st_size > 0
    single = SparseVAE(adata, n_latent=4, n_hidden=16, seed=0)
    single.train(max_epochs=2, enable_progress_bar=False)
    single.write_results(adata, key_added="single")
    assert "How reproducible" not in scsparse.tl.fit_report(adata, key="single")
    with pytest.raises(scsparse.pl.MissingResultsError, match="single fit"):
        scsparse.pl.reproducibility(adata, key="single", show=False)


def test_consensus_checks_its_arguments(counts_adata):
    SparseVAE.setup_anndata(counts_adata, layer="counts")
    with pytest.raises(InvalidInputError, match="n_restarts"):
        SparseVAE.consensus(counts_adata, n_restarts=1)
    with pytest.raises(InvalidInputError, match="distinct"):
        SparseVAE.consensus(counts_adata, n_restarts=2, seeds=[3, 3])
    from scsparse.model import consensus_of

    untrained = [SparseVAE(counts_adata, n_latent=3, n_hidden=8, seed=s) for s in range(2)]
    with pytest.raises(InvalidInputError, match="at least 2 trained restarts"):
        consensus_of(untrained[:1])
    with pytest.raises(InvalidInputError, match="must be trained"):
        consensus_of(untrained)
    other = SparseVAE(counts_adata, n_latent=4, n_hidden=8, seed=0)
    with pytest.raises(InvalidInputError, match="same factors"):
        consensus_of([untrained[0], other])


def test_blocks_are_matched_apart():
    # two blocks of two factors (a multi-study model's shared and one study's): every restart finds programme A
    # (genes 0-9) and programme B (genes 10-19); restarts 0-2 put A in the shared block (column 0), restart 3 in
    # the study's (column 2), so within blocks only restarts 0-2 recover A, and restart 3's A is not the shared A
    def restart(a_column: int) -> np.ndarray:
        pip = np.full((40, 4), 0.01)
        pip[0:10, a_column] = 0.99
        pip[10:20, 3] = 0.99
        return pip

    pips = [restart(0), restart(0), restart(0), restart(2)]
    loadings = [np.where(p > 0.5, 1.0 + np.linspace(1, 0, 40)[:, None], 0.0) for p in pips]
    together = consensus_programmes(pips, loadings).table.set_index("factor")
    assert together.loc["factor_0", "reproducibility"] == 1.0  # all together, restart 3's column 2 stands in
    apart = consensus_programmes(pips, loadings, blocks=[[0, 1], [2, 3]])
    table = apart.table.set_index("factor")
    assert apart.reference != 3
    assert table.loc["factor_0", "reproducibility"] == 0.75 and table.loc["factor_3", "reproducibility"] == 1.0
    assert table.loc["factor_0", "kept"] and table.loc["factor_3", "kept"]
    # the consensus p* of A: restart 3 does not recover it in the shared block and counts 0
    np.testing.assert_allclose(apart.pip[0:10, 0], 3 * 0.99 / 4)
    assert (apart.pip[:, [1, 2]] == 0).all()
    with pytest.raises(InvalidInputError, match="each column in exactly one group"):
        consensus_programmes(pips, loadings, blocks=[[0, 1], [1, 2, 3]])
    with pytest.raises(InvalidInputError, match="each column in exactly one group"):
        consensus_programmes(pips, loadings, blocks=[[0, 1], [2]])


def test_multistudy_consensus_is_a_multistudy_model_with_the_consensus(counts_factory, tmp_path):
    from scsparse.model import MultiStudySparseVAE

    adata = counts_factory(300, 30, 3, seed=4)
    adata.obs["study"] = np.where(np.arange(adata.n_obs) < 150, "ctrl", "stim")
    MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts")
    model = MultiStudySparseVAE.consensus(
        adata, n_restarts=2, seed=3, n_latent_shared=3, n_latent_specific=1, n_hidden=16,
        decoder_kwargs={"w_init": 1.0}, train_kwargs={"max_epochs": 30, "batch_size": 32, "enable_progress_bar": False},
    )  # fmt: skip
    assert isinstance(model, MultiStudySparseVAE) and model.restarts_["seed"].tolist() == [3, 4]
    table = model.consensus_
    assert set(table["factor"]) <= set(model.factor_names) and len(table) >= 1
    # switched-off programmes have no genes left; the kept ones are the model's active factors
    kept = table.loc[table["kept"], "factor"].tolist()
    assert set(model.active_factors()) == set(kept)
    model.write_results(adata, key_added="mcons")
    res = read_results(adata, "mcons")
    pd.testing.assert_frame_equal(res.consensus.reset_index(drop=True), table.reset_index(drop=True))
    assert "### How reproducible each programme is" in scsparse.tl.fit_report(adata, key="mcons")
    scsparse.pl.reproducibility(adata, key="mcons", save=tmp_path / "r.png", show=False)
    assert (tmp_path / "r.png").stat().st_size > 0
    model.save(tmp_path / "m", overwrite=True)
    back = MultiStudySparseVAE.load(str(tmp_path / "m"), adata=adata)
    pd.testing.assert_frame_equal(back.consensus_, table)
    np.testing.assert_array_equal(back.get_inclusion_probabilities(), model.get_inclusion_probabilities())
