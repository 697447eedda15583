import math

import numpy as np
import pytest
import torch
from scipy import stats
from torch.distributions import Gamma, Laplace, Normal, kl_divergence

from scsparse.generic.nn._sparse_codes import (
    base_kl,
    kl_gamma,
    kl_laplace,
    kl_normal,
    relaxed_spike_slab_sample,
    sample_base,
    shifted_soft_threshold,
    spike_slab_kl,
    spike_slab_log_prob,
    straight_through_spike_slab_sample,
    straight_through_threshold,
    threshold_for_nonzero_fraction,
    threshold_zero_probability,
    thresholded_laplace_gamma_log_prob,
    thresholded_log_prob,
)

N_MC = 200_000


# -- thresholded samples -------------------------------------------------------------------------


def test_shifted_soft_threshold_hand_values():
    s = torch.tensor([0.9, 1.1, 1.25, 1.5, 0.5, -2.0])
    z = shifted_soft_threshold(s, 1.0, 0.25)
    torch.testing.assert_close(z, torch.tensor([0.0, 0.0, 0.0, 1.25, 0.75, -1.75]))
    # mu = 0: the ordinary soft-threshold
    torch.testing.assert_close(
        shifted_soft_threshold(torch.tensor([-1.0, 0.2, 3.0]), 0.0, 0.5), torch.tensor([-0.5, 0.0, 2.5])
    )


@pytest.mark.parametrize(("b", "lam"), [(1.0, 0.5), (0.1, 0.25)])
def test_thresholded_laplace_zero_fraction(b, lam):
    torch.manual_seed(0)
    s = sample_base("laplace", torch.zeros(1), torch.full((1,), b), (N_MC,))
    z = shifted_soft_threshold(s, 0.0, lam)
    expected = 1.0 - math.exp(-lam / b)
    assert float((z == 0).float().mean()) == pytest.approx(expected, abs=0.005)
    assert float(threshold_zero_probability("laplace", b, lam)) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize(("loc", "sigma", "lam"), [(0.0, 1.0, 0.5), (0.7, math.sqrt(0.1), 0.52)])
def test_thresholded_gaussian_zero_fraction(loc, sigma, lam):
    torch.manual_seed(1)
    s = sample_base("gaussian", torch.full((1,), loc), torch.full((1,), sigma), (N_MC,))
    z = shifted_soft_threshold(s, loc, lam)
    expected = 2.0 * stats.norm.cdf(lam / sigma) - 1.0  # whatever the location
    assert float((z == 0).float().mean()) == pytest.approx(expected, abs=0.005)
    assert float(threshold_zero_probability("gaussian", sigma, lam)) == pytest.approx(expected, rel=1e-5)


def test_thresholded_laplace_slab_is_the_base_laplace():
    # Proposition 3.1: the non-zero values of T(s), s ~ Laplace(mu, b), are Laplace(mu, b) distributed
    torch.manual_seed(2)
    mu, b, lam = 0.4, 0.5, 0.3
    s = sample_base("laplace", torch.full((1,), mu), torch.full((1,), b), (50_000,))
    z = shifted_soft_threshold(s, mu, lam).numpy().ravel()
    nonzero = z[z != 0]
    assert stats.kstest(nonzero, stats.laplace(loc=mu, scale=b).cdf).pvalue > 1e-3


def test_threshold_helpers_are_inverse_and_match_the_paper_defaults():
    for base, scale in [("laplace", 0.1), ("gaussian", math.sqrt(0.1))]:
        lam = threshold_for_nonzero_fraction(base, scale, 0.1)
        assert float(threshold_zero_probability(base, scale, lam)) == pytest.approx(0.9, abs=1e-5)
    assert threshold_for_nonzero_fraction("gaussian", math.sqrt(0.1), 0.1) == pytest.approx(0.52, abs=0.005)
    assert 1 - float(threshold_zero_probability("laplace", 0.1, 0.25)) == pytest.approx(0.082, abs=0.001)


def test_straight_through_gradient_is_identity_in_s():
    torch.manual_seed(3)
    s = torch.randn(1000, requires_grad=True)
    loc = torch.randn(1000)
    z = straight_through_threshold(s, loc, 0.5)
    torch.testing.assert_close(z.detach(), shifted_soft_threshold(s.detach(), loc, 0.5))  # forward = T(s)
    assert (z == 0).any() and (z != 0).any()
    (jac,) = torch.autograd.grad(z.sum(), s)
    torch.testing.assert_close(jac, torch.ones_like(s))  # dz_i / ds_i = 1, also where z_i = 0
    weights = torch.randn(1000)
    (grad,) = torch.autograd.grad((weights * straight_through_threshold(s, loc, 0.5)).sum(), s)
    torch.testing.assert_close(grad, weights)  # diagonal Jacobian equal to the identity


def test_straight_through_passes_the_threshold_gradient():
    s = torch.tensor([2.0, -2.0, 0.1])
    lam = torch.full((3,), 0.5, requires_grad=True)
    z = straight_through_threshold(s, 0.0, lam)
    (g,) = torch.autograd.grad(z.sum(), lam)
    torch.testing.assert_close(g, torch.tensor([-1.0, 1.0, 0.0]))  # d T / d lambda = -sign(s - mu) if active


def test_laplace_sampler_is_laplace():
    torch.manual_seed(4)
    s = sample_base("laplace", torch.full((1,), -0.3), torch.full((1,), 2.0), (50_000,)).numpy().ravel()
    assert stats.kstest(s, stats.laplace(loc=-0.3, scale=2.0).cdf).pvalue > 1e-3


@pytest.mark.parametrize("base", ["laplace", "gaussian"])
def test_thresholded_log_prob_is_a_probability(base):
    loc, scale, lam = 0.3, 0.8, 0.4
    p0 = math.exp(float(thresholded_log_prob(torch.zeros(1), base, loc, scale, lam)))
    assert p0 == pytest.approx(float(threshold_zero_probability(base, scale, lam)), rel=1e-5)
    grid = torch.linspace(-12, 12, 400_001, dtype=torch.float64)
    grid = grid[grid != 0]
    dens = torch.exp(thresholded_log_prob(grid, base, loc, scale, lam))
    mass = float(torch.trapezoid(dens, grid))
    assert p0 + mass == pytest.approx(1.0, abs=1e-4)
    # lambda = 0: the base density
    base_dist = Laplace(loc, scale) if base == "laplace" else Normal(loc, scale)
    x = torch.tensor([-1.0, 0.5, 2.0])
    torch.testing.assert_close(thresholded_log_prob(x, base, loc, scale, 0.0), base_dist.log_prob(x))


@pytest.mark.parametrize("base", ["laplace", "gaussian"])
def test_thresholded_log_prob_matches_a_histogram(base):
    torch.manual_seed(5)
    loc, scale, lam = 0.3, 0.8, 0.4
    s = sample_base(base, torch.full((1,), loc), torch.full((1,), scale), (N_MC,))
    z = shifted_soft_threshold(s, loc, lam).ravel()
    edges = torch.tensor([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0])
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        grid = torch.linspace(float(a), float(b), 2001, dtype=torch.float64)
        grid = grid[grid != 0]
        expected = float(torch.trapezoid(torch.exp(thresholded_log_prob(grid, base, loc, scale, lam)), grid))
        observed = float(((z > a) & (z < b) & (z != 0)).float().mean())
        assert observed == pytest.approx(expected, abs=0.005)


def test_laplace_with_gamma_threshold_marginal_density():
    torch.manual_seed(10)
    loc, b, a, rate = -0.2, 0.5, 3.0, 12.0  # Gamma(3, 3 / 0.25)
    lam = Gamma(torch.tensor(a), torch.tensor(rate)).sample((N_MC,))
    s = sample_base("laplace", torch.full((N_MC,), loc), torch.full((N_MC,), b))
    z = shifted_soft_threshold(s, loc, lam)
    p0 = math.exp(float(thresholded_laplace_gamma_log_prob(torch.zeros(1), loc, b, a, rate)))
    assert p0 == pytest.approx(1 - (rate / (rate + 1 / b)) ** a, rel=1e-5)
    assert float((z == 0).float().mean()) == pytest.approx(p0, abs=0.005)
    for lo, hi in [(-2.0, -0.5), (-0.5, 0.0), (0.0, 1.0)]:
        grid = torch.linspace(lo, hi, 2001, dtype=torch.float64)
        grid = grid[grid != 0]
        expected = float(torch.trapezoid(torch.exp(thresholded_laplace_gamma_log_prob(grid, loc, b, a, rate)), grid))
        observed = float(((z > lo) & (z < hi) & (z != 0)).float().mean())
        assert observed == pytest.approx(expected, abs=0.005)


# -- KL divergences ------------------------------------------------------------------------------


def test_kls_match_torch():
    torch.manual_seed(6)
    mu, mu0 = torch.randn(50), torch.randn(50)
    sq, sp = torch.rand(50) + 0.1, torch.rand(50) + 0.1
    torch.testing.assert_close(
        kl_normal(mu, 2 * sq.log(), mu0, 2 * sp.log()), kl_divergence(Normal(mu, sq), Normal(mu0, sp))
    )
    torch.testing.assert_close(kl_laplace(mu, sq, mu0, sp), kl_divergence(Laplace(mu, sq), Laplace(mu0, sp)))
    torch.testing.assert_close(base_kl("laplace", mu, sq, 0.1), kl_divergence(Laplace(mu, sq), Laplace(0.0, 0.1)))
    torch.testing.assert_close(base_kl("gaussian", mu, sq, 0.3), kl_divergence(Normal(mu, sq), Normal(0.0, 0.3)))
    a, b = torch.rand(50) * 5 + 0.1, torch.rand(50) * 5 + 0.1
    torch.testing.assert_close(
        kl_gamma(a, b, 3.0, 12.0), kl_divergence(Gamma(a, b), Gamma(3.0, 12.0)), rtol=1e-4, atol=1e-5
    )


def test_spike_slab_kl_zero_at_the_prior_and_positive_elsewhere():
    alpha = 0.01
    k = 8
    zeros = torch.zeros(k)
    gamma = torch.full((k,), alpha)
    assert torch.equal(spike_slab_kl(zeros, zeros, gamma, 0.0, 0.0, alpha), torch.zeros(k))
    torch.manual_seed(7)
    for _ in range(20):
        mu = torch.randn(k) * 0.5
        log_var = torch.randn(k) * 0.5
        g = torch.rand(k).clamp(0.02, 0.98)
        assert (spike_slab_kl(mu, log_var, g, 0.0, 0.0, alpha) > 0).all()
    # each part alone moves it off zero
    assert (spike_slab_kl(zeros + 0.3, zeros, gamma, 0.0, 0.0, alpha) > 0).all()  # slab mean
    assert (spike_slab_kl(zeros, zeros + 0.3, gamma, 0.0, 0.0, alpha) > 0).all()  # slab variance
    assert (spike_slab_kl(zeros, zeros, gamma * 2, 0.0, 0.0, alpha) > 0).all()  # spike probability


def test_spike_slab_kl_equals_monte_carlo_with_exact_samples():
    torch.manual_seed(8)
    mu_q, lv_q, g_q = torch.tensor([0.5, -1.0]), torch.tensor([-0.5, 0.3]), torch.tensor([0.3, 0.8])
    mu_p, lv_p, g_p = torch.tensor([0.0, 0.2]), torch.tensor([0.0, -0.2]), torch.tensor([0.1, 0.5])
    z = relaxed_spike_slab_sample(mu_q, lv_q, g_q, c=math.inf, sample_shape=(N_MC,))
    mc = (spike_slab_log_prob(z, mu_q, lv_q, g_q) - spike_slab_log_prob(z, mu_p, lv_p, g_p)).mean(0)
    exact = spike_slab_kl(mu_q, lv_q, g_q, mu_p, lv_p, g_p)
    torch.testing.assert_close(mc, exact, atol=0.01, rtol=0.0)


def test_relaxed_sample_tends_to_exact_zeros_for_small_gamma_and_large_c():
    torch.manual_seed(9)
    n = 100_000
    mu, lv = torch.ones(n), torch.zeros(n)
    gamma = torch.full((n,), 1e-6)
    means = []
    for c in [50.0, 200.0, 1e4]:
        torch.manual_seed(9)
        z = relaxed_spike_slab_sample(mu, lv, gamma, c=c)
        means.append(float(z.abs().mean()))
    assert means[0] > means[1] > means[2]
    assert means[2] < 1e-3
    torch.manual_seed(9)
    assert float((relaxed_spike_slab_sample(mu, lv, gamma, c=1e4).abs() < 1e-3).float().mean()) > 0.99
    assert (relaxed_spike_slab_sample(mu, lv, gamma, c=math.inf) == 0).all()  # the limit: exact zeros
    # and the spike really is Bernoulli(gamma) in the limit
    z = relaxed_spike_slab_sample(mu, lv, torch.full((n,), 0.3), c=math.inf)
    assert float((z != 0).float().mean()) == pytest.approx(0.3, abs=0.01)
    # gamma -> 1: the slab sample itself
    z = relaxed_spike_slab_sample(mu, lv, torch.full((n,), 1 - 1e-6), c=1e4)
    assert float((z == 0).float().mean()) < 1e-3


def test_straight_through_spike_slab_is_exact_forward_and_relaxed_backward():
    n = 100_000
    mu = torch.full((n,), 2.0, requires_grad=True)
    gamma = torch.full((n,), 0.3, requires_grad=True)
    torch.manual_seed(4)
    z = straight_through_spike_slab_sample(mu, torch.full((n,), -200.0), gamma, tau=0.5)
    selector = (z != 0).float()
    # forward: exact zeros and exact slab values (no relaxation), with P(z != 0) = gamma
    assert set(torch.unique(z.detach()).tolist()) <= {0.0, 2.0}
    assert float(selector.mean()) == pytest.approx(0.3, abs=0.01)
    # same draw as the exact sampler's distribution: an independent exact sample agrees in mean
    exact = relaxed_spike_slab_sample(mu.detach(), torch.full((n,), -200.0), gamma.detach(), c=math.inf)
    assert float(exact.mean()) == pytest.approx(float(z.detach().mean()), abs=0.02)
    z.sum().backward()
    # backward: d z / d mu is the selector; d z / d gamma > 0 through the Gumbel-softmax relaxation
    torch.testing.assert_close(mu.grad, selector)
    assert bool((gamma.grad >= 0).all()) and float((gamma.grad > 0).float().mean()) > 0.99  # 0: saturated noise


def test_straight_through_spike_slab_gradient_sharpens_with_lower_temperature():
    gamma = torch.full((50_000,), 0.3, requires_grad=True)
    grads = []
    for tau in (1.0, 0.5):
        gamma.grad = None
        torch.manual_seed(5)
        z = straight_through_spike_slab_sample(torch.ones(50_000), torch.full((50_000,), -30.0), gamma, tau=tau)
        z.sum().backward()
        grads.append(gamma.grad.clone())
    # the relaxed selector's slope at the logit is 1/tau: lower temperature concentrates the gradient
    assert float(grads[1].max()) > float(grads[0].max())


def test_spike_slab_log_prob_hand_values():
    lp = spike_slab_log_prob(torch.tensor([0.0, 1.0]), torch.zeros(2), torch.zeros(2), torch.tensor([0.2, 0.2]))
    np.testing.assert_allclose(lp.numpy(), [math.log(0.8), math.log(0.2) + stats.norm.logpdf(1.0)], rtol=1e-5)
