import pytest
import torch
from torch.distributions import MultivariateNormal, Normal, kl_divergence

from scsparse.nn import CorrelatedGaussianPrior, gaussian_kl, importance_sampled_log_likelihood


def random_prior(k: int = 4, seed: int = 0) -> CorrelatedGaussianPrior:
    torch.manual_seed(seed)
    prior = CorrelatedGaussianPrior(k)
    with torch.no_grad():
        prior.raw.copy_(torch.randn(k, k))
    return prior


def test_starts_at_the_identity_where_the_kl_is_the_standard_one():
    prior = CorrelatedGaussianPrior(3)
    qz = Normal(torch.randn(5, 3), torch.rand(5, 3) + 0.2)
    assert torch.allclose(prior.correlation(), torch.eye(3))
    assert torch.allclose(prior.kl(qz), gaussian_kl(qz), atol=1e-5)


def test_correlation_is_a_valid_correlation_matrix():
    sigma = random_prior(5).correlation().detach()
    assert torch.allclose(torch.diagonal(sigma), torch.ones(5), atol=1e-6)
    assert torch.allclose(sigma, sigma.T, atol=1e-6)
    assert torch.linalg.eigvalsh(sigma).min() > 0
    assert (sigma - torch.eye(5)).abs().max() > 0.1  # not trivially the identity


def test_kl_and_log_prob_match_torch_multivariate_normal():
    prior = random_prior(4, seed=1)
    sigma = prior.correlation().detach().double()
    mu, scale = torch.randn(6, 4).double(), (torch.rand(6, 4) + 0.3).double()
    reference = MultivariateNormal(torch.zeros(4).double(), sigma)
    expected = kl_divergence(MultivariateNormal(mu, torch.diag_embed(scale**2)), reference)
    prior = prior.double()
    assert torch.allclose(prior.kl(Normal(mu, scale)), expected, atol=1e-8)
    z = torch.randn(3, 6, 4).double()
    assert torch.allclose(prior.log_prob(z), reference.log_prob(z), atol=1e-8)


def test_kl_gradient_reaches_the_correlation_parameter():
    prior = CorrelatedGaussianPrior(2)
    # codes strongly correlated across rows: a correlated prior lowers the KL, so the gradient is non-zero
    z = torch.randn(200, 1)
    qz = Normal(torch.cat([z, z + 0.1 * torch.randn(200, 1)], 1), torch.full((200, 2), 0.1))
    prior.kl(qz).mean().backward()
    assert prior.raw.grad is not None and prior.raw.grad.abs().sum() > 0


def test_importance_sampling_uses_the_prior_and_refuses_masks():
    prior = random_prior(2, seed=2)
    qz = Normal(torch.zeros(1, 2), torch.ones(1, 2))
    z = qz.sample((4,))
    out = importance_sampled_log_likelihood(torch.zeros(4, 1), z, qz, prior=prior)
    expected = torch.logsumexp(prior.log_prob(z) - qz.log_prob(z).sum(-1), 0) - torch.log(torch.tensor(4.0))
    assert torch.allclose(out, expected.detach(), atol=1e-5)
    with pytest.raises(ValueError, match="masked"):
        importance_sampled_log_likelihood(torch.zeros(4, 1), z, qz, mask=torch.ones(1, 2), prior=prior)


def test_rejects_an_empty_latent():
    with pytest.raises(ValueError, match="n_latent"):
        CorrelatedGaussianPrior(0)
