"""Tests of the pooled consensus over restarts: grouping, reproducibility, consensus p*, and the refit it returns."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import anndata as ad
import numpy as np
import pandas as pd
import pytest
import torch

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


def test_consensus_recovers_planted_programmes_and_drops_the_one_of_a_single_restart():
    truth, pips, loadings = _planted_restarts()
    result = consensus_programmes(pips, loadings)
    table = result.table
    assert list(table.columns) == CONSENSUS_COLUMNS
    kept = table[table["kept"]]
    assert len(kept) == 3 and result.n_programmes == 3 and (kept["reproducibility"] == 1.0).all()
    assert (kept["n_members"] == 5).all() and (kept["agreement"] > 0.8).all() and (kept["agreement"] < 1.0).all()
    # the consensus genes are the planted ones: a gene missed or added by one restart is outvoted
    jac = jaccard_matrix(truth, result.pip > 0.5)
    assert np.sort(jac.max(1)).tolist() == pytest.approx([1.0, 1.0, 1.0])
    assert (kept["n_anchor_genes"] == 20).all() and kept["identifiable"].all()
    # the programme restart 2 alone finds is an outlier: no group takes it in
    members = result.members
    assert len(members) == 16 and int(members["outlier"].sum()) == 1
    lone = members[members["outlier"]].iloc[0]
    assert lone["restart"] == 2 and lone["programme"] == ""
    assert result.restarts["n_outliers"].tolist() == [0, 0, 1, 0, 0]
    assert result.restarts["n_in_kept"].tolist() == [3] * 5
    assert ((result.pip >= 0) & (result.pip <= 1)).all()
    # the loadings rank each programme's genes as the restarts do (the first genes of a programme are strongest)
    for k in range(3):
        genes = np.flatnonzero(result.pip[:, k] > 0.5)
        assert (result.loadings[genes, k] > 0).all() and (result.loadings[result.pip[:, k] <= 0.5, k] == 0).all()
        top = genes[np.argsort(-result.loadings[genes, k])][:3]
        assert (top % 20 < 8).all()


def test_two_cuts_of_the_same_cells_give_the_planted_programmes_and_mark_the_ambiguous_genes():
    # cells of types x, y and z, with 10 genes each (0-9, 10-19, 20-29), and a programme every restart finds
    # (genes 40-59). Restarts 0-2 cut the cells as {x} and {y, z}; restarts 3-5 as {x, y} and {z}: both cuts
    # predict the cells equally well. One reference restart would return its own cut; the pooled consensus
    # returns what both cuts share, x and z, leaves y's genes (held by half the members) out, and its agreement
    # marks the two ambiguous programmes.
    def restart(first: range, second: range) -> np.ndarray:
        pip = np.full((60, 4), 0.01)
        pip[list(first), 0] = 0.99
        pip[list(second), 1] = 0.99
        pip[40:60, 3] = 0.99
        return pip

    pips = [restart(range(0, 10), range(10, 30))] * 3 + [restart(range(0, 20), range(20, 30))] * 3
    result = consensus_programmes(pips, min_share=0.5)
    kept = result.table[result.table["kept"]].reset_index(drop=True)
    assert len(kept) == 3 and (kept["reproducibility"] == 1.0).all()
    genes = [set(np.flatnonzero(result.pip[:, k] > 0.5)) for k in range(3)]
    assert sorted(map(sorted, genes)) == [list(range(0, 10)), list(range(20, 30)), list(range(40, 60))]
    by_genes = {min(g): row for g, (_, row) in zip(genes, kept.iterrows(), strict=True)}
    assert by_genes[40]["agreement"] == pytest.approx(1.0)
    # each ambiguous programme's members: half of them hold exactly its genes, half add y's 10 genes
    assert by_genes[0]["agreement"] == pytest.approx(0.75) and by_genes[20]["agreement"] == pytest.approx(0.75)
    np.testing.assert_allclose(result.pip[10:20].max(axis=1), 0.5)  # y's genes: in half the members, not kept


def test_a_programme_too_few_restarts_find_is_listed_but_not_kept():
    # programme A (genes 0-9) in all five restarts; B (genes 20-29) in restarts 0 and 1 only
    def restart(with_b: bool) -> np.ndarray:
        pip = np.full((40, 3), 0.01)
        pip[0:10, 0] = 0.99
        if with_b:
            pip[20:30, 2] = 0.99
        return pip

    pips = [restart(True), restart(True), restart(False), restart(False), restart(False)]
    result = consensus_programmes(pips, min_share=0.5)
    table = result.table
    assert table["kept"].tolist() == [True, False] and table["reproducibility"].tolist() == [1.0, 0.4]
    assert result.pip.shape == (40, 1) and table.loc[1, "n_anchor_genes"] == 0 and not table.loc[1, "identifiable"]
    assert consensus_programmes(pips, min_share=0.4).n_programmes == 2
    # the number of programmes at each cut: B stands apart from A at any cut below their distance (1.0)
    selection = result.selection
    assert list(selection.columns) == ["distance", "n_programmes", "n_groups", "silhouette"]
    assert (selection["n_programmes"] == 1).all() and (selection["n_groups"] == 2).all()


def test_a_refit_without_a_kept_programme_says_so_and_keeps_the_grouping(counts_adata):
    from scsparse.model import refit_consensus

    lone = [np.full((counts_adata.n_vars, 3), 0.01) for _ in range(3)]
    for r, pip in enumerate(lone):
        pip[5 * r : 5 * r + 5, 0] = 0.99  # each restart's programme its own: no group reaches min_share
    grouping = consensus_programmes(lone, min_share=0.5)
    assert grouping.n_programmes == 0
    SparseVAE.setup_anndata(counts_adata, layer="counts")
    with pytest.raises(InvalidInputError, match="No programme reproduces") as caught:
        refit_consensus(SparseVAE, counts_adata, grouping, seed=0, model_kwargs={}, train_kwargs={})
    assert caught.value.consensus is grouping


def test_consensus_rejects_bad_input():
    _, pips, loadings = _planted_restarts()
    with pytest.raises(InvalidInputError, match="at least 2 restarts"):
        consensus_programmes(pips[:1])
    with pytest.raises(InvalidInputError, match="differ in shape"):
        consensus_programmes([pips[0], pips[1][:, :3]])
    with pytest.raises(InvalidInputError, match="min_share"):
        consensus_programmes(pips, min_share=1.5)
    with pytest.raises(InvalidInputError, match="distance"):
        consensus_programmes(pips, distance=0.0)
    with pytest.raises(InvalidInputError, match="max_density must be a number"):
        consensus_programmes(pips, max_density="0.5")
    with pytest.raises(InvalidInputError, match="one W per restart"):
        consensus_programmes(pips, loadings[:2])
    with pytest.raises(InvalidInputError, match="name each of the 1 blocks"):
        consensus_programmes(pips, block_names=["a", "b"])


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


def test_consensus_model_is_a_refit_on_the_consensus_supports(consensus_fit, tmp_path):
    adata, model = consensus_fit
    assert model.is_trained_ and model.restarts_["seed"].tolist() == [5, 6] and model.seed == 5
    table = model.consensus_
    kept = table[table["kept"]]
    n_kept = len(kept)
    # one factor per kept programme, named in the table; every one active
    assert n_kept >= 1 and model.module.n_latent == n_kept and kept["factor"].tolist() == model.factor_names
    assert (table.loc[~table["kept"], "factor"] == "").all()
    assert model.active_factors() == model.factor_names
    # the supports held fixed through training: W zero outside them, p* the consensus share, never updated
    pip = model.get_inclusion_probabilities().to_numpy()
    w = model.get_loadings().to_numpy()
    assert (w[pip <= 0.5] == 0).all() and (np.abs(w[pip > 0.5]) > 0).all()
    assert model.module.fixed_support and model.init_params_["kwargs"]["module_kwargs"]["fixed_support"]
    assert (kept["n_genes"].to_numpy() == (pip > 0.5).sum(0)).all()
    before = model.module.prior.p_star.clone()
    model.module.em_update()
    assert torch.equal(model.module.prior.p_star, before)
    # the scvi-tools methods answer with the refit's weights
    z = model.get_latent_representation()
    assert z.shape == (adata.n_obs, n_kept)
    de = model.differential_expression(groupby="group", group1="a", batch_size=128)
    assert len(de) == adata.n_vars
    assert model.get_normalized_expression(n_samples=1).shape == adata.shape
    model.write_results(adata, key_added="cons")
    res = read_results(adata, "cons")
    pd.testing.assert_frame_equal(res.consensus.reset_index(drop=True), table.reset_index(drop=True))
    assert set(adata.uns["cons"]["consensus_members"]["programme"]) <= {"", *table["programme"]}
    # saved and loaded: the same weights, support, p* and tables
    model.save(tmp_path / "m", overwrite=True)
    back = SparseVAE.load(str(tmp_path / "m"), adata=adata)
    np.testing.assert_array_equal(back.get_inclusion_probabilities(), pip)
    np.testing.assert_array_equal(back.get_loadings(), w)
    assert back.module.fixed_support and torch.equal(back.module.decoder.prune_mask, model.module.decoder.prune_mask)
    pd.testing.assert_frame_equal(back.consensus_, table)
    np.testing.assert_allclose(back.get_latent_representation(), z, rtol=1e-5, atol=1e-6)
    # training the loaded refit further keeps the supports
    back.train(max_epochs=2, batch_size=64, enable_progress_bar=False)
    np.testing.assert_array_equal(back.get_inclusion_probabilities(), pip)
    assert (back.get_loadings().to_numpy()[pip <= 0.5] == 0).all()
    # written to h5ad and read back
    adata.write_h5ad(tmp_path / "a.h5ad")
    again = read_results(ad.read_h5ad(tmp_path / "a.h5ad"), "cons")
    assert again.consensus["factor"].tolist() == table["factor"].tolist()


def test_consensus_of_stored_restarts_equals_the_fit(consensus_fit):
    from scsparse.model import consensus_of

    adata, model = consensus_fit
    restarts = []
    for seed in (5, 6):
        fit = SparseVAE(adata, seed=seed, n_latent=4, n_hidden=16, mask_init="nmf")
        fit.train(max_epochs=30, batch_size=64, enable_progress_bar=False)
        restarts.append(fit)
    again = consensus_of(restarts, train_kwargs={"max_epochs": 30, "batch_size": 64, "enable_progress_bar": False})
    pd.testing.assert_frame_equal(again.consensus_, model.consensus_)
    np.testing.assert_array_equal(again.get_loadings(), model.get_loadings())


def test_report_and_plot_read_the_consensus(consensus_fit, tmp_path):
    adata, model = consensus_fit
    model.write_results(adata, key_added="cons", overwrite=True)
    text = scsparse.tl.fit_report(adata, key="cons")
    assert "### How reproducible each programme is" in text and "Consensus of 2 restarts" in text
    table = model.consensus_
    every = table[table["kept"] & (table["reproducibility"] == 1.0)]["factor"].tolist()
    line = next(line for line in text.splitlines() if line.startswith("- found by every restart"))
    assert f"{len(every)} of the {int(table['kept'].sum())} kept" in line
    assert all(f in line for f in every)
    scsparse.pl.reproducibility(adata, key="cons", save=tmp_path / "r.png", show=False)
    assert (tmp_path / "r.png").stat().st_size > 0
    left, right = scsparse.pl.consensus_selection(adata, key="cons", show=False)
    assert len(left.lines) >= 2 and right.get_yticklabels()[-1].get_text() == "outliers"
    assert len(right.collections) == len(adata.uns["cons"]["consensus_members"])
    single = SparseVAE(adata, n_latent=4, n_hidden=16, seed=0)
    single.train(max_epochs=2, enable_progress_bar=False)
    single.write_results(adata, key_added="single")
    assert "How reproducible" not in scsparse.tl.fit_report(adata, key="single")
    with pytest.raises(scsparse.pl.MissingResultsError, match="single fit"):
        scsparse.pl.reproducibility(adata, key="single", show=False)
    with pytest.raises(scsparse.pl.MissingResultsError, match="not a pooled consensus"):
        scsparse.pl.consensus_selection(adata, key="single", show=False)


def test_consensus_checks_its_arguments(counts_adata, monkeypatch):
    SparseVAE.setup_anndata(counts_adata, layer="counts")
    with pytest.raises(InvalidInputError, match="n_restarts"):
        SparseVAE.consensus(counts_adata, n_restarts=1)
    with pytest.raises(InvalidInputError, match="distinct"):
        SparseVAE.consensus(counts_adata, n_restarts=2, seeds=[3, 3])
    # the options are checked before any restart is fitted: a typo costs nothing
    fitted = []
    monkeypatch.setattr(SparseVAE, "train", lambda self, *a, **k: fitted.append(1))
    with pytest.raises(InvalidInputError, match=r"min_share must be in \(0, 1\]"):
        SparseVAE.consensus(counts_adata, n_restarts=3, min_share=1.5, n_latent=3)
    with pytest.raises(InvalidInputError, match="distance"):
        SparseVAE.consensus(counts_adata, n_restarts=3, distance=3.0, n_latent=3)
    with pytest.raises(InvalidInputError, match="seeds must be integers"):
        SparseVAE.consensus(counts_adata, n_restarts=2, seeds=[0.5, 1.7], n_latent=3)
    assert fitted == []
    monkeypatch.undo()
    from scsparse.model import consensus_of

    untrained = [SparseVAE(counts_adata, n_latent=3, n_hidden=8, seed=s) for s in range(2)]
    with pytest.raises(InvalidInputError, match="at least 2 trained restarts"):
        consensus_of(untrained[:1])
    with pytest.raises(InvalidInputError, match="must be trained"):
        consensus_of(untrained)
    other = SparseVAE(counts_adata, n_latent=4, n_hidden=8, seed=0)
    with pytest.raises(InvalidInputError, match="same factors"):
        consensus_of([untrained[0], other])


def test_blocks_are_grouped_apart():
    # two blocks of two factors (a multi-study model's shared and one study's): every restart finds programme A
    # (genes 0-9) and programme B (genes 10-19); restarts 0-2 put A in the shared block (column 0), restart 3 in
    # the study's (column 2), so within blocks three restarts of four contribute to the shared A
    def restart(a_column: int) -> np.ndarray:
        pip = np.full((40, 4), 0.01)
        pip[0:10, a_column] = 0.99
        pip[10:20, 3] = 0.99
        return pip

    pips = [restart(0), restart(0), restart(0), restart(2)]
    loadings = [np.where(p > 0.5, 1.0 + np.linspace(1, 0, 40)[:, None], 0.0) for p in pips]
    together = consensus_programmes(pips, loadings).table
    assert together["reproducibility"].tolist() == [1.0, 1.0]  # all together, restart 3's column 2 stands in
    apart = consensus_programmes(pips, loadings, blocks=[[0, 1], [2, 3]], block_names=["shared", "stim"])
    table = apart.table.set_index("programme")
    assert apart.blocks == ["shared", "stim"] and apart.block_counts(["shared", "stim", "ctrl"]) == {
        "shared": 1, "stim": 1, "ctrl": 0,
    }  # fmt: skip
    assert table.loc["shared_0", "reproducibility"] == 0.75 and table.loc["stim_0", "reproducibility"] == 1.0
    # restart 3's A in the study's block: alone there, an outlier
    lone = apart.members[(apart.members["restart"] == 3) & (apart.members["block"] == "stim")]
    assert sorted(lone["factor"]) == ["factor_2", "factor_3"] and lone.set_index("factor").loc["factor_2", "outlier"]
    assert (apart.pip[0:10, 0] == 1.0).all() and (apart.pip[10:20, 1] == 1.0).all()
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
    kept = table[table["kept"]]
    # the refit has one factor per kept programme of each block, the shared ones first, every one active
    assert kept["factor"].tolist() == model.factor_names == model.active_factors()
    assert model.module.n_latent_shared == int((kept["block"] == "shared").sum())
    per_study = dict(zip(model.studies, model.module.n_latent_specific, strict=True))
    assert per_study == {s: int((kept["block"] == s).sum()) for s in ("ctrl", "stim")}
    assert all(name.startswith("shared") for name in kept.loc[kept["block"] == "shared", "factor"])
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
