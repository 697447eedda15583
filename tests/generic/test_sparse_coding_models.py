"""OIVAE, VSC and ThresholdedVSC on small synthetic problems (each fit takes a few seconds on one thread)."""

import math

import numpy as np
import pytest
import torch

from scsparse.generic.models._oivae import OIVAE
from scsparse.generic.models._tvsc import ThresholdedVSC
from scsparse.generic.models._vsc import VSC
from scsparse.generic.nn._group_lasso import group_column_norms

N_TRAIN, N_TEST = 600, 300


def sparse_linear_data(p_on: float = 1.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """20 features from a 3-factor linear model with sparse loadings (each feature sees one factor,
    the last 5 see two); ``p_on < 1`` makes the factors sparse too (each is zero with prob. 1 - p_on)."""
    rng = np.random.default_rng(seed)
    n = N_TRAIN + N_TEST
    z = rng.normal(size=(n, 3)) * (rng.random((n, 3)) < p_on)
    w = np.zeros((20, 3))
    w[0:5, 0] = rng.uniform(1, 2, 5)
    w[5:10, 1] = rng.uniform(1, 2, 5)
    w[10:15, 2] = rng.uniform(1, 2, 5)
    w[15:20, 0] = rng.uniform(1, 2, 5)
    w[15:20, 1] = rng.uniform(0.5, 1, 5)
    x = (z @ w.T + 0.3 * rng.normal(size=(n, 20))).astype(np.float32)
    return x[:N_TRAIN], x[N_TRAIN:]


GROUPS = np.repeat(["a", "b", "c", "d"], 5)  # 4 feature groups of 5


def gaussian_baseline_nll(x_train: np.ndarray, x_test: np.ndarray) -> float:
    """Held-out NLL per row of independent per-feature Gaussians fitted to the training rows."""
    m, s2 = x_train.mean(0), x_train.var(0)
    return float(np.mean(np.sum(0.5 * np.log(2 * np.pi * s2) + 0.5 * (x_test - m) ** 2 / s2, axis=1)))


def bars(n: int, side: int, seed: int = 0) -> np.ndarray:
    """``side x side`` images with one random row at 0.5 plus N(0, 0.05^2) noise (oi-VAE's bars data)."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, side, side))
    x[np.arange(n), rng.integers(0, side, n), :] = 0.5
    x += 0.05 * rng.normal(size=x.shape)
    return x.reshape(n, -1).astype(np.float32)


# -- OI-VAE --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def oivae_fit():
    x_train, x_test = sparse_linear_data()
    model = OIVAE(GROUPS, n_latent=5, n_hidden=32, lambda_=1.0, lr=1e-2, max_epochs=50, batch_size=64).fit(x_train)
    return model, x_train, x_test


def test_oivae_beats_the_gaussian_baseline(oivae_fit):
    model, x_train, x_test = oivae_fit
    nll, base = model.heldout_nll(x_test), gaussian_baseline_nll(x_train, x_test)
    print(f"OIVAE held-out NLL {nll:.2f} vs per-feature Gaussian {base:.2f}")
    assert nll < base - 10.0
    assert model.nll_is_bound is False


def test_oivae_outputs(oivae_fit):
    model, _, x_test = oivae_fit
    loadings = model.loadings()
    assert loadings.shape == (4, 5)
    np.testing.assert_allclose(loadings, group_column_norms(model.module.W).detach().numpy())
    assert list(model.group_names_) == ["a", "b", "c", "d"]
    assert model.transform(x_test).shape == (N_TEST, 5)
    assert (loadings == 0).any()  # the proximal steps give exact zeros
    assert len(model.history_.loss) == 50 and all(math.isfinite(v) for v in model.history_.loss)


def test_oivae_decoder_respects_the_groups():
    # with W^(g) = 0 for every group but one, only that group's features depend on z
    torch.manual_seed(0)
    model = OIVAE(GROUPS, n_latent=3, n_hidden=8, max_epochs=1).fit(sparse_linear_data()[0])
    module = model.module
    with torch.no_grad():
        module.W[1:] = 0.0
        z1, z2 = torch.randn(4, 3), torch.randn(4, 3)
        d = (module.decode(z1) - module.decode(z2))[0].abs()
    assert (d[:, :5] > 0).all()  # group "a" = features 0-4
    assert (d[:, 5:] == 0).all()


@pytest.mark.parametrize("prox_scaling", ["lr", "adam"])
def test_oivae_prunes_unneeded_factors_on_bars(prox_scaling):
    side, k = 6, 10  # 6 groups (image rows); at most 6 factors are needed
    x = bars(512, side)
    groups = np.repeat(np.arange(side), side)
    model = OIVAE(
        groups,
        n_latent=k,
        p=5,
        n_layers=0,
        lambda_=1.0,
        prox_scaling=prox_scaling,
        lr=1e-2,
        max_epochs=60,
        batch_size=64,
    ).fit(x)
    totals = np.sort(model.loadings().sum(axis=0))[::-1]  # per-factor sum over groups of ||W^(g)[:, k]||
    print(f"OIVAE bars ({prox_scaling}): per-factor loading totals", np.round(totals, 3))
    used, extra = totals[:side], totals[side:]
    assert totals[0] > 0.1
    assert extra.max() < 0.05 * totals[0]  # at least k - 6 factors pruned, by a clear margin
    assert (totals < 0.05 * totals[0]).sum() >= k - side
    assert used.max() > 10 * extra.max() + 1e-12


def test_oivae_validates_groups():
    with pytest.raises(ValueError, match="groups"):
        OIVAE(np.arange(5), n_latent=2, max_epochs=1).fit(np.zeros((10, 6), dtype=np.float32))


# -- VSC -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def vsc_fit():
    x_train, x_test = sparse_linear_data(p_on=0.3)
    # alpha is per latent dimension: alpha * K is the prior number of active dimensions per row
    # (the paper's 0.01 was for K ~ 200); the data have ~0.9 active factors per row.
    model = VSC(n_latent=6, alpha=0.2, n_pseudo_inputs=20, n_hidden=32, lr=1e-2, max_epochs=40, batch_size=64)
    return model.fit(x_train), x_train, x_test


def test_vsc_elbo_bound_beats_the_gaussian_baseline(vsc_fit):
    model, x_train, x_test = vsc_fit
    torch.manual_seed(0)
    bound = model.heldout_nll(x_test)
    iw_bound = model.heldout_nll(x_test, importance_weighted=True)
    base = gaussian_baseline_nll(x_train, x_test)
    print(f"VSC held-out -ELBO {bound:.2f}, importance-weighted {iw_bound:.2f} vs per-feature Gaussian {base:.2f}")
    assert model.nll_is_bound is True
    assert bound < base - 3.0  # the bound is conservative: the true NLL is lower still
    assert iw_bound < bound + 0.2  # the importance-weighted bound is tighter (up to Monte Carlo noise)


def test_vsc_transform_is_gamma_times_mu(vsc_fit):
    model, _, x_test = vsc_fit
    codes = model.transform(x_test)
    with torch.no_grad():
        mu, _, gamma = model.module.posterior(torch.as_tensor(x_test))
    np.testing.assert_allclose(codes, (gamma * mu).numpy(), rtol=1e-5, atol=1e-6)
    g = model.spike_probabilities(x_test)
    assert g.shape == (N_TEST, 6) and (g > 0).all() and (g < 1).all()


def test_vsc_schedules():
    model = VSC(n_latent=2, n_pseudo_inputs=0, spike_warmup=(0.2, 0.4), n_hidden=4, max_epochs=2)
    model.fit(np.random.default_rng(0).normal(size=(32, 3)), max_epochs=10)
    module = model.module
    assert module.c_at(0) == 50.0 and module.c_at(9) == 200.0 and 50.0 < module.c_at(5) < 200.0
    assert [module.warmup_at(e) for e in (0, 1, 2, 3, 4, 9)] == [0.0, 0.0, 0.0, 0.5, 1.0, 1.0]


def test_vsc_fixed_prior_kl_is_the_spike_slab_kl():
    # no pseudo-inputs: KL to alpha N(0, 1) + (1 - alpha) delta_0, zero for a posterior equal to it
    model = VSC(n_latent=3, n_pseudo_inputs=0, alpha=0.05, n_hidden=4, max_epochs=1)
    model.fit(np.random.default_rng(0).normal(size=(16, 4)))
    zeros = torch.zeros(2, 3)
    kl, sparsity = model.module.kl_terms(torch.zeros(2, 4), zeros, zeros, torch.full((2, 3), 0.05))
    torch.testing.assert_close(kl, torch.zeros(2))
    assert torch.equal(sparsity, torch.zeros(2))


# -- thresholded VSC -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sparse_data():
    return sparse_linear_data(p_on=0.3)


@pytest.mark.parametrize(
    "config",
    [
        {"base": "laplace", "threshold": "fixed", "generator": "neural"},
        {"base": "laplace", "threshold": "gamma", "generator": "neural"},
        {"base": "laplace", "threshold": "fixed", "generator": "linear"},
    ],
    ids=["laplace-fixed-neural", "laplace-gamma-neural", "laplace-fixed-linear"],
)
def test_thresholded_vsc_beats_the_gaussian_baseline(sparse_data, config):
    x_train, x_test = sparse_data
    model = ThresholdedVSC(n_latent=6, n_hidden=32, lr=3e-3, max_epochs=40, batch_size=64, **config).fit(x_train)
    torch.manual_seed(0)
    nll, base = model.heldout_nll(x_test, n_samples=500), gaussian_baseline_nll(x_train, x_test)
    codes = model.sparse_codes(x_test)
    print(f"ThresholdedVSC {config}: held-out NLL {nll:.2f} vs {base:.2f}, zero fraction {(codes == 0).mean():.3f}")
    assert nll < base - 2.0
    assert model.nll_is_bound is False
    assert 0.5 < (codes == 0).mean() < 0.99  # exactly sparse codes, ~90% zeros a priori
    means = model.transform(x_test)
    assert means.shape == (N_TEST, 6) and np.isfinite(means).all()
    if config["generator"] == "linear":
        dictionary = model.loadings()
        assert dictionary.shape == (20, 6)
        np.testing.assert_allclose(dictionary, model.module.decoder.weight.detach().numpy())
    else:
        assert model.loadings() is None


def test_thresholded_vsc_with_zero_threshold_is_the_base_model(sparse_data):
    x_train, x_test = sparse_data
    model = ThresholdedVSC(n_latent=4, base="gaussian", lambda_=0.0, n_samples_max_elbo=1, n_hidden=16, max_epochs=2)
    model.fit(x_train)
    assert (model.sparse_codes(x_test) != 0).all()
    with torch.no_grad():
        loc = model.module.posterior(torch.as_tensor(x_test))[0].numpy()
    np.testing.assert_allclose(model.transform(x_test), loc, rtol=1e-6)  # P(z != 0) = 1


def test_thresholded_vsc_transform_is_the_posterior_mean(sparse_data):
    x_train, x_test = sparse_data
    for base in ("gaussian", "laplace"):
        model = ThresholdedVSC(n_latent=3, base=base, n_hidden=16, max_epochs=1).fit(x_train)
        x = torch.as_tensor(x_test[:2])
        torch.manual_seed(0)
        with torch.no_grad():
            loc, scale, _, _ = model.module.posterior(x)
            from scsparse.generic.nn._sparse_codes import sample_base, shifted_soft_threshold

            s = sample_base(base, loc, scale, (200_000,))
            mc = shifted_soft_threshold(s, loc, model.lambda_).mean(0).numpy()
        np.testing.assert_allclose(model.transform(x_test[:2]), mc, atol=0.01)


def test_thresholded_vsc_max_elbo_keeps_the_best_sample(sparse_data):
    x_train, x_test = sparse_data
    model = ThresholdedVSC(n_latent=4, n_hidden=16, n_samples_max_elbo=5, max_epochs=1).fit(x_train)
    x = torch.as_tensor(x_test[:50])
    one = model.sparse_codes(x_test[:50], n_samples=1, seed=3)
    many = model.sparse_codes(x_test[:50], n_samples=50, seed=3)
    with torch.no_grad():
        lp_one = model.module.obs.log_prob(x, model.module.decode(torch.as_tensor(one)))
        lp_many = model.module.obs.log_prob(x, model.module.decode(torch.as_tensor(many)))
    assert (lp_many >= lp_one - 1e-4).all()  # the first of the 50 draws is the single draw
    np.testing.assert_array_equal(many, model.sparse_codes(x_test[:50], n_samples=50, seed=3))  # seeded


def test_thresholded_vsc_validates_arguments():
    with pytest.raises(ValueError):
        ThresholdedVSC(base="cauchy")
    with pytest.raises(ValueError):
        ThresholdedVSC(threshold="gamma", lambda_=0.0)
    with pytest.raises(ValueError):
        ThresholdedVSC(generator="deep")
    assert ThresholdedVSC(base="gaussian").lambda_ == 0.52 and ThresholdedVSC(base="laplace").lambda_ == 0.25


# -- all models: other likelihoods, predict_mean -------------------------------------------------


MODEL_FACTORIES = {
    "oivae": lambda lik: OIVAE(GROUPS, n_latent=3, n_hidden=8, likelihood=lik, max_epochs=2),
    "vsc": lambda lik: VSC(n_latent=3, n_pseudo_inputs=4, n_hidden=8, likelihood=lik, max_epochs=2),
    "tvsc": lambda lik: ThresholdedVSC(n_latent=3, n_hidden=8, n_samples_max_elbo=3, likelihood=lik, max_epochs=2),
}


@pytest.mark.parametrize("likelihood", ["bernoulli", "multinomial", "normal"])
@pytest.mark.parametrize("name", sorted(MODEL_FACTORIES))
def test_models_run_with_every_array_likelihood(name, likelihood):
    rng = np.random.default_rng(0)
    if likelihood == "bernoulli":
        x = (rng.random((64, 20)) < 0.3).astype(np.float32)
    elif likelihood == "multinomial":
        x = rng.poisson(2.0, size=(64, 20)).astype(np.float32)
    else:
        x = rng.normal(size=(64, 20)).astype(np.float32)
    model = MODEL_FACTORIES[name](likelihood).fit(x)
    assert math.isfinite(model.heldout_nll(x, n_samples=7))
    mean = model.predict_mean(x)
    assert mean.shape == x.shape and np.isfinite(mean).all()
    if likelihood == "multinomial":
        np.testing.assert_allclose(mean.sum(1), 1.0, rtol=1e-5)
    if likelihood == "bernoulli":
        assert ((mean > 0) & (mean < 1)).all()
