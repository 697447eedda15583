"""Covariates enter the decoder outside the mask: set-up, checks, save/load, and W never absorbs them."""

from __future__ import annotations

import anndata as ad
import numpy as np
import pytest
import scipy.sparse as sp

from scsparse.model import InvalidInputError, MultiStudySparseVAE, SparseVAE

TRAIN = {"batch_size": 100, "enable_progress_bar": False}


def planted_donor_effect(n_obs: int = 400, seed: int = 0) -> ad.AnnData:
    """Genes 0-29 follow three programmes; genes 30-39 are 8x higher in donor d2 and constant otherwise."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n_obs, 3))
    donor = np.where(rng.random(n_obs) < 0.5, "d1", "d2")
    rate = np.ones((n_obs, 40)) * 3.0
    rate[:, :30] = np.exp(1.0 + 0.9 * z[:, np.arange(30) % 3])
    rate[donor == "d2", 30:] *= 8.0
    counts = rng.poisson(rate).astype(np.float32)
    adata = ad.AnnData(sp.csr_matrix(counts))
    adata.obs_names = [f"cell{i}" for i in range(n_obs)]
    adata.var_names = [f"gene{j}" for j in range(40)]
    adata.layers["counts"] = adata.X.copy()
    adata.obs["donor"] = donor
    adata.obs["pct_mt"] = rng.uniform(0, 10, n_obs)
    return adata


def _donor_genes_in_w(model) -> int:
    """Donor-effect genes (30-39) that some active factor selects (p* > 0.5)."""
    pip = model.get_inclusion_probabilities()
    active = model.active_factors()
    return int((pip.iloc[30:][active] > 0.5).any(axis=1).sum()) if active else 0


def test_a_covariate_effect_stays_out_of_w():
    """A donor effect on genes 30-39: with the donor as a covariate no factor selects those genes; without it one does.

    The encoder sees the covariate (``encode_covariates=True``), so the codes need not carry the donor: without
    it the donor effect can sit in a factor for a while before the KL term moves it to the covariate (on this
    data 2 of 4 seeds still had it in ``W`` after 120 epochs, none after 300).
    """
    with_cov = planted_donor_effect(n_obs=1000, seed=3)
    SparseVAE.setup_anndata(with_cov, layer="counts", categorical_covariate_keys=["donor"])
    model = SparseVAE(with_cov, n_latent=5, n_hidden=32, seed=3, encode_covariates=True)
    model.train(max_epochs=120, batch_size=64, enable_progress_bar=False)
    assert len(model.active_factors()) == 3  # the three programmes
    assert _donor_genes_in_w(model) <= 1

    without = planted_donor_effect(n_obs=1000, seed=3)
    SparseVAE.setup_anndata(without, layer="counts")
    plain = SparseVAE(without, n_latent=5, n_hidden=32, seed=3)
    plain.train(max_epochs=120, batch_size=64, enable_progress_bar=False)
    assert _donor_genes_in_w(plain) >= 8  # without the covariate a factor has to carry the donor effect


def test_covariates_train_save_and_load(tmp_path):
    adata = planted_donor_effect(n_obs=200)
    adata.obs["batch"] = np.where(np.arange(adata.n_obs) % 2 == 0, "a", "b")
    adata.obs["label"] = np.where(np.arange(adata.n_obs) % 3 == 0, "x", "y")
    SparseVAE.setup_anndata(
        adata, layer="counts", batch_key="batch", labels_key="label", categorical_covariate_keys=["donor"],
        continuous_covariate_keys=["pct_mt"],
    )  # fmt: skip
    model = SparseVAE(adata, n_latent=3, n_hidden=16, seed=0, encode_covariates=True)
    assert model.module.n_cats_per_cov == [2] and model.module.n_continuous_cov == 1
    assert model.module.n_input_encoder == adata.n_vars + 1
    model.train(max_epochs=3, **TRAIN)
    z = model.get_latent_representation()
    as_d1 = model.get_normalized_expression(return_numpy=True)
    model.save(tmp_path / "m", save_anndata=False)
    back = SparseVAE.load(tmp_path / "m", adata=adata)
    np.testing.assert_array_equal(back.get_latent_representation(), z)
    np.testing.assert_array_equal(back.get_normalized_expression(return_numpy=True), as_d1)
    # the continuous covariate changes the decoded expression (it enters the decoder)
    shifted = adata.copy()
    shifted.obs["pct_mt"] = shifted.obs["pct_mt"] + 50.0
    assert not np.allclose(model.get_normalized_expression(shifted, return_numpy=True), as_d1)
    samples = model.posterior_predictive_sample(n_samples=2)
    assert samples.shape == (200, 40, 2)


def test_multistudy_model_takes_covariates():
    adata = planted_donor_effect(n_obs=200)
    adata.obs["study"] = np.where(np.arange(adata.n_obs) < 100, "s1", "s2")
    MultiStudySparseVAE.setup_anndata(
        adata, study_key="study", layer="counts", categorical_covariate_keys=["donor"],
        continuous_covariate_keys=["pct_mt"],
    )  # fmt: skip
    model = MultiStudySparseVAE(adata, n_latent_shared=2, n_latent_specific=1, n_hidden=16)
    model.train(max_epochs=2, **TRAIN)
    assert model.get_latent_representation(kind="shared").shape == (200, 2)
    with pytest.raises(InvalidInputError, match="repeats"):
        MultiStudySparseVAE.setup_anndata(adata, study_key="study", categorical_covariate_keys=["study"])


@pytest.mark.parametrize(
    ("change", "kwargs", "message"),
    [
        (None, {"categorical_covariate_keys": ["donr"]}, r"'donr' is not a column of adata.obs.*did you mean 'donor'"),
        (None, {"categorical_covariate_keys": "donor"}, r"takes a list of obs columns.*\['donor'\]"),
        (None, {"continuous_covariate_keys": ["donor"]}, "needs numbers"),
        ("nan_mt", {"continuous_covariate_keys": ["pct_mt"]}, "missing value"),
        ("inf_mt", {"continuous_covariate_keys": ["pct_mt"]}, "inf value"),
        (None, {"batch_key": "donor", "categorical_covariate_keys": ["donor"]}, "repeats"),
        (None, {"categorical_covariate_keys": ["pct_mt"], "continuous_covariate_keys": ["pct_mt"]}, "both"),
        ("zero_sf", {"size_factor_key": "sf"}, "must be positive"),
        (None, {"labels_key": "cell_type"}, "'cell_type' is not a column"),
    ],
)
def test_bad_covariates_are_refused_with_the_fix(change, kwargs, message):
    adata = planted_donor_effect(n_obs=60)
    if change == "nan_mt":
        adata.obs.loc[adata.obs_names[3], "pct_mt"] = np.nan
    elif change == "inf_mt":
        adata.obs.loc[adata.obs_names[3], "pct_mt"] = np.inf
    elif change == "zero_sf":
        adata.obs["sf"] = 1.0
        adata.obs.loc[adata.obs_names[0], "sf"] = 0.0
    before = set(adata.obs.columns)
    with pytest.raises(InvalidInputError, match=message):
        SparseVAE.setup_anndata(adata, layer="counts", **kwargs)
    assert set(adata.obs.columns) == before and "_scvi_uuid" not in adata.uns
