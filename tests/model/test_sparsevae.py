import warnings
from pathlib import Path

import anndata as ad
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch

from scsparse.model import InvalidInputError, NoActiveFactorWarning, SparseVAE
from scsparse.nn import ssl_inclusion_logits

SMALL = {"n_latent": 4, "n_hidden": 16}


def fit(adata, epochs=2, seed=0, **kwargs):
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, seed=seed, **{**SMALL, **kwargs})
    model.train(max_epochs=epochs, batch_size=64, enable_progress_bar=False)
    return model


@pytest.mark.parametrize("likelihood", ["nb", "zinb", "poisson", "multinomial", "normal"])
def test_each_likelihood_trains_and_gives_finite_results(likelihood, counts_factory):
    adata = counts_factory(n_obs=120, n_vars=30)
    model = fit(adata, gene_likelihood=likelihood)
    z = model.get_latent_representation()
    assert z.shape == (120, 4) and np.isfinite(z).all()
    assert np.isfinite(model.history["elbo_train"].to_numpy(dtype=float)).all()
    nll = model.get_heldout_nll(n_mc_samples=5)
    assert np.isfinite(nll) and nll > 0
    expr = model.get_normalized_expression(n_samples=2)
    assert expr.shape == (120, 30)
    if likelihood != "normal":
        np.testing.assert_allclose(expr.sum(1), 1.0, rtol=1e-4)


def test_heldout_nll_is_the_same_every_time_and_leaves_the_global_generators_alone(counts_factory):
    model = fit(counts_factory(n_obs=120, n_vars=30))
    torch.manual_seed(123)
    before = torch.get_rng_state()
    first = model.get_heldout_nll(n_mc_samples=5)
    assert torch.equal(torch.get_rng_state(), before)
    torch.rand(7)  # whatever the global generator has drawn meanwhile
    assert model.get_heldout_nll(n_mc_samples=5) == first


def test_normalized_expression_of_some_genes_and_in_one_batch(counts_factory):
    plain = fit(counts_factory(n_obs=120, n_vars=30))
    full = plain.get_normalized_expression(library_size=1e4)
    some = plain.get_normalized_expression(library_size=1e4, gene_list=["gene7", "gene2"])
    assert list(some.columns) == ["gene7", "gene2"]
    np.testing.assert_allclose(some.to_numpy(), full[["gene7", "gene2"]].to_numpy(), rtol=1e-6)
    with pytest.raises(InvalidInputError, match=r"not found: \['CD3E'\]"):
        plain.get_normalized_expression(gene_list=["gene1", "CD3E"])
    with pytest.raises(InvalidInputError, match="transform_batch needs a batch covariate"):
        plain.get_normalized_expression(transform_batch="a")

    adata = counts_factory(n_obs=120, n_vars=30)
    SparseVAE.setup_anndata(adata, layer="counts", batch_key="batch")
    model = SparseVAE(adata, seed=0, **SMALL)
    model.train(max_epochs=2, batch_size=64, enable_progress_bar=False)
    own = model.get_normalized_expression(return_numpy=True)
    as_a = model.get_normalized_expression(transform_batch="a", return_numpy=True)
    in_a = (adata.obs["batch"] == "a").to_numpy()
    np.testing.assert_allclose(as_a[in_a], own[in_a], rtol=1e-6)  # batch-a cells are decoded as before
    assert np.abs(as_a[~in_a] - own[~in_a]).max() > 1e-6  # batch-b cells are decoded as if in batch a
    with pytest.raises(InvalidInputError, match=r"'c' is not a category of adata.obs\['batch'\].*\['a', 'b'\]"):
        model.get_normalized_expression(transform_batch="c")


def test_results_tables_and_em_state(counts_adata):
    model = fit(counts_adata, epochs=3)
    W, P = model.get_loadings(), model.get_inclusion_probabilities()
    assert list(W.index) == list(counts_adata.var_names) and W.shape == P.shape == (40, 4)
    assert ((P >= 0) & (P <= 1)).all().all()
    prior = model.module.prior
    # eta is the closed-form update of the stored p*; p* is the E-step of the final W under some eta
    torch.testing.assert_close(prior.eta, prior.eta_update(prior.p_star))
    logit = torch.logit(prior.p_star.clamp(1e-7, 1 - 1e-7))
    implied = logit - ssl_inclusion_logits(model.module.decoder.W.detach(), torch.full((4,), 0.5), 10.0, 1.0)
    assert torch.allclose(implied, implied[:1].expand_as(implied), atol=1e-2)  # column-wise constant offset
    assert set(model.active_factors()) <= set(model.factor_names)
    anchors = model.get_anchor_genes()
    for factor, genes in anchors.items():
        assert factor in model.active_factors()
        assert all((P.loc[genes] > 0.5).sum(1) == 1)
    assert "n_active_factors" in model.history


def test_same_seed_same_result_and_dense_equals_sparse(counts_factory):
    a = counts_factory()
    b = counts_factory()
    b.layers["counts"] = b.layers["counts"].toarray()
    za = fit(a, seed=3).get_latent_representation()
    zb = fit(b, seed=3).get_latent_representation()
    np.testing.assert_allclose(za, zb, rtol=1e-5, atol=1e-5)
    zc = fit(counts_factory(), seed=4).get_latent_representation()
    assert not np.allclose(za, zc)


def test_save_load_round_trip(tmp_path, counts_adata):
    model = fit(counts_adata)
    model.save(tmp_path / "m", overwrite=True)
    loaded = SparseVAE.load(tmp_path / "m", adata=counts_adata)
    np.testing.assert_array_equal(model.get_latent_representation(), loaded.get_latent_representation())
    pd.testing.assert_frame_equal(model.get_inclusion_probabilities(), loaded.get_inclusion_probabilities())
    torch.testing.assert_close(model.module.prior.eta, loaded.module.prior.eta)


def test_load_rejects_mismatched_anndata(tmp_path, counts_adata):
    model = fit(counts_adata)
    model.save(tmp_path / "m", overwrite=True)
    other = counts_adata[:, :30].copy()
    with pytest.raises(InvalidInputError, match="does not match the saved model"):
        SparseVAE.load(tmp_path / "m", adata=other)


def test_load_reads_the_model_file_once_and_leaves_a_mismatched_anndata_as_it_was(tmp_path, counts_adata, monkeypatch):
    model = fit(counts_adata)
    model.save(tmp_path / "m", overwrite=True)
    reads = []
    read = torch.load

    def counted(path, *args, **kwargs):
        reads.append(Path(path).name)
        return read(path, *args, **kwargs)

    monkeypatch.setattr(torch, "load", counted)
    loaded = SparseVAE.load(tmp_path / "m", adata=counts_adata)
    assert reads == ["model.pt"]
    np.testing.assert_array_equal(model.get_latent_representation(), loaded.get_latent_representation())

    other = counts_adata[:, ::-1].copy()  # the same genes in another order
    keys = (list(other.obs.columns), sorted(other.uns), sorted(other.obsm))
    with warnings.catch_warnings(record=True) as caught, pytest.raises(InvalidInputError, match="does not match"):
        warnings.simplefilter("always")
        SparseVAE.load(tmp_path / "m", adata=other)
    assert (list(other.obs.columns), sorted(other.uns), sorted(other.obsm)) == keys
    assert not [w for w in caught if "var_names" in str(w.message)]  # the error says it, once


def test_misspelt_or_misplaced_options_are_named_before_anything_runs(counts_adata):
    SparseVAE.setup_anndata(counts_adata, layer="counts")
    with pytest.raises(TypeError, match=r"'n_latents' \(did you mean 'n_latent'\?\)"):
        SparseVAE(counts_adata, n_latents=3)
    with pytest.raises(TypeError, match=r"w_init is an option of the decoder; .*decoder_kwargs=\{'w_init': 0.1\}"):
        SparseVAE(counts_adata, w_init=0.1)
    with pytest.raises(TypeError, match="'n_batch'"):  # set from setup_anndata's batch_key, not an option
        SparseVAE(counts_adata, n_batch=2)
    model = SparseVAE(counts_adata, n_latent=3, decoder_kwargs={"w_init": 0.1}, n_hidden_encoder=8)
    assert model.module.n_latent == 3


def test_max_prior_cells_weighs_the_prior_against_at_most_that_many_cells(counts_adata):
    SparseVAE.setup_anndata(counts_adata, layer="counts")
    capped = SparseVAE(counts_adata, seed=0, max_prior_cells=50, **SMALL)
    plain = SparseVAE(counts_adata, seed=0, max_prior_cells=None, **SMALL)
    assert capped.module.max_prior_cells == 50 and plain.module.max_prior_cells is None
    assert capped.init_params_["non_kwargs"]["max_prior_cells"] == 50  # saved with the model, restored on load
    plain.module.load_state_dict(capped.module.state_dict())
    tensors = next(iter(capped._make_data_loader(adata=counts_adata, batch_size=16)))
    with torch.no_grad():
        inference, generative = capped.module(tensors, compute_loss=False)
        loss = {
            (name, n): module.loss(tensors, inference, generative, n_obs=n).loss.item()
            for name, module in (("capped", capped.module), ("plain", plain.module))
            for n in (30, 50, 5000)
        }
    # below the cap nothing changes; above it the penalty is divided by the cap, not by the training cells
    assert loss["capped", 30] == loss["plain", 30]
    assert loss["capped", 5000] == loss["plain", 50] == loss["capped", 50]
    assert loss["plain", 5000] < loss["capped", 5000]  # the penalty weighs less against more cells


def test_write_results_keys_h5ad_and_no_silent_overwrite(tmp_path, counts_adata):
    model = fit(counts_adata)
    model.write_results(counts_adata, key_added="sv")
    assert counts_adata.obsm["X_sv"].shape == (200, 4)
    assert counts_adata.varm["sv_W"].shape == counts_adata.varm["sv_pip"].shape == (40, 4)
    uns = counts_adata.uns["sv"]
    for key in ("active", "eta", "seed", "versions", "data_hash", "params", "factor_names"):
        assert key in uns
    assert uns["seed"] == 0 and len(uns["data_hash"]) == 64
    assert uns["train_params"]["torch_threads"] == torch.get_num_threads()  # float sums depend on it
    counts_adata.write_h5ad(tmp_path / "r.h5ad")
    back = ad.read_h5ad(tmp_path / "r.h5ad")
    np.testing.assert_array_equal(back.varm["sv_pip"], counts_adata.varm["sv_pip"])
    assert back.uns["sv"]["data_hash"] == uns["data_hash"]
    before = counts_adata.obsm["X_sv"].copy()
    with pytest.raises(InvalidInputError, match="overwrite=True"):
        model.write_results(counts_adata, key_added="sv")
    np.testing.assert_array_equal(counts_adata.obsm["X_sv"], before)
    model.write_results(counts_adata, key_added="sv", overwrite=True)


def test_user_data_not_modified(counts_adata):
    snapshot = counts_adata.copy()
    model = fit(counts_adata)
    model.get_latent_representation()
    model.get_normalized_expression()
    assert (counts_adata.layers["counts"] != snapshot.layers["counts"]).nnz == 0
    assert (counts_adata.X != snapshot.X).nnz == 0
    pd.testing.assert_frame_equal(counts_adata.var, snapshot.var)
    pd.testing.assert_frame_equal(counts_adata.obs[snapshot.obs.columns], snapshot.obs)
    assert set(counts_adata.obsm) == set() and set(counts_adata.varm) == set()
    assert {k for k in counts_adata.uns if not k.startswith("_scvi")} == set()


def test_batch_covariate_is_outside_the_mask(counts_adata):
    SparseVAE.setup_anndata(counts_adata, layer="counts", batch_key="batch")
    model = SparseVAE(counts_adata, **SMALL)
    assert model.module.decoder.W.shape == (40, 4)
    assert model.module.decoder.covariates is not None
    model.train(max_epochs=1, enable_progress_bar=False)


# ---------------------------------------------------------------------- bad input
def test_missing_layer(counts_factory):
    adata = counts_factory()
    with pytest.raises(InvalidInputError, match="Layer 'raw' not found.*available") as err:
        SparseVAE.setup_anndata(adata, layer="raw")
    assert "did you mean" not in str(err.value)  # nothing close to 'raw'
    with pytest.raises(InvalidInputError, match=r"Layer 'count' not found in adata.layers \(did you mean 'counts'\?\)"):
        SparseVAE.setup_anndata(adata, layer="count")


def test_non_integer_counts_with_count_likelihood(counts_factory):
    adata = counts_factory()
    adata.layers["lognorm"] = adata.layers["counts"].copy()
    adata.layers["lognorm"].data = np.log1p(adata.layers["lognorm"].data)
    SparseVAE.setup_anndata(adata, layer="lognorm")
    with pytest.raises(InvalidInputError, match="non-integer.*gene_likelihood='normal'"):
        SparseVAE(adata, gene_likelihood="nb")
    SparseVAE(adata, gene_likelihood="normal", **SMALL)  # fine for normalised data


def test_negative_values_with_count_likelihood(counts_factory):
    adata = counts_factory()
    adata.X = adata.X.toarray() - 1.0
    SparseVAE.setup_anndata(adata)
    with pytest.raises(InvalidInputError, match="negative values"):
        SparseVAE(adata, gene_likelihood="poisson")


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_and_inf(bad, counts_factory):
    adata = counts_factory()
    dense = adata.layers["counts"].toarray()
    dense[3, 5] = bad
    adata.layers["counts"] = sp.csr_matrix(dense)
    with pytest.raises(InvalidInputError, match="NaN or infinite"):
        SparseVAE.setup_anndata(adata, layer="counts")


@pytest.mark.parametrize("shape", [(0, 10), (10, 0)])
def test_empty_anndata(shape):
    adata = ad.AnnData(np.zeros(shape, dtype=np.float32))
    with pytest.raises(InvalidInputError, match="empty"):
        SparseVAE.setup_anndata(adata)


def test_repeated_gene_names(counts_factory):
    adata = counts_factory()
    adata.var_names = ["gene0", *adata.var_names[1:6], "gene0", "gene3", *adata.var_names[8:]]
    message = r"2 gene name\(s\) occur more than once.*'gene0' x2.*var_names_make_unique"
    with pytest.raises(InvalidInputError, match=message):
        SparseVAE.setup_anndata(adata, layer="counts")
    assert adata.uns.get("_scvi_uuid") is None  # refused before anything was registered
    adata.var_names_make_unique()
    SparseVAE.setup_anndata(adata, layer="counts")


def test_cells_with_zero_counts(counts_factory):
    adata = counts_factory()
    dense = adata.layers["counts"].toarray()
    dense[4] = 0
    adata.layers["counts"] = sp.csr_matrix(dense)
    SparseVAE.setup_anndata(adata, layer="counts")
    with pytest.raises(InvalidInputError, match="zero total counts.*cell4"):
        SparseVAE(adata)


def test_batch_key_with_missing_values_or_absent(counts_factory):
    adata = counts_factory()
    adata.obs["batch"] = adata.obs["batch"].astype(object)
    adata.obs.loc[adata.obs_names[:3], "batch"] = np.nan
    with pytest.raises(InvalidInputError, match="3 missing value"):
        SparseVAE.setup_anndata(adata, layer="counts", batch_key="batch")
    with pytest.raises(InvalidInputError, match="not a column of adata.obs"):
        SparseVAE.setup_anndata(adata, layer="counts", batch_key="donor")
    with pytest.raises(InvalidInputError, match=r"'batches' is not a column of adata.obs \(did you mean 'batch'\?\)"):
        SparseVAE.setup_anndata(adata, layer="counts", batch_key="batches")


def test_write_results_into_anndata_with_other_genes(counts_adata):
    model = fit(counts_adata)
    other = counts_adata[:, ::-1].copy()
    with pytest.raises(InvalidInputError, match="genes differ"):
        model.write_results(other)


def test_warns_when_training_leaves_no_active_factor(counts_adata):
    SparseVAE.setup_anndata(counts_adata, layer="counts")
    # W starts at 0 (deep in the spike: p* = 0.09 at eta = 0.5) and a negligible learning rate keeps it there
    spiked = SparseVAE(counts_adata, n_latent=3, n_hidden=8, decoder_kwargs={"w_init": 0.0, "w_init_noise": 0.0})
    expected = r"no active factor.*3 optimiser steps on 180 training cells.*w_init.*lambda0 = 10 and lambda1 = 1.*0\.26"
    with pytest.warns(NoActiveFactorWarning, match=expected):
        spiked.train(max_epochs=1, lr=1e-8, batch_size=64)
    assert spiked.active_factors() == []

    # the same training from the slab keeps every factor and stays silent
    slab = SparseVAE(counts_adata, n_latent=3, n_hidden=8, decoder_kwargs={"w_init": 1.0, "w_init_noise": 0.0})
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoActiveFactorWarning)
        slab.train(max_epochs=1, lr=1e-8, batch_size=64)
    assert len(slab.active_factors()) == 3


def test_correlated_latent_prior_is_learned_saved_and_scored(tmp_path, counts_adata):
    identity = fit(counts_adata)
    np.testing.assert_array_equal(identity.get_latent_correlation().to_numpy(), np.eye(4))
    model = fit(counts_adata, epochs=3, latent_prior="correlated")
    corr = model.get_latent_correlation()
    assert list(corr.index) == list(corr.columns) == model.factor_names
    np.testing.assert_allclose(np.diag(corr), 1.0, atol=1e-6)
    assert np.abs(corr.to_numpy() - np.eye(4)).max() > 0  # trained away from the identity
    assert np.isfinite(model.get_heldout_nll())
    model.write_results(counts_adata, key_added="corr")
    np.testing.assert_allclose(counts_adata.uns["corr"]["latent_correlation"], corr.to_numpy(), atol=1e-6)
    counts_adata.write_h5ad(tmp_path / "corr.h5ad")
    model.save(tmp_path / "m", overwrite=True)
    loaded = SparseVAE.load(tmp_path / "m", adata=counts_adata)
    pd.testing.assert_frame_equal(model.get_latent_correlation(), loaded.get_latent_correlation())
    with pytest.raises(ValueError, match="latent_prior must be"):
        SparseVAE(counts_adata, latent_prior="full", **SMALL)


def test_training_flushes_denormals_and_restores_the_setting(counts_adata):
    from lightning.pytorch.callbacks import Callback

    from scsparse.nn._numerics import flushing_denormals

    seen = []

    class Record(Callback):
        def on_train_batch_start(self, *args):
            seen.append(flushing_denormals())

    assert not flushing_denormals()
    SparseVAE.setup_anndata(counts_adata, layer="counts")
    model = SparseVAE(counts_adata, **SMALL)
    model.train(max_epochs=1, batch_size=64, enable_progress_bar=False, callbacks=[Record()])
    assert seen and all(seen)
    assert not flushing_denormals()


def test_default_decoder_selects_weak_programmes():
    # bench speed's simulation: every gene follows one of 4 programmes at 0.6 log-fold per sd, median 0.5 counts.
    # With the first-layer bias at unit column norm the same fit put every gene of 3 of the 4 programmes in the
    # spike (best F 0.33 / 0.08 / 1.00 / 0.99): the bias doubles the network's gain, so |w| stayed under the slab
    # threshold; the default half norm keeps |w| on the scale the prior's rates were set for.
    from scsparse.generic.benchmarks._speed._run import simulate_counts

    adata = simulate_counts(2000, 400, n_programmes=4, seed=0)
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, n_latent=8, n_hidden=32, seed=0)
    model.train(max_epochs=30, batch_size=128, enable_progress_bar=False)
    assert model.module.decoder.first_bias is not None and model.module.decoder.first_norm == 0.5
    selected = model.get_inclusion_probabilities().to_numpy() > 0.5
    truth = adata.var["programme"].to_numpy()[:, None] == np.arange(4)[None, :]
    both = (selected[:, :, None] & truth[:, None, :]).sum(0)  # (factors, programmes)
    f_score = 2 * both / (selected.sum(0)[:, None] + truth.sum(0)[None, :])
    assert (f_score.max(0) > 0.8).sum() >= 3, f_score.max(0)


def test_small_data_train_without_the_logging_interval_warning(counts_factory):
    """Fewer minibatches than Lightning's logging interval is normal here (the history is per epoch): not warned."""
    adata = counts_factory(n_obs=120, n_vars=20)
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, n_latent=3, n_hidden=8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.train(max_epochs=2, batch_size=64, enable_progress_bar=False)  # 2 minibatches per epoch
    messages = [str(w.message) for w in caught]
    assert not [m for m in messages if "logging interval" in m], messages
    assert len(model.history["train_loss"]) == 2  # the history is per epoch


def test_training_again_or_after_loading_runs_in_training_mode(tmp_path, counts_factory):
    """scvi-tools leaves the module in eval mode after a fit or load; Lightning trains in the mode it finds."""
    adata = counts_factory(n_obs=120, n_vars=20)
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, n_latent=3, n_hidden=8)
    modes = []

    def record(module, args):
        if torch.is_grad_enabled():  # training steps only, not the validation or orientation passes
            modes.append(module.training)

    model.module.encoder.register_forward_pre_hook(record)
    model.train(max_epochs=1, enable_progress_bar=False)
    assert modes and all(modes) and not model.module.training  # eval after the fit, as scvi-tools leaves it
    modes.clear()
    model.train(max_epochs=1, enable_progress_bar=False)
    assert modes and all(modes)  # dropout and batch statistics on in the second fit too
    model.save(tmp_path / "m")
    back = SparseVAE.load(str(tmp_path / "m"), adata=adata)
    modes.clear()
    back.module.encoder.register_forward_pre_hook(record)
    back.train(max_epochs=1, enable_progress_bar=False)
    assert modes and all(modes)


def _global_random_state() -> dict:
    import os
    import random

    import scvi

    return {
        "python": random.getstate(),
        "numpy": np.random.get_state()[1].copy(),  # noqa: NPY002
        "torch": torch.random.get_rng_state().clone(),
        "cudnn": (torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark),
        "scvi_seed": scvi.settings.seed,
        "env": {k: os.environ.get(k) for k in ("PL_GLOBAL_SEED", "XLA_FLAGS")},
    }


def _assert_same_state(before: dict, after: dict) -> None:
    assert after["python"] == before["python"]
    assert np.array_equal(after["numpy"], before["numpy"])
    assert torch.equal(after["torch"], before["torch"])
    assert after["cudnn"] == before["cudnn"] and after["scvi_seed"] == before["scvi_seed"]
    assert after["env"] == before["env"]


def test_construction_and_training_leave_the_callers_random_state_alone(counts_adata):
    SparseVAE.setup_anndata(counts_adata, layer="counts")
    np.random.seed(123)  # noqa: NPY002 - the caller's own state, which neither the constructor nor train() may change
    torch.manual_seed(456)
    before = _global_random_state()
    model = SparseVAE(counts_adata, n_latent=3, n_hidden=8, seed=3)
    _assert_same_state(before, _global_random_state())
    twin = SparseVAE(counts_adata, n_latent=3, n_hidden=8, seed=3)
    for name, value in model.module.state_dict().items():
        assert torch.equal(value, twin.module.state_dict()[name]), name
    model.train(max_epochs=1, enable_progress_bar=False)
    _assert_same_state(before, _global_random_state())
    first = model.get_latent_representation()
    # the same seed gives the bit-identical fit, whatever the caller's generators hold
    np.random.seed(7)  # noqa: NPY002
    torch.manual_seed(8)
    again = SparseVAE(counts_adata, n_latent=3, n_hidden=8, seed=3)
    again.train(max_epochs=1, enable_progress_bar=False)
    np.testing.assert_array_equal(again.get_latent_representation(), first)
    assert again.validation_indices.tolist() == model.validation_indices.tolist()
    model.train(max_epochs=1, seed=5, enable_progress_bar=False)
    assert model.seed == 5
    other = SparseVAE(counts_adata, n_latent=3, n_hidden=8, seed=3)
    other.train(max_epochs=1, seed=5, enable_progress_bar=False)
    assert not np.array_equal(other.get_latent_representation(), first)  # another training seed, another fit
    # without a seed the model follows scvi-tools' global seed
    import scvi

    before_seed = scvi.settings.seed
    try:
        scvi.settings.seed = 11
        assert SparseVAE(counts_adata, n_latent=3, n_hidden=8).seed == 11
    finally:
        scvi.settings.seed = before_seed


def test_a_fit_reads_the_matrix_at_setup_and_when_training_starts_only(counts_adata, monkeypatch):
    """One pass checks the data before they are registered; one when training starts checks and hashes the data
    trained on (replaced or changed in place since set-up); the constructor and write_results read neither.
    """
    from scsparse.model import _base, _validation
    from scsparse.results import data_hash

    scans = []
    real_scan = _validation.scan_anndata

    def counted(*args):
        scans.append(args)
        return real_scan(*args)

    monkeypatch.setattr(_validation, "scan_anndata", counted)
    monkeypatch.setattr(_base, "scan_anndata", counted)
    SparseVAE.setup_anndata(counts_adata, layer="counts")
    model = SparseVAE(counts_adata, n_latent=2, n_hidden=8)
    model.train(max_epochs=1, batch_size=64, enable_progress_bar=False)
    assert len(scans) == 2
    model.write_results(counts_adata)
    assert len(scans) == 2
    assert counts_adata.uns["sparsevae"]["data_hash"] == data_hash(counts_adata, "counts")


def test_the_set_up_scan_is_ours_and_serves_a_loaded_model_without_a_rescan(counts_factory, tmp_path):
    from unittest import mock

    import scsparse.model._base as base

    adata = counts_factory(n_obs=120, n_vars=30)
    model = fit(adata, epochs=1)
    assert not hasattr(model.adata_manager, "data_scan")  # nothing of ours on scvi-tools' object
    with mock.patch.object(base, "scan_anndata", side_effect=AssertionError("rescanned the matrix")):
        model.write_results(adata)
    model.save(tmp_path / "model", overwrite=True)
    other = adata.copy()
    loaded = SparseVAE.load(tmp_path / "model", adata=other)
    with mock.patch.object(base, "scan_anndata", side_effect=AssertionError("rescanned the matrix")):
        loaded.write_results(other, overwrite=True)
    assert other.uns["sparsevae"]["data_hash"] == adata.uns["sparsevae"]["data_hash"]
