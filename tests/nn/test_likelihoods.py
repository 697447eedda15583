import numpy as np
import torch
from scipy import stats
from scipy.special import gammaln

from scsparse.nn import calibrate_inverse_gamma, log_multinomial, log_normal, log_poisson
from scsparse.nn._likelihoods import log_nb, log_zinb

X = torch.tensor([0.0, 1.0, 3.0, 10.0], dtype=torch.float64)


def test_normal_matches_scipy():
    mean, log_var = torch.tensor(0.7, dtype=torch.float64), torch.tensor(np.log(2.5), dtype=torch.float64)
    expected = stats.norm.logpdf(X.numpy(), 0.7, np.sqrt(2.5))
    np.testing.assert_allclose(log_normal(X, mean, log_var).numpy(), expected, rtol=1e-10)


def test_poisson_matches_scipy():
    np.testing.assert_allclose(
        log_poisson(X, torch.tensor(2.3, dtype=torch.float64)).numpy(),
        stats.poisson.logpmf(X.numpy(), 2.3),
        rtol=1e-7,
    )


def test_nb_matches_scipy_and_sums_to_one():
    mu, theta = 4.0, 1.7
    got = log_nb(X, torch.tensor(mu, dtype=torch.float64), torch.tensor(theta, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(got, stats.nbinom.logpmf(X.numpy(), theta, theta / (theta + mu)), rtol=1e-7)
    support = torch.arange(0, 400, dtype=torch.float64)
    total = torch.exp(log_nb(support, torch.tensor(mu, dtype=torch.float64), torch.tensor(theta, dtype=torch.float64)))
    assert abs(total.sum().item() - 1) < 1e-6


def test_zinb_mixture():
    mu, theta, pi = 3.0, 2.0, 0.3
    logits = torch.tensor(np.log(pi / (1 - pi)), dtype=torch.float64)
    got = log_zinb(X, torch.tensor(mu, dtype=torch.float64), torch.tensor(theta, dtype=torch.float64), logits).numpy()
    nb = stats.nbinom.pmf(X.numpy(), theta, theta / (theta + mu))
    expected = np.log(np.where(X.numpy() == 0, pi + (1 - pi) * nb, (1 - pi) * nb))
    np.testing.assert_allclose(got, expected, rtol=1e-7)


def test_multinomial_matches_scipy():
    counts = np.array([[2.0, 0.0, 5.0], [1.0, 1.0, 1.0]])
    logits = np.array([[0.1, -1.0, 2.0], [0.0, 0.0, 0.0]])
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    expected = [stats.multinomial.logpmf(c, int(c.sum()), pr) for c, pr in zip(counts, p, strict=True)]
    got = log_multinomial(torch.tensor(counts), torch.tensor(logits)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-7)
    assert np.isclose(gammaln(4) - 3 * gammaln(2) + 3 * np.log(1 / 3), expected[1])


def test_inverse_gamma_calibration():
    variances = np.linspace(0.1, 10, 50)
    xi = calibrate_inverse_gamma(variances, nu=3.0)
    q05 = np.quantile(variances, 0.05)
    assert np.isclose(stats.invgamma.cdf(q05, 1.5, scale=1.5 * xi), 0.9)


def test_nb_and_zinb_are_scvi_tools_values_and_gradients():
    """The hand-written NB and ZINB (scsparse.nn imports no scvi-tools) equal scvi.distributions' to rounding, in
    value and in their gradients with respect to every parameter, zeros included."""
    from scvi.distributions import NegativeBinomial, ZeroInflatedNegativeBinomial

    gen = torch.Generator().manual_seed(0)
    shape = (60, 25)
    x = torch.poisson(torch.rand(shape, generator=gen, dtype=torch.float64) * 15)
    x = x * (torch.rand(shape, generator=gen, dtype=torch.float64) < 0.6)  # many zeros
    mu = (torch.rand(shape, generator=gen, dtype=torch.float64) * 30 + 1e-3).requires_grad_()
    theta = (torch.rand(shape[1], generator=gen, dtype=torch.float64) * 10 + 1e-2).requires_grad_()
    zi = (3 * torch.randn(shape, generator=gen, dtype=torch.float64)).requires_grad_()
    cases = [
        (log_nb(x, mu, theta), NegativeBinomial(mu=mu, theta=theta).log_prob(x), (mu, theta)),
        (
            log_zinb(x, mu, theta, zi),
            ZeroInflatedNegativeBinomial(mu=mu, theta=theta, zi_logits=zi).log_prob(x),
            (mu, theta, zi),
        ),
    ]
    for ours, theirs, parameters in cases:
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-10)
        for g_ours, g_theirs in zip(
            torch.autograd.grad(ours.sum(), parameters), torch.autograd.grad(theirs.sum(), parameters), strict=True
        ):
            np.testing.assert_allclose(g_ours.numpy(), g_theirs.numpy(), rtol=1e-9, atol=1e-10)
