"""The factors' sign convention: flips are exact symmetries, and oriented programmes go up with their factor."""

import numpy as np
import pytest
import torch

import scsparse
from scsparse.model import SparseVAE
from scsparse.model._orientation import orientation_signs
from scsparse.module import SparseVAEModule
from scsparse.results import expression_factor_correlation

FIT = {"n_latent": 5, "n_hidden": 16, "seed": 0}


def _fit(make_counts, orient: bool) -> SparseVAE:
    # 1,000 cells whose genes each go up with one of 3 programmes; 20 epochs keep 2 factors active
    adata = make_counts(1000, 30, 3, seed=0)
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, **FIT)
    model.train(max_epochs=20, batch_size=64, orient=orient, enable_progress_bar=False)
    return model


@pytest.fixture(scope="module")
def saved_unoriented(counts_factory, tmp_path_factory):
    """The fit of :func:`_fit` without orienting, made once for the module, saved with its data."""
    model = _fit(counts_factory, orient=False)
    folder = tmp_path_factory.mktemp("unoriented") / "model"
    model.save(folder)
    return model.adata, folder


@pytest.fixture
def unoriented(saved_unoriented) -> SparseVAE:
    """A fresh copy of the unoriented fit for each test (loaded from its saved state, on a copy of its data)."""
    adata, folder = saved_unoriented
    return SparseVAE.load(folder, adata=adata.copy())


def test_flip_factors_is_an_exact_symmetry():
    torch.manual_seed(0)
    module = SparseVAEModule(n_input=12, n_latent=4, n_hidden=8, latent_prior="correlated").eval()
    with torch.no_grad():
        module.latent_prior.raw.normal_()
    x = torch.poisson(torch.full((6, 12), 3.0))
    tensors = {"X": x}
    inf = module.inference(**module._get_inference_input(tensors))
    mean = inf["qz"].loc
    out = module.generative(mean, inf["library"])["heads"]
    kl, penalty, corr = module.latent_prior.kl(inf["qz"]), module.global_penalty(), module.latent_prior.correlation()

    signs = torch.tensor([1.0, -1.0, -1.0, 1.0])
    module.flip_factors(signs)
    inf2 = module.inference(**module._get_inference_input(tensors))
    torch.testing.assert_close(inf2["qz"].loc, mean * signs)
    torch.testing.assert_close(inf2["qz"].scale, inf["qz"].scale)
    torch.testing.assert_close(module.generative(mean * signs, inf["library"])["heads"], out)
    torch.testing.assert_close(module.latent_prior.kl(inf2["qz"]), kl)
    torch.testing.assert_close(module.global_penalty(), penalty)
    torch.testing.assert_close(module.latent_prior.correlation(), corr * signs[:, None] * signs[None, :])

    with pytest.raises(ValueError, match=r"\+1 and -1"):
        module.flip_factors(torch.tensor([1.0, 0.5, 1.0, 1.0]))
    with pytest.raises(ValueError, match=r"\+1 and -1"):
        module.flip_factors(torch.ones(3))


def test_orientation_signs_follow_the_top_genes():
    corr = np.array([[-0.8, 0.5, 0.9], [-0.6, -0.1, -0.9], [0.7, 0.2, 0.0]])
    W = np.array([[1.0, 1.0, 2.0], [1.0, 1.0, 1.0], [0.1, 1.0, 1.0]])
    pip = np.array([[0.9, 0.9, 0.9], [0.9, 0.1, 0.9], [0.9, 0.1, 0.1]])
    # factor 0: two strong genes down, one weak gene up -> flip; factor 1: only gene 0 selected (up);
    # factor 2: |w|-weighted 2 * 0.9 - 0.9 > 0 -> keep
    np.testing.assert_array_equal(orientation_signs(corr, W, pip), [-1.0, 1.0, 1.0])
    # no selected gene: the sign is kept
    np.testing.assert_array_equal(orientation_signs(corr, W, np.zeros_like(pip)), [1.0, 1.0, 1.0])

    # a contrast: one strong gene down against many weaker genes up. The top genes decide by default (the 10
    # largest |w|, here the strong gene and 9 of the weak ones), all candidates with n_top=None
    corr = np.r_[-0.9, np.full(40, 0.5)][:, None]
    W = np.r_[10.0, np.full(40, 0.5)][:, None]
    pip = np.ones_like(W)
    assert orientation_signs(corr, W, pip)[0] == -1.0  # -9 + 9 * 0.25 < 0
    assert orientation_signs(corr, W, pip, n_top=None)[0] == 1.0  # -9 + 40 * 0.25 > 0
    with pytest.raises(ValueError, match="n_top"):
        orientation_signs(corr, W, pip, n_top=0)


def test_expression_factor_correlation_matches_numpy_and_streams_subsets():
    rng = np.random.default_rng(0)
    counts = rng.poisson(2.0, size=(50, 7)).astype(float)
    Z = rng.normal(size=(50, 3))
    cells = rng.random(50) < 0.5
    logn = np.log1p(counts / counts.sum(1, keepdims=True) * 1e4)
    expected = np.corrcoef(logn[cells].T, Z[cells].T)[:7, 7:]
    import scipy.sparse as sp

    for mat in (counts, sp.csr_matrix(counts)):
        got = expression_factor_correlation(mat, Z, normalize=True, cells=cells)
        np.testing.assert_allclose(got, expected, atol=1e-10)
    with pytest.raises(ValueError, match="boolean mask of length 50"):
        expression_factor_correlation(counts, Z, normalize=True, cells=cells[:10])


def test_orient_factors_flips_programmes_to_go_up_and_changes_nothing_else(unoriented):
    model = unoriented
    active = model.active_factors()
    assert len(active) >= 2
    Z0, W0 = model.get_latent_representation(), model.get_loadings()
    P0, eta0 = model.get_inclusion_probabilities(), model.get_factor_weights()
    X0 = model.get_normalized_expression(return_numpy=True)

    signs = model.orient_factors()
    s = signs.to_numpy()
    np.testing.assert_array_equal(model.get_latent_representation(), Z0 * s)
    np.testing.assert_array_equal(model.get_loadings().to_numpy(), W0.to_numpy() * s)
    np.testing.assert_array_equal(model.get_inclusion_probabilities().to_numpy(), P0.to_numpy())
    np.testing.assert_array_equal(model.get_factor_weights().to_numpy(), eta0.to_numpy())
    np.testing.assert_allclose(model.get_normalized_expression(return_numpy=True), X0, rtol=1e-5, atol=1e-7)

    # afterwards each factor's top genes (10 largest |w| with p* > 0.5), weighted by |w|, go up with it (a factor
    # fitted to a mix of programmes can keep other genes going down); the correlations read back through scsparse.tl
    absw = np.abs(W0.to_numpy())
    candidates = np.where(P0.to_numpy() > 0.5, absw, 0.0)
    top = candidates >= np.sort(candidates, axis=0)[-10][None, :]
    weight = np.where(top & (candidates > 0), absw, 0.0)
    before = (weight * expression_factor_correlation(model.adata.layers["counts"], Z0, normalize=True)).sum(0)
    model.write_results(key_added="sv")
    r = scsparse.tl.factor_gene_correlation(model.adata, key="sv").to_numpy()
    after = (weight * r).sum(0)
    assert (after[weight.any(0)] > 0).all(), after
    np.testing.assert_allclose(after, np.abs(before), atol=1e-9)
    np.testing.assert_array_equal(s, np.where(before < 0, -1, 1))
    assert model.adata.uns["sv"]["factors_oriented"]

    # idempotent; a factor flipped by hand is flipped back, and only that one
    assert (model.orient_factors() == 1).all()
    k = model.factor_names.index(active[0])
    by_hand = torch.ones(model.module.n_latent)
    by_hand[k] = -1.0
    model.module.flip_factors(by_hand)
    again = model.orient_factors()
    assert again.iloc[k] == -1 and (again.drop(again.index[k]) == 1).all()
    np.testing.assert_allclose(model.get_latent_representation(), Z0 * s, rtol=1e-6, atol=1e-6)


def test_returned_tables_are_copies_not_views_of_the_model(unoriented):
    W, P, eta = unoriented.get_loadings(), unoriented.get_inclusion_probabilities(), unoriented.get_factor_weights()
    W.iloc[:, :] = 99.0
    P.iloc[:, :] = 99.0
    eta.iloc[:] = 99.0
    assert float(unoriented.module.decoder.W.detach().abs().max()) < 99.0
    assert float(unoriented.module.prior.p_star.max()) <= 1.0
    assert float(unoriented.module.prior.eta.max()) <= 1.0


def test_train_orients_by_default_and_records_it(tmp_path, counts_factory, unoriented):
    oriented = _fit(counts_factory, orient=True)
    assert oriented.factors_oriented_ and oriented.train_kwargs_["orient"]
    # the same seed gives the same fit; train() ends with what orient_factors() does by hand
    unoriented_copy = unoriented  # a fit of its own with orient=False (the module's, loaded afresh)
    assert not unoriented_copy.factors_oriented_
    unoriented_copy.orient_factors()
    np.testing.assert_array_equal(oriented.get_latent_representation(), unoriented_copy.get_latent_representation())

    oriented.save(tmp_path / "m")
    loaded = SparseVAE.load(tmp_path / "m", adata=oriented.adata)
    assert loaded.factors_oriented_
    np.testing.assert_array_equal(loaded.get_latent_representation(), oriented.get_latent_representation())
    assert (loaded.orient_factors() == 1).all()


def test_orient_factors_needs_a_trained_model(counts_factory):
    adata = counts_factory(50, 10, 2)
    SparseVAE.setup_anndata(adata, layer="counts")
    with pytest.raises(scsparse.model.InvalidInputError, match="not trained"):
        SparseVAE(adata, n_latent=2).orient_factors()
