import anndata as ad
import numpy as np
import pandas as pd
import pytest
import torch

from scsparse.model import InvalidInputError, MultiStudySparseVAE


@pytest.fixture
def studies_adata(counts_factory):
    def make(n_obs=240, labels=("s1", "s2", "s3")):
        adata = counts_factory(n_obs=n_obs, n_vars=30)
        adata.obs["study"] = np.asarray(labels)[np.arange(n_obs) % len(labels)]
        return adata

    return make


def fit(adata, epochs=2, orient=True, **kwargs):
    MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts")
    model = MultiStudySparseVAE(adata, n_hidden=16, **{"n_latent_shared": 3, "n_latent_specific": 2, **kwargs})
    model.train(max_epochs=epochs, batch_size=64, orient=orient, enable_progress_bar=False)
    return model


def test_blocks_are_zero_outside_a_cells_study(studies_adata):
    adata = studies_adata()
    model = fit(adata, n_latent_specific={"s1": 2, "s3": 1})
    assert model.factor_names == ["shared_0", "shared_1", "shared_2", "s1_0", "s1_1", "s3_0"]
    spec = model.get_latent_representation(kind="specific")
    study = adata.obs["study"].to_numpy()
    assert spec.shape == (240, 3)
    assert np.all(spec[study != "s1"][:, :2] == 0) and np.all(spec[study != "s3"][:, 2] == 0)
    assert np.any(spec[study == "s1"][:, :2] != 0)
    assert model.get_latent_representation(kind="shared").shape == (240, 3)
    assert model.get_loadings("shared").shape == (30, 3)
    assert list(model.get_loadings().columns) == model.factor_names  # every factor, as SparseVAE.get_loadings()
    pd.testing.assert_frame_equal(
        model.get_loadings(), pd.concat([model.get_loadings(b) for b in ("shared", *model.studies)], axis=1)
    )
    assert model.get_loadings("s1").shape == (30, 2) and model.get_loadings("s2").shape == (30, 0)
    with pytest.raises(InvalidInputError, match="Unknown study"):
        model.get_loadings("s9")


def test_specific_mask_only_reaches_its_own_study(studies_adata):
    adata = studies_adata()
    model = fit(adata)
    module = model.module
    # a gene's output for a cell of study s2 must not depend on s1's specific mask
    tensors = next(iter(model._make_data_loader(adata=adata, batch_size=240)))
    s2 = tensors["study"].reshape(-1) == 1
    inf = module.inference(**module._get_inference_input(tensors))
    before = module.generative(inf["qz"].loc, inf["library"])["heads"][0][s2]
    with torch.no_grad():
        module.decoder.W[:, 3:5] += 3.0  # s1's block
    after = module.generative(inf["qz"].loc, inf["library"])["heads"][0][s2]
    torch.testing.assert_close(before, after)


@pytest.mark.parametrize("encode_study", [True, False])
def test_encoder_sees_the_study_only_when_asked(studies_adata, encode_study):
    adata = studies_adata()
    model = fit(adata, epochs=1, encode_study=encode_study)
    module = model.module
    module.eval()
    tensors = next(iter(model._make_data_loader(adata=adata, batch_size=240)))
    relabelled = {**tensors, "study": (tensors["study"] + 1) % 3}  # the same cells, called another study
    with torch.no_grad():
        shared = [module.inference(**module._get_inference_input(t))["qz"].loc[:, :3] for t in (tensors, relabelled)]
    # the encoder's study input changes the shared codes of the same expression only when it is encoded
    assert torch.equal(shared[0], shared[1]) is (not encode_study)
    assert module.encode_study is encode_study
    model.write_results(adata, key_added="ms")
    assert adata.uns["ms"]["encoder_sees_study"] is encode_study  # recorded even when left at its default


def test_factor_table_write_results_and_h5ad(tmp_path, studies_adata):
    adata = studies_adata()
    model = fit(adata)
    table = model.factor_table()
    assert list(table.columns) == ["factor", "kind", "study", "active", "eta", "n_genes", "top_genes"]
    assert (table["kind"] == "shared").sum() == 3 and (table["kind"] == "specific").sum() == 6
    model.write_results(adata)
    for key in ("mssvae_W_shared", "mssvae_pip_shared", "mssvae_W_s1", "mssvae_pip_s3"):
        assert key in adata.varm
    assert adata.obsm["X_mssvae_specific"].shape == (240, 6)
    adata.write_h5ad(tmp_path / "ms.h5ad")
    back = ad.read_h5ad(tmp_path / "ms.h5ad")
    assert list(back.uns["mssvae"]["factor_table"]["factor"]) == model.factor_names
    with pytest.raises(InvalidInputError, match="overwrite=True"):
        model.write_results(adata)


def test_save_load_round_trip(tmp_path, studies_adata):
    adata = studies_adata()
    model = fit(adata)
    model.save(tmp_path / "m", overwrite=True)
    loaded = MultiStudySparseVAE.load(tmp_path / "m", adata=adata)
    np.testing.assert_array_equal(model.get_latent_representation(), loaded.get_latent_representation())


def test_load_rejects_mismatched_anndata(tmp_path, studies_adata):
    adata = studies_adata()
    fit(adata, epochs=1).save(tmp_path / "m", overwrite=True)
    other = adata[:, ::-1].copy()  # the same genes in another order
    with pytest.raises(InvalidInputError, match="does not match the saved model"):
        MultiStudySparseVAE.load(tmp_path / "m", adata=other)


def test_loading_a_model_saved_with_the_old_encoder_default_says_so(tmp_path, studies_adata):
    adata = studies_adata()
    model = fit(adata, epochs=1, encode_study=True)
    model.save(tmp_path / "old", overwrite=True)
    path = tmp_path / "old" / "model.pt"
    saved = torch.load(path, map_location="cpu", weights_only=False)
    # a model saved before encode_study existed: its init parameters do not name it
    del saved["attr_dict"]["init_params_"]["kwargs"]["module_kwargs"]["encode_study"]
    torch.save(saved, path)
    with pytest.raises(InvalidInputError, match="encode_study=True"):
        MultiStudySparseVAE.load(tmp_path / "old", adata=adata)


def test_misspelt_option_is_named(studies_adata):
    adata = studies_adata()
    MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts")
    with pytest.raises(TypeError, match=r"'encode_studies' \(did you mean 'encode_study'\?\)"):
        MultiStudySparseVAE(adata, encode_studies=True)
    with pytest.raises(TypeError, match="'n_latent' "):  # the model sums its blocks itself
        MultiStudySparseVAE(adata, n_latent=5)


def test_one_study_only(studies_adata):
    adata = studies_adata(labels=("only",))
    with pytest.raises(InvalidInputError, match="single level.*SparseVAE"):
        MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts")


def test_repeated_gene_names(studies_adata):
    adata = studies_adata()
    adata.var_names = [adata.var_names[0], *adata.var_names[:-1]]
    with pytest.raises(InvalidInputError, match="occur more than once in adata.var_names"):
        MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts")


def test_missing_study_labels(studies_adata):
    adata = studies_adata()
    adata.obs["study"] = adata.obs["study"].astype(object)
    adata.obs.loc[adata.obs_names[:2], "study"] = None
    with pytest.raises(InvalidInputError, match="2 missing value"):
        MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts")


def test_study_with_too_few_cells(studies_adata):
    adata = studies_adata()
    labels = adata.obs["study"].to_numpy().copy()
    labels[:5] = "tiny"
    labels[5:] = np.where(np.arange(235) % 2 == 0, "s1", "s2")
    adata.obs["study"] = labels
    with pytest.raises(InvalidInputError, match="fewer than 10 cells.*tiny"):
        MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts")


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (("s1", "shared"), r"\['shared'\].*clash with the names of the shared factors"),
        (("a b", "a_b"), "share AnnData keys"),
    ],
)
def test_study_names_that_would_collide_are_refused(studies_adata, labels, message):
    adata = studies_adata(labels=labels)
    with pytest.raises(InvalidInputError, match=message):
        MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts")


def test_unknown_study_in_n_latent_specific(studies_adata):
    adata = studies_adata()
    MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts")
    with pytest.raises(InvalidInputError, match=r"unknown studies \['s7'\]"):
        MultiStudySparseVAE(adata, n_latent_specific={"s7": 2})


def test_correlated_latent_prior_is_refused_with_the_reason(studies_adata):
    adata = studies_adata()
    MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts")
    with pytest.raises(ValueError, match="not available for the multi-study model.*latent_prior='identity'"):
        MultiStudySparseVAE(adata, n_latent_shared=3, n_latent_specific=2, latent_prior="correlated")
    assert MultiStudySparseVAE(adata, n_latent_shared=3, n_latent_specific=2).module.latent_prior is None


def test_decoder_bias_default_differs_from_sparsevae_and_can_be_set(studies_adata):
    from scsparse.model import SparseVAE

    adata = studies_adata()
    MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts")
    multi = MultiStudySparseVAE(adata, n_hidden=8, n_latent_shared=2, n_latent_specific=1)
    assert multi.module.decoder.first_bias is None  # keeps the condition-wide shift out of shared factors
    biased = MultiStudySparseVAE(
        adata, n_hidden=8, n_latent_shared=2, n_latent_specific=1, decoder_kwargs={"first_bias": True}
    )
    assert biased.module.decoder.first_bias is not None and biased.module.decoder.first_bias.shape == (8,)
    SparseVAE.setup_anndata(adata, layer="counts")
    assert SparseVAE(adata, n_latent=3, n_hidden=8).module.decoder.first_bias is not None
    plain = SparseVAE(adata, n_latent=3, n_hidden=8, decoder_kwargs={"first_bias": False})
    assert plain.module.decoder.first_bias is None
    assert multi._provenance()["decoder_first_bias"] is False
    assert biased._provenance()["decoder_first_bias"] is True
    assert (multi._provenance()["decoder_first_norm"], biased._provenance()["decoder_first_norm"]) == (1.0, 0.5)
    free = SparseVAE(adata, n_latent=3, n_hidden=8, decoder_kwargs={"normalize_weights": False})
    assert "decoder_first_norm" not in free._provenance()  # no norm constraint, so none recorded


def test_specific_factors_are_oriented_within_their_own_study(studies_adata):
    adata = studies_adata()
    model = fit(adata, n_latent_specific={"s1": 2, "s3": 1}, orient=False)
    assert not model.factors_oriented_
    groups = model._orientation_groups()
    study = adata.obs["study"].to_numpy()
    assert groups[0] == (slice(0, 3), None)
    np.testing.assert_array_equal(groups[1][1], study == "s1")
    np.testing.assert_array_equal(groups[3][1], study == "s3")
    assert groups[2][0] == slice(5, 5)  # s2 has no specific factor

    # every gene in every factor's slab: the sign of a factor is that of sum_j |w_jk| r_jk over its own cells
    model.module.prior.p_star.fill_(1.0)
    Z = model.get_latent_representation()
    W = np.abs(model.get_loadings("s1").to_numpy()[:, 0])
    x = adata.layers["counts"].toarray()
    logn = np.log1p(x / x.sum(1, keepdims=True) * 1e4)
    own = study == "s1"
    r_own = np.array([np.corrcoef(logn[own, j], Z[own, 3])[0, 1] for j in range(30)])
    signs = model.orient_factors(n_top=None)  # all 30 genes orient each factor
    assert signs["s1_0"] == (-1 if (W * r_own).sum() < 0 else 1)
    np.testing.assert_allclose(model.get_latent_representation()[:, 3], Z[:, 3] * signs["s1_0"], atol=1e-6)
    assert model.factors_oriented_ and (model.orient_factors(n_top=None) == 1).all()


def test_train_orients_the_factors(studies_adata):
    model = fit(studies_adata())
    assert model.factors_oriented_ and model.train_kwargs_["orient"]


def test_built_by_the_parent_constructor_and_from_a_registry_as_sparsevae(studies_adata):
    """The multi-study model runs SparseVAE's constructor (a hook builds its blocks), so registry= works as there."""
    import torch

    adata = studies_adata()
    MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts")
    model = MultiStudySparseVAE(adata, n_latent_shared=2, n_latent_specific=1, n_hidden=8, seed=3)
    rebuilt = MultiStudySparseVAE(
        registry=model.adata_manager.registry, n_latent_shared=2, n_latent_specific=1, n_hidden=8, seed=3
    )
    assert rebuilt.studies == model.studies and rebuilt.data_checks_.startswith("not run")
    for (name, a), b in zip(model.module.state_dict().items(), rebuilt.module.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    with pytest.raises(TypeError, match="mask_init"):
        MultiStudySparseVAE(adata, n_latent_shared=2, mask_init="nmf")  # the single-study model's option


def test_a_model_from_a_registry_asks_for_the_cells_to_write_into_as_sparsevae(studies_adata):
    """write_results is the parent's: a model built from a registry has no AnnData, and both models say so."""
    from scsparse.model import SparseVAE

    adata = studies_adata()
    MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts")
    registry = MultiStudySparseVAE(adata, n_latent_shared=2, n_latent_specific=1, n_hidden=8).adata_manager.registry
    multi = MultiStudySparseVAE(registry=registry, n_latent_shared=2, n_latent_specific=1, n_hidden=8)
    single_adata = studies_adata()
    SparseVAE.setup_anndata(single_adata, layer="counts")
    single = SparseVAE(registry=SparseVAE(single_adata, n_latent=2, n_hidden=8).adata_manager.registry, n_hidden=8)
    messages = []
    for model in (single, multi):
        with pytest.raises(InvalidInputError, match="built from a registry and has no AnnData") as error:
            model.write_results()
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def test_module_options_are_checked_once_and_the_factor_request_goes_to_the_hook(studies_adata, monkeypatch):
    adata = studies_adata()
    MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts")
    checks, requests = [], []
    check, build = MultiStudySparseVAE._check_module_kwargs, MultiStudySparseVAE._build_module

    def counted_check(self, module_kwargs):
        checks.append(dict(module_kwargs))
        return check(self, module_kwargs)

    def recorded_build(self, **kwargs):
        requests.append((kwargs["n_latent_shared"], kwargs["n_latent_specific"]))
        return build(self, **kwargs)

    monkeypatch.setattr(MultiStudySparseVAE, "_check_module_kwargs", counted_check)
    monkeypatch.setattr(MultiStudySparseVAE, "_build_module", recorded_build)
    model = MultiStudySparseVAE(adata, n_latent_shared=2, n_latent_specific={"s1": 1}, n_hidden=8, encode_study=True)
    assert len(checks) == 1 and checks[0]["encode_study"] is True
    assert requests == [(2, {"s1": 1})] and not hasattr(model, "_factor_request")
    assert list(model.module.n_latent_specific) == [1, 0, 0] and model.module.encode_study
    with pytest.raises(TypeError, match=r"'encode_studies' \(did you mean 'encode_study'\?\)"):
        MultiStudySparseVAE(adata, encode_studies=True)  # the one check still names a misspelt option
    assert len(checks) == 2


def test_minified_model_reads_the_stored_posterior_by_block(studies_adata, tmp_path):
    adata = studies_adata()
    model = fit(adata)
    z = model.get_latent_representation()
    specific = model.get_latent_representation(kind="specific")
    expr = model.get_normalized_expression(return_numpy=True)
    model.minify_adata()
    assert model.minified_data_type == "latent_posterior_parameters" and model.adata.X.nnz == 0
    np.testing.assert_allclose(model.get_latent_representation(), z, rtol=1e-6)
    np.testing.assert_allclose(model.get_latent_representation(kind="specific"), specific, rtol=1e-6)
    np.testing.assert_allclose(model.get_normalized_expression(return_numpy=True), expr, rtol=1e-5, atol=1e-8)
    assert model.posterior_predictive_sample().shape == (240, 30)
    # a draw from the stored posterior is zero outside a cell's own study's block, as from the encoder
    tensors = next(iter(model._make_data_loader(adata=model.adata, batch_size=240)))
    module = model.module
    draws = module.inference(**module._get_inference_input(tensors), n_samples=3)["z"][:, :, 3:]
    study = tensors["study"].reshape(-1).long()
    assert torch.all(draws[:, study != 0, :2] == 0) and torch.any(draws[:, study == 0, :2] != 0)
    for needs_counts in (lambda: model.train(max_epochs=1), model.write_results):
        with pytest.raises(ValueError, match="does not support minified data"):
            needs_counts()
    model.save(tmp_path / "mini", save_anndata=True)
    back = MultiStudySparseVAE.load(tmp_path / "mini")
    assert back.minified_data_type == "latent_posterior_parameters" and back.studies == model.studies
    np.testing.assert_allclose(back.get_latent_representation(), z, rtol=1e-6)
