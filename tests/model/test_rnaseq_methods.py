"""scvi-tools' RNA-seq methods on SparseVAE: ``px`` distributions, DE, posterior predictive samples."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import scsparse
from scsparse.model import SparseVAE

SMALL = {"n_latent": 4, "n_hidden": 16}


def _trained(adata, **kwargs):
    SparseVAE.setup_anndata(adata, layer="counts", batch_key=kwargs.pop("batch_key", None))
    model = SparseVAE(adata, seed=0, **{**SMALL, **kwargs})
    model.train(max_epochs=3, batch_size=64, enable_progress_bar=False)
    return model


@pytest.mark.parametrize("likelihood", ["nb", "zinb", "poisson", "normal"])
def test_px_is_the_likelihood_the_loss_uses(likelihood, counts_factory):
    adata = counts_factory(n_obs=64, n_vars=20)
    model = _trained(adata, gene_likelihood=likelihood)
    module = model.module.eval()
    tensors = next(iter(model._make_data_loader(adata=adata, batch_size=64)))
    torch.manual_seed(0)
    x = tensors["X"]
    with torch.no_grad():
        inference, generative = module.forward(tensors, compute_loss=False)
        px = generative["px"]
        ours = module.log_likelihood(x, generative)
    np.testing.assert_allclose(px.log_prob(x).sum(-1).numpy(), ours.numpy(), rtol=1e-4, atol=1e-3)
    if likelihood != "normal":
        np.testing.assert_allclose(px.scale.sum(-1).numpy(), 1.0, rtol=1e-5)
        mean = px.get_normalized("mu")
        np.testing.assert_allclose(mean.numpy(), (px.scale * x.sum(-1, keepdim=True)).numpy(), rtol=1e-5)


def test_loss_on_fixed_weights_is_the_elbo_formula(counts_factory):
    """The loss is -log p(x|z) (all constants) + KL per cell, plus the prior on W over the training cells."""
    adata = counts_factory(n_obs=64, n_vars=20)
    model = _trained(adata)
    module = model.module.eval()
    tensors = next(iter(model._make_data_loader(adata=adata, batch_size=64)))
    torch.manual_seed(1)
    with torch.no_grad():
        inference, generative, loss = module.forward(tensors, loss_kwargs={"n_obs": 1000})
    x, qz, z = tensors["X"], inference["qz"], inference["z"]
    with torch.no_grad():
        expected = _elbo_by_hand(module, x, qz, generative) + _penalty_by_hand(module) / 1000
    assert float(loss.loss) == pytest.approx(float(expected), rel=1e-4)
    assert z.shape == qz.loc.shape


def _elbo_by_hand(module, x, qz, generative):
    theta = torch.exp(module.observation.log_theta)
    mu = x.sum(-1, keepdim=True) * torch.softmax(generative["heads"][0], dim=-1)
    nb = torch.distributions.NegativeBinomial(total_count=theta, logits=torch.log(mu) - torch.log(theta))
    rec = -nb.log_prob(x).sum(-1)
    kl = torch.distributions.kl_divergence(qz, torch.distributions.Normal(0.0, 1.0)).sum(-1)
    return (rec + kl).mean()


def _penalty_by_hand(module):
    w, p = module.decoder.masked_W(), module.prior.p_star
    return ((module.prior.lambda1 * p + module.prior.lambda0 * (1 - p)) * w.abs()).sum()


def test_posterior_predictive_and_likelihood_parameters(counts_factory):
    adata = counts_factory(n_obs=60, n_vars=20)
    model = _trained(adata, gene_likelihood="zinb")
    samples = model.posterior_predictive_sample(n_samples=3)
    assert samples.shape == (60, 20, 3)
    values = samples.todense()
    assert (values >= 0).all() and np.allclose(values, np.round(values))
    params = model.get_likelihood_parameters()
    assert params["mean"].shape == params["dispersions"].shape == params["dropout"].shape == (60, 20)
    assert np.isfinite(params["mean"]).all() and (params["dispersions"] > 0).all()
    one = model.get_normalized_expression(return_numpy=True)
    np.testing.assert_array_equal(one, model.get_normalized_expression(return_numpy=True))  # posterior mean
    draws = model.get_normalized_expression(n_samples=4, return_mean=False)
    assert draws.shape == (4, 60, 20) and not np.allclose(draws[0], draws[1])


def test_transform_batch_list_averages_the_batches(counts_factory):
    adata = counts_factory(n_obs=120, n_vars=30)
    model = _trained(adata, batch_key="batch")
    as_a = model.get_normalized_expression(transform_batch="a", return_numpy=True)
    as_b = model.get_normalized_expression(transform_batch="b", return_numpy=True)
    both = model.get_normalized_expression(transform_batch=["a", "b"], return_numpy=True)
    np.testing.assert_allclose(both, (as_a + as_b) / 2, rtol=1e-5, atol=1e-8)
    latent = model.get_normalized_expression(library_size="latent", return_numpy=True)
    np.testing.assert_allclose(latent.sum(1), np.asarray(adata.layers["counts"].sum(1)).ravel(), rtol=1e-4)


def test_minified_model_reads_the_stored_posterior(counts_factory, tmp_path):
    adata = counts_factory(n_obs=80, n_vars=20)
    model = _trained(adata, batch_key="batch")
    z = model.get_latent_representation()
    expr = model.get_normalized_expression(return_numpy=True)
    latent_lib = model.get_normalized_expression(library_size="latent", return_numpy=True)
    model.minify_adata()
    assert model.minified_data_type == "latent_posterior_parameters"
    assert model.adata is not adata and model.adata.X.nnz == 0 and "X_latent_qzm" in adata.obsm
    np.testing.assert_allclose(model.get_latent_representation(), z, rtol=1e-6)
    np.testing.assert_allclose(model.get_normalized_expression(return_numpy=True), expr, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(
        model.get_normalized_expression(library_size="latent", return_numpy=True), latent_lib, rtol=1e-5
    )
    assert model.posterior_predictive_sample().shape == (80, 20)
    for needs_counts in (lambda: model.train(max_epochs=1), model.get_heldout_nll, model.write_results):
        with pytest.raises(ValueError, match="does not support minified data"):
            needs_counts()
    model.save(tmp_path / "mini", save_anndata=True)
    back = SparseVAE.load(tmp_path / "mini")
    assert back.minified_data_type == "latent_posterior_parameters"
    np.testing.assert_allclose(back.get_latent_representation(), z, rtol=1e-6)


@pytest.fixture(scope="module")
def kang_model():
    adata = scsparse.data.kang_pbmc()
    counts = adata.layers["counts"]
    mean = np.asarray(counts.mean(0)).ravel()
    var = np.asarray(counts.multiply(counts).mean(0)).ravel() - mean**2
    adata = adata[:, np.sort(np.argsort(-var / np.maximum(mean, 1e-3))[:500])].copy()  # 500 most overdispersed
    assert {"CD79A", "MS4A1"} <= set(adata.var_names)
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, n_latent=20, n_hidden=64, seed=0)
    model.train(max_epochs=60, batch_size=128, enable_progress_bar=False)
    return model


def test_differential_expression_ranks_b_cell_markers(kang_model):
    np.random.seed(0)  # noqa: NPY002 - scvi-tools draws the DE samples with numpy's global generator
    change = kang_model.differential_expression(groupby="cell_type", group1="B", mode="change", silent=True)
    top = list(change.sort_values("lfc_mean", ascending=False).index[:20])
    assert {"CD79A", "MS4A1"} <= set(top), top
    assert change.loc["CD79A", "is_de_fdr_0.05"] and change.loc["CD79A", "proba_de"] > 0.95
    vanilla = kang_model.differential_expression(groupby="cell_type", group1="B", silent=True)
    up = vanilla[vanilla["scale1"] > vanilla["scale2"]]
    assert {"CD79A", "MS4A1"} <= set(up.sort_values("bayes_factor", ascending=False).index[:20])
    # the same call on the minified AnnData: from the stored posterior, the same answer
    kang_model.minify_adata()
    np.random.seed(0)  # noqa: NPY002 - as above
    mini = kang_model.differential_expression(groupby="cell_type", group1="B", mode="change", silent=True)
    mini_top = list(mini.sort_values("lfc_mean", ascending=False).index[:20])
    assert {"CD79A", "MS4A1"} <= set(mini_top) and len(set(mini_top) & set(top)) >= 15
    genes = change.index
    assert np.corrcoef(change["lfc_mean"], mini.loc[genes, "lfc_mean"])[0, 1] > 0.95
