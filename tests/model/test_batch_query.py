"""SparseVAE.load_query_data: new batches on a fixed reference (scArches-style), reference parameters bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import scsparse
from scsparse.model import InvalidInputError, SparseVAE

TRAIN = {"batch_size": 64, "enable_progress_bar": False}


def _assert_reference_unchanged(query: SparseVAE, reference: SparseVAE) -> None:
    """Every reference parameter and buffer in the query model, bit for bit (batch columns of the old codes)."""
    ref_state, state = reference.module.state_dict(), query.module.state_dict()
    n_ref = reference.module.n_batch
    for name, value in ref_state.items():
        if name == "decoder.covariates.weight":
            assert torch.equal(state[name][:, :n_ref], value[:, :n_ref]), name
        else:
            assert torch.equal(state[name], value), name


def test_query_batches_train_only_their_own_weights(counts_factory, tmp_path):
    adata = counts_factory(n_obs=240, n_vars=30)
    adata.obs["batch"] = np.asarray(["a", "b", "c"])[np.arange(adata.n_obs) % 3]
    ref_cells = adata[adata.obs["batch"] != "c"].copy()
    query_cells = adata[adata.obs["batch"] == "c"].copy()
    SparseVAE.setup_anndata(ref_cells, layer="counts", batch_key="batch")
    reference = SparseVAE(ref_cells, n_latent=3, n_hidden=16, seed=0)
    reference.train(max_epochs=20, **TRAIN)
    before = {k: v.clone() for k, v in reference.module.state_dict().items()}

    query = SparseVAE.load_query_data(query_cells, reference)
    assert query.module.n_batch == 3 and query.module.n_batch_frozen == 2
    initial_new_column = query.module.decoder.covariates.weight[:, 2].clone()
    query.train(max_epochs=10, **TRAIN)
    _assert_reference_unchanged(query, reference)
    assert all(torch.equal(reference.module.state_dict()[k], v) for k, v in before.items())  # reference untouched
    assert not torch.equal(query.module.decoder.covariates.weight[:, 2], initial_new_column)  # the new batch learnt
    # the query cells' factors are the reference's programmes: the reference's encoder, which ignores the batch
    as_known = query_cells.copy()
    as_known.obs["batch"] = "a"
    np.testing.assert_array_equal(query.get_latent_representation(), reference.get_latent_representation(as_known))
    query.save(tmp_path / "q", save_anndata=False)
    back = SparseVAE.load(tmp_path / "q", adata=query_cells)
    assert back.module.n_batch_frozen == 2
    back.train(max_epochs=1, **TRAIN)  # the freezing survives a save and load
    _assert_reference_unchanged(back, reference)


def test_a_stimulated_batch_on_a_control_reference():
    adata = scsparse.data.kang_pbmc()
    is_control = (adata.obs["condition"] == "control").to_numpy()
    counts = adata.layers["counts"]
    in_both = (np.asarray(counts[is_control].sum(0)).ravel() > 0) & (np.asarray(counts[~is_control].sum(0)).ravel() > 0)
    control, stimulated = adata[is_control, in_both].copy(), adata[~is_control, in_both].copy()
    SparseVAE.setup_anndata(control, layer="counts", batch_key="condition")  # one batch: no batch input
    reference = SparseVAE(control, n_latent=10, n_hidden=32, seed=0)
    reference.train(max_epochs=20, batch_size=128, enable_progress_bar=False)
    query = SparseVAE.load_query_data(stimulated, reference)
    query.train(max_epochs=20, batch_size=128, enable_progress_bar=False)
    _assert_reference_unchanged(query, reference)
    as_control = stimulated.copy()
    as_control.obs["condition"] = "control"  # the reference's encoder ignores the batch
    np.testing.assert_array_equal(query.get_latent_representation(), reference.get_latent_representation(as_control))
    # the stimulated batch's own weights carry the interferon response the reference never saw
    genes = ["ISG15", "IFIT1", "IFIT3"]
    as_query = query.get_normalized_expression(gene_list=genes, return_numpy=True)
    as_control = reference.get_normalized_expression(as_control, gene_list=genes, return_numpy=True)
    assert (as_query.mean(0) > 1.3 * as_control.mean(0)).all()


def test_query_errors_name_the_fix(counts_factory):
    adata = counts_factory(n_obs=120, n_vars=20)
    adata.obs["batch"] = np.asarray(["a", "b", "c"])[np.arange(adata.n_obs) % 3]
    ref, query = adata[adata.obs["batch"] != "c"].copy(), adata[adata.obs["batch"] == "c"].copy()
    plain = ref.copy()
    SparseVAE.setup_anndata(plain, layer="counts")
    no_batch = SparseVAE(plain, n_latent=2, n_hidden=8)
    no_batch.train(max_epochs=1, **TRAIN)
    with pytest.raises(InvalidInputError, match="without a batch_key"):
        SparseVAE.load_query_data(query.copy(), no_batch)
    SparseVAE.setup_anndata(ref, layer="counts", batch_key="batch")
    untrained = SparseVAE(ref, n_latent=2, n_hidden=8)
    with pytest.raises(InvalidInputError, match="not trained"):
        SparseVAE.load_query_data(query.copy(), untrained)
    seeing = SparseVAE(ref, n_latent=2, n_hidden=8, encode_covariates=True)
    seeing.train(max_epochs=1, **TRAIN)
    with pytest.raises(InvalidInputError, match="encode_covariates=False"):
        SparseVAE.load_query_data(query.copy(), seeing)
    reference = SparseVAE(ref, n_latent=2, n_hidden=8)
    reference.train(max_epochs=1, **TRAIN)
    with pytest.raises(InvalidInputError, match="already in the reference"):
        SparseVAE.load_query_data(ref.copy(), reference)
    shuffled = query[:, ::-1].copy()
    with pytest.raises(InvalidInputError, match="prepare_query_anndata"):
        SparseVAE.load_query_data(shuffled, reference)
    fixed = SparseVAE.prepare_query_anndata(shuffled[:, 2:].copy(), reference, inplace=False)  # 2 genes missing
    assert list(fixed.var_names) == list(ref.var_names)
    assert fixed.layers["counts"][:, -2:].nnz == 0
    np.testing.assert_array_equal(fixed.layers["counts"][:, :-2].toarray(), query.layers["counts"][:, :-2].toarray())
    mapped = SparseVAE.load_query_data(fixed, reference)
    with pytest.raises(InvalidInputError, match="weight_decay=0"):
        mapped.train(max_epochs=1, plan_kwargs={"weight_decay": 1e-6}, **TRAIN)


def test_prepare_query_anndata_has_scvi_tools_parameters_and_semantics(counts_factory, tmp_path):
    """scvi-tools' call sequence works: prepare in place, then load_query_data; nothing of the query is dropped."""
    adata = counts_factory(n_obs=160, n_vars=30)
    adata.obs["batch"] = np.where(np.arange(adata.n_obs) < 100, "ref", "new")
    ref, query = adata[:100].copy(), adata[100:].copy()
    SparseVAE.setup_anndata(ref, layer="counts", batch_key="batch")
    reference = SparseVAE(ref, n_latent=2, n_hidden=8, seed=0)
    reference.train(max_epochs=1, **TRAIN)
    reference.save(tmp_path / "reference", overwrite=True)

    query = query[:, ::-1][:, 3:].copy()  # genes reversed, three of the reference's missing
    query.var["symbol"] = [f"S{g}" for g in query.var_names]
    query.obsm["X_pca"] = np.arange(query.n_obs * 2, dtype=float).reshape(-1, 2)
    query.varm["loading"] = np.arange(query.n_vars, dtype=float)[:, None]
    query.uns["note"] = "kept"
    genes = SparseVAE.prepare_query_anndata(query, reference, return_reference_var_names=True)
    assert list(genes) == list(ref.var_names) and query.n_vars == 27  # nothing changed

    copy = SparseVAE.prepare_query_anndata(query, str(tmp_path / "reference"), inplace=False)  # a saved folder
    assert query.n_vars == 27 and list(copy.var_names) == list(ref.var_names)
    # where scvi-tools' own differs: a pathlib.Path folder, float32 counts kept, a repeated gene name named
    from_path = SparseVAE.prepare_query_anndata(query, tmp_path / "reference", inplace=False)
    np.testing.assert_array_equal(from_path.layers["counts"].toarray(), copy.layers["counts"].toarray())
    assert copy.layers["counts"].dtype == np.float32
    repeated = query.copy()
    repeated.var_names = [query.var_names[0], *query.var_names[:-1]]
    with pytest.raises(InvalidInputError, match="more than once"):
        SparseVAE.prepare_query_anndata(repeated, reference, inplace=False)

    assert SparseVAE.prepare_query_anndata(query, reference) is None  # in place, as scvi-tools
    assert list(query.var_names) == list(ref.var_names)
    kept = query.var_names[:-3]
    np.testing.assert_array_equal(
        query[:, kept].layers["counts"].toarray(), adata[100:, kept].layers["counts"].toarray()
    )
    assert query[:, query.var_names[-3:]].layers["counts"].nnz == 0
    assert list(query.var["symbol"].iloc[:2]) == [f"S{g}" for g in ref.var_names[:2]]
    assert query.var["symbol"].iloc[-3:].isna().all()
    assert np.isnan(query.varm["loading"][-3:]).all() and query.varm["loading"][0, 0] == 26.0
    assert query.uns["note"] == "kept" and query.obsm["X_pca"].shape == (60, 2)
    mapped = SparseVAE.load_query_data(query, reference)
    mapped.train(max_epochs=1, **TRAIN)
    assert mapped.get_latent_representation().shape == (60, 2)
