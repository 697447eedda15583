import inspect
import math
import warnings

import numpy as np
import pytest
import torch
from scipy.special import gammaln

from scsparse.generic.metrics import fold_in_evaluate
from scsparse.generic.models import (
    NMF,
    VAE,
    ArrayModel,
    ArraySparseVAE,
    BetaVAE,
    DenseVAEModule,
    SparseVAEArrayModule,
    feature_variances,
)
from scsparse.nn import NoActiveFactorWarning, calibrate_inverse_gamma

N_TRAIN, N_TEST, N_FEATURES, N_FACTORS = 600, 200, 20, 3
FAST = {"n_latent": 4, "n_hidden": 32, "lr": 1e-2, "max_epochs": 40}


# --------------------------------------------------------------------------------------------------------
# data: a 3-factor model, each feature driven by one factor


@pytest.fixture(scope="module")
def data() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    n = N_TRAIN + N_TEST
    z = rng.normal(size=(n, N_FACTORS))
    owner = np.arange(N_FEATURES) % N_FACTORS
    loading = rng.uniform(0.8, 1.5, size=N_FEATURES)
    normal = z[:, owner] * loading + 0.3 * rng.normal(size=(n, N_FEATURES))
    counts = rng.poisson(np.exp(1.0 + 0.8 * z[:, owner]))
    binary = rng.uniform(size=(n, N_FEATURES)) < 1.0 / (1.0 + np.exp(-2.5 * z[:, owner]))
    out = {}
    for name, x in (("normal", normal), ("multinomial", counts), ("bernoulli", binary)):
        x = x.astype(np.float32)
        out[name] = (x[:N_TRAIN], x[N_TRAIN:])
    return out


def trivial_nll(likelihood: str, train: np.ndarray, test: np.ndarray) -> float:
    """Exact held-out NLL per row of the independent per-feature model fitted on the training rows."""
    train, test = train.astype(np.float64), test.astype(np.float64)
    if likelihood == "normal":  # independent Gaussians, maximum-likelihood mean and variance
        mean, var = train.mean(0), train.var(0)
        return float((0.5 * np.log(2 * np.pi * var) + (test - mean) ** 2 / (2 * var)).sum(1).mean())
    if likelihood == "multinomial":  # one multinomial with the training frequencies
        p = train.sum(0) / train.sum()
        n = test.sum(1)
        return float(-(gammaln(n + 1) - gammaln(test + 1).sum(1) + (test * np.log(p)).sum(1)).mean())
    p = train.mean(0)  # independent Bernoullis with the training frequencies
    return float(-(test * np.log(p) + (1 - test) * np.log1p(-p)).sum(1).mean())


LIKELIHOODS = ("normal", "multinomial", "bernoulli")


# --------------------------------------------------------------------------------------------------------
# the torch models beat the trivial baseline on held-out likelihood


@pytest.mark.parametrize("likelihood", LIKELIHOODS)
@pytest.mark.parametrize("cls", [VAE, ArraySparseVAE])
def test_torch_models_beat_trivial_baseline(cls, likelihood, data):
    train, test = data[likelihood]
    model = cls(likelihood=likelihood, **FAST).fit(train)
    assert isinstance(model, ArrayModel)
    assert len(model.history_.loss) == FAST["max_epochs"] and np.all(np.isfinite(model.history_.loss))
    nll = model.heldout_nll(test, n_samples=50)
    baseline = trivial_nll(likelihood, train, test)
    print(f"{cls.__name__} {likelihood}: held-out NLL {nll:.3f} vs trivial {baseline:.3f}")
    assert np.isfinite(nll)
    assert nll < baseline - 1.0
    # shapes of the interface
    codes = model.transform(test)
    assert codes.shape == (N_TEST, FAST["n_latent"]) and np.all(np.isfinite(codes))
    mean = model.predict_mean(test)
    assert mean.shape == test.shape and np.all(np.isfinite(mean))
    if likelihood == "multinomial":
        np.testing.assert_allclose(mean.sum(1), 1.0, rtol=1e-5)
    if likelihood == "bernoulli":
        assert np.all((mean > 0) & (mean < 1))
    if cls is VAE:
        assert model.loadings() is None


def test_heldout_nll_is_reproducible_and_below_the_elbo(data):
    train, test = data["normal"]
    model = VAE(likelihood="normal", **{**FAST, "max_epochs": 10}).fit(train)
    a, b = model.heldout_nll(test, n_samples=30), model.heldout_nll(test, n_samples=30)
    assert a == b
    # -log p(x) estimated by importance sampling is below the negative ELBO (averaged over draws)
    x = torch.as_tensor(test)
    model.module.eval()
    with torch.no_grad():
        torch.manual_seed(0)
        neg_elbo = np.mean([float(model.module.loss(x, n_obs=1)) for _ in range(20)])
    assert a < neg_elbo


# --------------------------------------------------------------------------------------------------------
# beta-VAE


def test_beta_vae_weights_the_kl(data):
    train, _ = data["normal"]
    assert BetaVAE().beta == 4.0
    model = BetaVAE(likelihood="normal", **{**FAST, "max_epochs": 2}).fit(train)
    module = model.module
    assert isinstance(module, DenseVAEModule) and module.kl_weight == 4.0
    x = torch.as_tensor(train[:64])
    module.eval()
    with torch.no_grad():
        torch.manual_seed(1)
        loss = module.loss(x, n_obs=N_TRAIN)
        torch.manual_seed(1)
        terms = module.loss_terms(x)
    assert terms["penalty"] is None
    assert float(loss) == pytest.approx(float((terms["rec"] + 4.0 * terms["kl"]).mean()), rel=1e-6)
    assert np.isfinite(model.heldout_nll(train[:50], n_samples=10))


# --------------------------------------------------------------------------------------------------------
# sparse VAE on arrays


@pytest.fixture(scope="module")
def sparse_normal(data) -> ArraySparseVAE:
    train, _ = data["normal"]
    return ArraySparseVAE(likelihood="normal", n_latent=5, n_hidden=32, lr=1e-2, max_epochs=5).fit(train)


def test_sparse_vae_em_state_is_consistent(sparse_normal):
    model = sparse_normal
    prior = model.module.prior
    W, p_star, eta = model.loadings(), model.inclusion_probabilities(), model.slab_probabilities()
    assert W.shape == p_star.shape == (N_FEATURES, 5) and eta.shape == (5,)
    assert np.all((p_star >= 0) & (p_star <= 1))
    # after the last step: eta is the closed-form update of the stored p*
    np.testing.assert_allclose(eta, prior.eta_update(prior.p_star).numpy(), rtol=1e-6)
    # p* is the E-step at the W of the last step, under the eta that preceded the update: at least the
    # support ordering is that of |W| within each column
    for k in range(5):
        order = np.argsort(np.abs(W[:, k]))
        assert np.all(np.diff(p_star[order, k]) >= -1e-6)
    active = model.active_factors()
    assert set(active.tolist()) <= set(range(5))
    np.testing.assert_array_equal(active, np.flatnonzero((p_star > 0.5).sum(0) >= 1))


def test_sparse_vae_variance_prior_is_calibrated_on_training_data(sparse_normal, data):
    train, _ = data["normal"]
    xi = calibrate_inverse_gamma(train.astype(np.float64).var(0, ddof=1), nu=3.0)
    assert sparse_normal.sigma_prior_xi_ == pytest.approx(xi)
    assert sparse_normal.module.sigma_prior_xi == pytest.approx(xi)
    np.testing.assert_allclose(feature_variances(train), train.astype(np.float64).var(0, ddof=1))


def test_sparse_vae_loss_decomposition_and_n_obs_scaling(sparse_normal, data):
    module: SparseVAEArrayModule = sparse_normal.module
    module.eval()
    x = torch.as_tensor(data["normal"][0][:128])

    after_warmup = module.kl_warmup_epochs + 1

    def loss_at(n_obs: int, epoch: int = after_warmup) -> float:
        torch.manual_seed(3)
        with torch.no_grad():
            return float(module.loss(x, n_obs=n_obs, epoch=epoch))

    torch.manual_seed(3)
    with torch.no_grad():
        terms = module.loss_terms(x)
    # the penalty, computed independently: SSL term with p* held fixed + inverse-gamma prior on variances
    prior, W = module.prior, module.decoder.W.detach()
    lam = prior.lambda1 * prior.p_star + prior.lambda0 * (1 - prior.p_star)
    ssl = float((lam * W.abs()).sum())
    alpha, beta = 1.5, 1.5 * module.sigma_prior_xi
    log_var = module.observation.log_var.detach()
    ig = float(((alpha + 1) * log_var + beta * torch.exp(-log_var)).sum())
    assert float(terms["penalty"]) == pytest.approx(ssl + ig, rel=1e-5)
    per_row = float((terms["rec"] + terms["kl"]).mean())
    assert loss_at(N_TRAIN) == pytest.approx(per_row + (ssl + ig) / N_TRAIN, rel=1e-5)
    # during the KL warm-up (first epoch: weight 0) only the reconstruction and the penalty count
    assert module.kl_warmup_epochs > 0
    rec_only = float(terms["rec"].mean()) + (ssl + ig) / N_TRAIN
    assert loss_at(N_TRAIN, epoch=0) == pytest.approx(rec_only, rel=1e-5)
    # the penalty is divided by the number of training rows, not by the batch size
    assert loss_at(10) - loss_at(1000) == pytest.approx((ssl + ig) * (1 / 10 - 1 / 1000), rel=1e-4)


def test_array_sparse_vae_differs_from_the_scvi_tools_model_as_its_docstring_says(data):
    """No first-layer bias unless asked for, and the prior weighed against every training row, also beyond the
    10,000 cells the scvi-tools model's default max_prior_cells stops at."""
    assert "max_prior_cells" not in inspect.signature(ArraySparseVAE).parameters
    module = SparseVAEArrayModule(N_FEATURES, 3, n_hidden=8).double().eval()
    assert module.decoder.first_bias is None
    biased = SparseVAEArrayModule(N_FEATURES, 3, n_hidden=8, decoder_kwargs={"first_bias": True})
    assert biased.decoder.first_bias is not None
    x = torch.as_tensor(data["normal"][0][:64], dtype=torch.float64)

    def loss_at(n_obs: int) -> float:
        torch.manual_seed(3)
        with torch.no_grad():
            return float(module.loss(x, n_obs=n_obs))

    penalty = float(module.global_penalty())
    assert loss_at(20_000) - loss_at(40_000) == pytest.approx(penalty * (1 / 20_000 - 1 / 40_000), rel=1e-6)


def test_sparse_vae_same_seed_same_codes(data):
    train, test = data["multinomial"]
    kwargs = {"likelihood": "multinomial", "n_latent": 3, "n_hidden": 16, "max_epochs": 3, "batch_size": 100}
    a = ArraySparseVAE(seed=4, **kwargs).fit(train)
    b = ArraySparseVAE(seed=4, **kwargs).fit(train)
    c = ArraySparseVAE(seed=5, **kwargs).fit(train)
    np.testing.assert_array_equal(a.transform(test), b.transform(test))
    np.testing.assert_array_equal(a.inclusion_probabilities(), b.inclusion_probabilities())
    assert not np.allclose(a.transform(test), c.transform(test))


def test_sparse_vae_warns_when_no_factor_stays_active(data):
    train, _ = data["normal"]
    kwargs = {"n_latent": 3, "n_hidden": 8, "max_epochs": 1, "lr": 1e-8, "batch_size": 100}
    spike = {"w_init": 0.0, "w_init_noise": 0.0}  # p* = 0.09 at eta = 0.5, and W cannot move at this rate
    expected = r"6 optimiser steps on 600 training rows.*lambda0 = 5 and lambda1 = 0\.001.*\|w\| > 1\.70"
    with pytest.warns(NoActiveFactorWarning, match=expected):
        model = ArraySparseVAE(decoder_kwargs=spike, lambda0=5.0, lambda1=0.001, **kwargs).fit(train)
    assert model.active_factors().size == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoActiveFactorWarning)
        model = ArraySparseVAE(decoder_kwargs={"w_init": 1.0, "w_init_noise": 0.0}, **kwargs).fit(train)
    assert model.active_factors().size == 3


def test_models_reject_data_that_do_not_fit_the_likelihood(data):
    with pytest.raises(ValueError, match="counts"):
        ArraySparseVAE(likelihood="multinomial").fit(data["normal"][0])
    with pytest.raises(ValueError, match="binary"):
        VAE(likelihood="bernoulli").fit(data["multinomial"][0])
    with pytest.raises(ValueError, match="likelihood"):
        VAE(likelihood="zinb")
    with pytest.raises(RuntimeError, match="not fitted"):
        ArraySparseVAE().loadings()


# --------------------------------------------------------------------------------------------------------
# NMF


@pytest.mark.parametrize("likelihood", ["multinomial", "poisson"])
def test_nmf_count_likelihoods_by_hand(likelihood, data):
    train, test = data["multinomial"]
    model = NMF(n_components=3, likelihood=likelihood, max_iter=300).fit(train)
    H = model.transform(test)
    comps = model.loadings().T
    assert H.shape == (N_TEST, 3) and comps.shape == (3, N_FEATURES) and np.all(H >= 0)
    r = H @ comps
    np.testing.assert_allclose(model.predict_mean(test), r)
    x = test.astype(np.float64)
    if likelihood == "multinomial":
        p = np.maximum(r / r.sum(1, keepdims=True), 1e-10)
        p /= p.sum(1, keepdims=True)
        n = x.sum(1)
        ll = gammaln(n + 1) - gammaln(x + 1).sum(1) + (x * np.log(p)).sum(1)
        nll = model.heldout_nll(test)
        assert nll == pytest.approx(-ll.mean(), rel=1e-6)
        print(f"NMF multinomial: held-out NLL {nll:.3f} vs trivial {trivial_nll('multinomial', train, test):.3f}")
    else:
        rate = np.maximum(r, 1e-10)
        ll = (x * np.log(rate + 1e-8) - rate - gammaln(x + 1)).sum(1)
        assert model.heldout_nll(test) == pytest.approx(-ll.mean(), rel=1e-6)


def test_nmf_normal_uses_training_residual_variance(data):
    rng = np.random.default_rng(1)
    X = np.abs(data["normal"][0]) + 0.1 * rng.uniform(size=(N_TRAIN, N_FEATURES))
    train, test = X[:500], X[500:]
    model = NMF(n_components=3, likelihood="normal", max_iter=300).fit(train)
    resid = train - model.transform(train) @ model.loadings().T
    # the variance is from the codes of the fit (close to, not exactly, those of a fresh transform)
    np.testing.assert_allclose(model.residual_var_, (resid**2).mean(0), rtol=0.05)
    r = model.predict_mean(test)
    var = model.residual_var_
    ll = (-0.5 * (np.log(2 * math.pi * var) + (test - r) ** 2 / var)).sum(1)
    assert model.heldout_nll(test) == pytest.approx(-ll.mean(), rel=1e-6)
    with pytest.raises(ValueError, match="non-negative"):
        NMF(likelihood="normal").fit(data["normal"][0])


# --------------------------------------------------------------------------------------------------------
# fold-in protocol with a real model


def test_fold_in_evaluate_with_a_vae(data):
    train, test = data["bernoulli"]
    model = VAE(likelihood="bernoulli", **{**FAST, "max_epochs": 15}).fit(train)
    res = fold_in_evaluate(model, test, k=(5, 10))
    assert 0 < res["n_users"] <= N_TEST
    for key in ("recall@5", "ndcg@10"):
        assert 0.0 <= res[key] <= 1.0
    # the model beats ranking by training popularity
    popularity = type("Pop", (), {"predict_mean": lambda self, X: np.tile(train.mean(0), (len(X), 1))})()
    pop = fold_in_evaluate(popularity, test, k=(5, 10))
    assert res["ndcg@10"] > pop["ndcg@10"]


def test_training_objective_is_reproducible_falls_with_training_and_spares_the_rng():
    from scsparse.generic.models import OIVAE

    rng = np.random.default_rng(0)
    z = rng.normal(size=(256, 2))
    X = (z @ rng.normal(size=(2, 6)) + 0.1 * rng.normal(size=(256, 6))).astype(np.float32)
    short = VAE(n_latent=2, max_epochs=1, lr=1e-2, seed=1).fit(X)
    long = VAE(n_latent=2, max_epochs=40, lr=1e-2, seed=1).fit(X)
    torch.manual_seed(123)
    expected_next = torch.rand(1)
    torch.manual_seed(123)
    value = long.training_objective(X)
    assert torch.equal(torch.rand(1), expected_next)  # the global RNG is left as it was
    assert value == long.training_objective(X)  # seeded: the same value again
    assert value < short.training_objective(X) - 0.5  # training lowered it
    # oi-VAE's objective carries its group lasso: a larger lambda gives a larger value at the same weights
    oi = OIVAE(np.repeat(np.arange(3), 2), n_latent=2, max_epochs=2, seed=0).fit(X)
    base = oi.training_objective(X)
    oi.module.lambda_ = oi.module.lambda_ + 1.0
    assert oi.training_objective(X) > base
    with pytest.raises(ValueError, match="n_passes must be a positive integer"):
        long.training_objective(X, n_passes=0)
    with pytest.raises(RuntimeError, match="not fitted"):
        VAE(n_latent=2).training_objective(X)


@pytest.mark.parametrize("method", ["transform", "predict_mean", "heldout_nll", "training_objective"])
def test_rows_with_other_features_than_fit_get_a_clear_error(method):
    X = np.random.default_rng(0).normal(size=(64, 5)).astype(np.float32)
    model = VAE(n_latent=2, max_epochs=1).fit(X)
    assert model.n_features_in_ == 5
    with pytest.raises(ValueError, match="X has 4 features but VAE was fitted on 5; pass the same features"):
        getattr(model, method)(X[:, :4])
