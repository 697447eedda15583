"""Keys a file can hold, checks that follow the data trained on, divergence stopped, precisions that keep float32,
a fit's keys replaced as a set, and the smaller failures of the same kind (unused studies, damaged model files).
"""

from __future__ import annotations

import anndata as ad
import numpy as np
import pandas as pd
import pytest
import torch

import scsparse
from scsparse.model import InvalidInputError, MultiStudySparseVAE, SparseVAE
from scsparse.results import data_hash

FAST = {"n_hidden": 16}
QUIET = {"enable_progress_bar": False}


@pytest.fixture
def adata(counts_factory):
    return counts_factory(n_obs=120, n_vars=30)


def _trained(adata, **train):
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, n_latent=3, **FAST)
    model.train(max_epochs=1, **QUIET, **train)
    return model


# ------------------------------------------------------------------ keys a file can hold
@pytest.mark.parametrize("key", ["a/b", "/", ".", "a\x00b"])
def test_key_added_a_file_cannot_hold_is_refused_everywhere(adata, key):
    model = _trained(adata)
    with pytest.raises(InvalidInputError, match="key_added"):
        model.write_results(adata, key_added=key)
    with pytest.raises(InvalidInputError, match="key_added"):
        model.result_keys(key)
    before = set(adata.uns)
    with pytest.raises(InvalidInputError, match="key_added"):
        scsparse.tl.sparse_vae(adata, layer="counts", n_latent=3, max_epochs=1, key_added=key, model_kwargs=FAST)
    with pytest.raises(InvalidInputError, match="key_added"):
        scsparse.tl.sparse_vae(adata, layer="counts", n_latent=3, max_epochs=1, key_added=key, n_restarts=2)
    assert set(adata.uns) == before


def test_a_slash_in_key_added_names_the_fix(adata):
    model = _trained(adata)
    with pytest.raises(InvalidInputError, match=r"contains '/'.*'a_b'"):
        model.write_results(adata, key_added="a/b")


# ------------------------------------------------------------------ data checks that follow the data
def test_counts_replaced_after_setup_are_checked_when_the_model_is_built(adata):
    SparseVAE.setup_anndata(adata, layer="counts")
    adata.layers["counts"] = adata.layers["counts"] * 0.5
    with pytest.raises(InvalidInputError, match="non-integer"):
        SparseVAE(adata, n_latent=3, **FAST)


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (lambda c: setattr(c, "data", -c.data), "negative"),
        (lambda c: c.data.__setitem__(0, np.nan), "NaN"),
        (lambda c: c.data.__setitem__(0, 0.5), "non-integer"),
    ],
)
def test_counts_changed_in_place_before_training_give_our_error(adata, spoil, message):
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, n_latent=3, **FAST)
    spoil(adata.layers["counts"])
    with pytest.raises(InvalidInputError, match=message):
        model.train(max_epochs=1, **QUIET)


def test_the_data_hash_is_that_of_the_data_trained_on(adata):
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, n_latent=3, **FAST)
    counts = adata.layers["counts"]
    counts.data[:] = counts.data * 2  # still counts, changed in place after set-up
    model.train(max_epochs=1, **QUIET)
    model.write_results(adata)
    assert adata.uns["sparsevae"]["data_hash"] == data_hash(adata, "counts")


def test_new_cells_are_checked_again_when_their_counts_are_replaced(adata, counts_factory):
    model = _trained(adata)
    query = counts_factory(n_obs=60, n_vars=30, seed=1)
    model.get_latent_representation(query)
    query.layers["counts"] = query.layers["counts"] * 0.5
    with pytest.raises(InvalidInputError, match="non-integer"):
        model.get_latent_representation(query)
    spoiled = query.layers["counts"].copy()
    spoiled.data[:] = np.round(spoiled.data * 2)
    spoiled.data[0] = np.nan
    query.layers["counts"] = spoiled
    with pytest.raises(InvalidInputError, match="NaN"):
        model.get_latent_representation(query)


def test_float16_counts_are_refused_with_the_fix(adata):
    adata.layers["half"] = adata.layers["counts"].toarray().astype(np.float16)
    with pytest.raises(InvalidInputError, match=r"float16.*astype\('float32'\)"):
        SparseVAE.setup_anndata(adata, layer="half")


# ------------------------------------------------------------------ divergence
@pytest.mark.parametrize("train", [{"lr": 1e3}, {"plan_kwargs": {"lr": 1e3}}, {"lr": 30.0}])
def test_a_diverging_fit_stops_with_the_epoch_and_the_learning_rate(adata, train):
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, n_latent=3, seed=0, **FAST)
    with pytest.raises(InvalidInputError, match=r"Training diverged in epoch \d+: .*lower lr \(it was "):
        model.train(max_epochs=5, batch_size=32, **QUIET, **train)


def test_a_diverged_fit_is_not_written_by_the_tool(adata):
    before = {attr: set(getattr(adata, attr)) for attr in ("obsm", "varm", "uns")}
    with pytest.raises(InvalidInputError, match="diverged"):
        scsparse.tl.sparse_vae(
            adata, layer="counts", n_latent=3, max_epochs=3, model_kwargs=FAST, train_kwargs={"lr": 1e3, **QUIET}
        )
    assert {attr: set(getattr(adata, attr)) for attr in ("obsm", "varm", "uns")} == before


def test_a_sound_fit_is_not_taken_for_a_diverged_one(adata):
    _trained(adata, lr=1.0)  # a large but workable rate


@pytest.mark.parametrize("lr", [-1, 0, float("nan"), "1e-3"])
def test_plan_kwargs_lr_is_checked_like_lr(adata, lr):
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, n_latent=3, **FAST)
    with pytest.raises(InvalidInputError, match=r"plan_kwargs\['lr'\] must be a number > 0"):
        model.train(max_epochs=1, plan_kwargs={"lr": lr}, **QUIET)


# ------------------------------------------------------------------ precision
@pytest.mark.parametrize("precision", ["16-true", "bf16-true", "64-true", 64, "64"])
def test_true_precisions_are_refused_before_training(adata, precision):
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, n_latent=3, **FAST)
    with pytest.raises(InvalidInputError, match="bf16-mixed"):
        model.train(max_epochs=1, precision=precision, **QUIET)
    assert not model.is_trained_


def test_mixed_precision_still_trains(adata):
    model = _trained(adata, precision="bf16-mixed")
    assert model.get_latent_representation().dtype == np.float32


def test_a_float64_torch_default_is_refused_with_the_fix(adata):
    SparseVAE.setup_anndata(adata, layer="counts")
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with pytest.raises(InvalidInputError, match=r"torch.set_default_dtype\(torch.float32\)"):
            SparseVAE(adata, n_latent=3, **FAST)
    finally:
        torch.set_default_dtype(previous)


# ------------------------------------------------------------------ a fit's keys as a set
def _studies(adata, names):
    adata.obs["study"] = np.asarray(names)[np.arange(adata.n_obs) % len(names)]


def test_a_single_study_fit_over_a_multistudy_one_removes_all_its_keys(adata):
    _studies(adata, ["s1", "s2"])
    common = {"layer": "counts", "max_epochs": 1, "key_added": "x", "model_kwargs": FAST, "train_kwargs": QUIET}
    scsparse.tl.multistudy_sparse_vae(adata, "study", n_latent_shared=2, n_latent_specific=1, **common)
    assert "X_x_shared" in adata.obsm and "x_W_s1" in adata.varm
    scsparse.tl.sparse_vae(adata, n_latent=3, overwrite=True, **common)
    assert sorted(k for k in adata.obsm if k.startswith("X_x")) == ["X_x"]
    assert sorted(k for k in adata.varm if k.startswith("x_")) == ["x_W", "x_pip"]


def test_write_results_over_a_fit_with_more_studies_removes_the_old_study_keys(adata):
    _studies(adata, ["s1", "s2", "s3"])
    MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts", min_cells_per_study=10)
    old = MultiStudySparseVAE(adata, n_latent_shared=2, n_latent_specific=1, **FAST)
    old.train(max_epochs=1, **QUIET)
    old.write_results(adata)
    back = ad.AnnData(adata.X, obs=adata.obs[[]], var=adata.var[[]], obsm=dict(adata.obsm), varm=dict(adata.varm))
    back.uns["mssvae"] = adata.uns["mssvae"]
    two = adata.copy()
    _studies(two, ["s1", "s2"])
    MultiStudySparseVAE.setup_anndata(two, study_key="study", layer="counts")
    new = MultiStudySparseVAE(two, n_latent_shared=2, n_latent_specific=1, **FAST)
    new.train(max_epochs=1, **QUIET)
    new.write_results(two, overwrite=True)
    assert "mssvae_W_s3" not in two.varm and "mssvae_pip_s3" not in two.varm
    assert {"mssvae_W_s1", "mssvae_W_s2", "mssvae_W_shared"} <= set(two.varm)


def test_overwrite_keeps_the_users_keys_that_are_not_a_fits(adata):
    adata.obsm["X_sparsevae_mine"] = np.zeros((adata.n_obs, 1))
    scsparse.tl.sparse_vae(adata, layer="counts", n_latent=3, max_epochs=1, model_kwargs=FAST, train_kwargs=QUIET)
    scsparse.tl.sparse_vae(
        adata, layer="counts", n_latent=2, max_epochs=1, overwrite=True, model_kwargs=FAST, train_kwargs=QUIET
    )
    assert "X_sparsevae_mine" in adata.obsm and adata.obsm["X_sparsevae"].shape[1] == 2


# ------------------------------------------------------------------ small items
def test_an_unused_study_category_is_refused_with_the_fix(adata):
    adata.obs["study"] = pd.Categorical(np.where(np.arange(adata.n_obs) % 2, "s1", "s2"), categories=["s1", "s2", "s3"])
    with pytest.raises(InvalidInputError, match=r"categories without cells: \['s3'\].*remove_unused_categories"):
        MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts")


def test_a_truncated_model_file_is_named_as_damaged(adata, tmp_path):
    model = _trained(adata)
    model.save(tmp_path / "m")
    path = tmp_path / "m" / "model.pt"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    for given in (adata, None):
        with pytest.raises(InvalidInputError, match=r"model.pt cannot be read as a saved model.*damaged"):
            SparseVAE.load(str(tmp_path / "m"), adata=given)


def test_latent_library_size_is_the_observed_one(adata):
    model = _trained(adata)
    sizes = model.get_latent_library_size()
    assert sizes.shape == (adata.n_obs, 1)
    np.testing.assert_allclose(sizes.ravel(), np.asarray(adata.layers["counts"].sum(1)).ravel(), rtol=1e-6)
    np.testing.assert_allclose(model.get_latent_library_size(indices=[0, 2]).ravel(), sizes[[0, 2]].ravel())


def test_an_interrupted_save_leaves_the_earlier_model_whole(adata, tmp_path, monkeypatch):
    model = _trained(adata)
    folder = tmp_path / "m"
    model.save(str(folder))
    (folder / "notes.txt").write_text("mine")
    before = (folder / "model.pt").read_bytes()
    real_save = torch.save

    def interrupted(obj, f, *args, **kwargs):
        real_save(obj, f, *args, **kwargs)
        with open(f, "r+b") as fh:  # a half-written file, then Ctrl+C
            fh.truncate(len(before) // 3)
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        model.save(str(folder), overwrite=True)
    monkeypatch.setattr(torch, "save", real_save)
    assert (folder / "model.pt").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]
    model.save(str(folder), overwrite=True)
    assert (folder / "notes.txt").read_text() == "mine"
    SparseVAE.load(str(folder), adata=adata)
    with pytest.raises(ValueError, match="already exists"):
        model.save(str(folder))


def test_cells_of_an_unseen_batch_get_the_way_to_map_them(adata, tmp_path):
    SparseVAE.setup_anndata(adata, layer="counts", batch_key="batch")
    model = SparseVAE(adata, n_latent=3, **FAST)
    model.train(max_epochs=1, **QUIET)
    model.save(str(tmp_path / "m"))
    other = adata.copy()
    other.obs["batch"] = "c"
    with pytest.raises(InvalidInputError, match=r"category 'c'.*load_query_data"):
        SparseVAE.load(str(tmp_path / "m"), adata=other)
    with pytest.raises(InvalidInputError, match=r"category 'c'.*prepare_query_anndata"):
        model.get_latent_representation(other)


def test_a_missing_column_is_not_matched_to_scvi_tools_own_columns(adata):
    SparseVAE.setup_anndata(adata, layer="counts")
    copy = adata.copy()
    del copy.obs["batch"]
    with pytest.raises(InvalidInputError) as info:
        SparseVAE.setup_anndata(copy, layer="counts", batch_key="batch")
    assert "_scvi" not in str(info.value)


def test_counts_only_in_raw_get_the_way_to_a_layer(adata):
    raw_holder = adata.copy()
    raw_holder.X = raw_holder.layers.pop("counts")
    raw_holder.raw = raw_holder
    raw_holder.X = np.log1p(raw_holder.X.toarray())
    SparseVAE.setup_anndata(raw_holder)
    with pytest.raises(InvalidInputError, match=r"adata.raw\[:, adata.var_names\].X"):
        SparseVAE(raw_holder, n_latent=3, **FAST)
    raw_holder.X = None
    with pytest.raises(InvalidInputError, match=r"empty \(None\).*adata.raw"):
        SparseVAE.setup_anndata(raw_holder)


def test_transform_batch_with_a_single_batch_says_so(adata):
    adata.obs["one"] = "b1"
    SparseVAE.setup_anndata(adata, layer="counts", batch_key="one")
    model = SparseVAE(adata, n_latent=3, **FAST)
    model.train(max_epochs=1, **QUIET)
    with pytest.raises(InvalidInputError, match=r"at least two batches.*single category \('b1'\)"):
        model.get_normalized_expression(transform_batch="b1")


def test_a_trained_model_pickles_and_copies(adata):
    import copy
    import pickle

    model = _trained(adata)
    clone = pickle.loads(pickle.dumps(model._training_scan))
    assert clone.data_hash == model._training_scan.data_hash and not clone.describes(adata, "counts")
    assert model._training_scan.describes(adata, "counts")
    copy.deepcopy(model)
