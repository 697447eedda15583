from __future__ import annotations

import anndata as ad
import numpy as np
import pandas as pd
import pytest

import scsparse
from scsparse.model import InvalidInputError, SparseVAE

FAST = {"n_hidden": 16}
TRAIN = {"batch_size": 64, "enable_progress_bar": False}


def _fit(adata, **kwargs):
    kwargs.setdefault("max_epochs", 2)
    return scsparse.tl.sparse_vae(adata, n_latent=4, model_kwargs=FAST, train_kwargs=TRAIN, **kwargs)


def _snapshot(adata: ad.AnnData) -> dict:
    return {
        "X": adata.X.toarray().copy(),
        "counts": adata.layers["counts"].toarray().copy(),
        "layers": list(adata.layers),
        "obs": adata.obs.copy(),
        "var": adata.var.copy(),
        "uns": set(adata.uns),
        "obsm": set(adata.obsm),
        "varm": set(adata.varm),
    }


def test_writes_documented_keys_and_nothing_else(counts_factory):
    adata = counts_factory(n_obs=150)
    before = _snapshot(adata)
    model = _fit(adata, layer="counts", batch_key="batch", seed=1)
    assert isinstance(model, SparseVAE)
    assert model.adata is not adata

    assert adata.obsm["X_sparsevae"].shape == (adata.n_obs, 4)
    assert adata.varm["sparsevae_W"].shape == (adata.n_vars, 4)
    assert adata.varm["sparsevae_pip"].shape == (adata.n_vars, 4)
    uns = adata.uns["sparsevae"]
    for field in ("factor_names", "active", "active_factors", "eta", "top_genes", "anchor_genes", "seed"):
        assert field in uns
    assert uns["seed"] == 1
    assert set(adata.obsm) - before["obsm"] == {"X_sparsevae"}
    assert set(adata.varm) - before["varm"] == {"sparsevae_W", "sparsevae_pip"}
    assert set(adata.uns) - before["uns"] == {"sparsevae"}

    # nothing else changed: no scvi-tools registration on the user's object
    assert not any(k.startswith("_scvi") for k in adata.uns)
    assert not any(c.startswith("_scvi") for c in adata.obs.columns)
    np.testing.assert_array_equal(adata.X.toarray(), before["X"])
    np.testing.assert_array_equal(adata.layers["counts"].toarray(), before["counts"])
    assert list(adata.layers) == before["layers"]
    pd.testing.assert_frame_equal(adata.obs, before["obs"])
    pd.testing.assert_frame_equal(adata.var, before["var"])
    # the model's object is the one registered, and it shares the user's matrices instead of copying them
    assert "_scvi_uuid" in model.adata.uns
    assert model.adata.X is adata.X and model.adata.layers["counts"] is adata.layers["counts"]


def test_sparse_vae_trains_a_backed_anndata_in_place_of_copying_it(counts_factory, tmp_path):
    counts_factory(n_obs=150).write_h5ad(tmp_path / "cells.h5ad")
    adata = ad.read_h5ad(tmp_path / "cells.h5ad", backed="r")
    model = _fit(adata)
    assert model.adata.isbacked and "_scvi_uuid" in model.adata.uns
    assert adata.obsm["X_sparsevae"].shape == (150, 4) and "sparsevae" in adata.uns
    assert not any(k.startswith("_scvi") for k in adata.uns)
    assert not any(c.startswith("_scvi") for c in adata.obs.columns)
    with pytest.raises(InvalidInputError, match="view of a backed AnnData"):
        _fit(adata[:100], key_added="subset")


def test_refuses_to_overwrite_then_overwrites(counts_factory, tmp_path):
    adata = counts_factory(n_obs=150)
    _fit(adata, layer="counts")
    first = adata.obsm["X_sparsevae"].copy()
    with pytest.raises(InvalidInputError, match="overwrite=True"):
        _fit(adata, layer="counts", seed=3)
    np.testing.assert_array_equal(adata.obsm["X_sparsevae"], first)
    _fit(adata, layer="counts", seed=3, overwrite=True)
    assert adata.uns["sparsevae"]["seed"] == 3
    # a second key next to the first is fine, and the result writes to h5ad
    _fit(adata, layer="counts", key_added="svae2")
    assert "X_svae2" in adata.obsm and "X_sparsevae" in adata.obsm
    adata.write_h5ad(tmp_path / "r.h5ad")
    back = ad.read_h5ad(tmp_path / "r.h5ad")
    assert list(back.uns["svae2"]["factor_names"]) == [f"factor_{k}" for k in range(4)]


def test_copy_is_deprecated_and_still_returns_new_object(counts_factory):
    adata = counts_factory(n_obs=150)
    before = _snapshot(adata)
    with pytest.warns(FutureWarning, match=r"copy=True\) is deprecated.*adata.copy\(\)"):
        out, model = _fit(adata, layer="counts", copy=True)
    assert out is not adata
    assert isinstance(model, SparseVAE)
    assert "X_sparsevae" in out.obsm and "sparsevae" in out.uns
    assert "X_sparsevae" not in adata.obsm and set(adata.uns) == before["uns"]
    assert not any(k.startswith("_scvi") for k in out.uns)


def test_bad_input_fails_before_training(counts_factory):
    adata = counts_factory(n_obs=150)
    with pytest.raises(InvalidInputError, match="nope"):
        _fit(adata, layer="nope")
    with pytest.raises(InvalidInputError):
        scsparse.tl.sparse_vae(np.ones((3, 3)))  # type: ignore[arg-type]
    assert scsparse.tl.result_keys("k") == {"obsm": ["X_k"], "varm": ["k_W", "k_pip"], "uns": ["k"]}


def _fit_ms(adata, **kwargs):
    kwargs.setdefault("max_epochs", 2)
    return scsparse.tl.multistudy_sparse_vae(
        adata, "study", n_latent_shared=3, model_kwargs=FAST, train_kwargs=TRAIN, **kwargs
    )


def _with_studies(counts_factory):
    adata = counts_factory(n_obs=150)
    adata.obs["study"] = np.where(np.arange(adata.n_obs) < 75, "ctrl", "IFN-b stim")
    return adata


def test_multistudy_writes_documented_keys_and_nothing_else(counts_factory):
    adata = _with_studies(counts_factory)
    before = _snapshot(adata)
    model = _fit_ms(adata, layer="counts", n_latent_specific={"IFN-b stim": 2}, seed=2)
    assert isinstance(model, scsparse.model.MultiStudySparseVAE) and model.adata is not adata

    keys = scsparse.tl.result_keys("mssvae", studies=["IFN-b stim", "ctrl"])
    assert keys == model.result_keys()
    assert set(adata.obsm) - before["obsm"] == set(keys["obsm"])
    assert set(adata.varm) - before["varm"] == set(keys["varm"])
    assert set(adata.uns) - before["uns"] == {"mssvae"}
    # the study name with a space and a dash: a key-safe version, recorded in uns
    assert "mssvae_W_IFN-b_stim" in adata.varm and adata.uns["mssvae"]["study_keys"]["IFN-b stim"] == "IFN-b_stim"
    assert adata.obsm["X_mssvae_shared"].shape == (150, 3)
    specific = adata.obsm["X_mssvae_specific"]
    assert specific.shape == (150, 2)
    assert np.all(specific[(adata.obs["study"] == "ctrl").to_numpy()] == 0)  # ctrl has no specific block
    assert adata.uns["mssvae"]["seed"] == 2
    # downstream tools read it under its key
    names = list(adata.uns["mssvae"]["factor_names"])
    table = scsparse.tl.top_genes(adata, key="mssvae", factors=names, pip_threshold=0.0, direction=False)
    assert len(table) and set(table["factor"]) <= set(adata.uns["mssvae"]["factor_names"])

    assert not any(k.startswith("_scvi") for k in adata.uns)
    assert not any(c.startswith("_scvi") for c in adata.obs.columns)
    pd.testing.assert_frame_equal(adata.obs, before["obs"])
    np.testing.assert_array_equal(adata.layers["counts"].toarray(), before["counts"])


def test_multistudy_refuses_taken_keys_before_training(counts_factory, monkeypatch):
    adata = _with_studies(counts_factory)
    out = adata.copy()
    _fit_ms(out, layer="counts")
    assert "mssvae" not in adata.uns and "mssvae" in out.uns
    adata.varm["mssvae_pip_ctrl"] = np.zeros((adata.n_vars, 1))

    def no_training(*args, **kwargs):
        raise AssertionError("trained although the results could not be written")

    monkeypatch.setattr(scsparse.model.MultiStudySparseVAE, "train", no_training)
    with pytest.raises(InvalidInputError, match="mssvae_pip_ctrl"):
        _fit_ms(adata, layer="counts")
    np.testing.assert_array_equal(adata.varm["mssvae_pip_ctrl"], 0)
    with pytest.raises(InvalidInputError, match="nope"):
        scsparse.tl.multistudy_sparse_vae(adata, "nope", layer="counts")
    one = adata[adata.obs["study"] == "ctrl"].copy()
    with pytest.raises(InvalidInputError, match="two"):
        scsparse.tl.multistudy_sparse_vae(one, "study", layer="counts")
