import math

import numpy as np
import pytest
import torch

from scsparse.nn import SpikeSlabLasso, slab_threshold, ssl_inclusion_logits


def laplace(w, lam):
    return lam / 2 * np.exp(-lam * np.abs(w))


def test_e_step_equals_closed_form_with_normalisers():
    rng = np.random.default_rng(0)
    w = rng.normal(scale=0.5, size=(6, 3))
    eta = np.array([0.1, 0.5, 0.9])
    lam0, lam1 = 10.0, 1.0
    expected = eta * laplace(w, lam1) / (eta * laplace(w, lam1) + (1 - eta) * laplace(w, lam0))
    prior = SpikeSlabLasso(6, 3, lambda0=lam0, lambda1=lam1)
    prior.eta.copy_(torch.tensor(eta, dtype=torch.float32))
    got = prior.e_step(torch.tensor(w, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    # dropping the lambda/2 normalisers (the reference code) would give larger p*
    biased = 1 / (1 + (1 - eta) / eta * np.exp(-(lam0 - lam1) * np.abs(w)))
    assert (biased > expected).all()


def test_eta_update_closed_form_and_clipping():
    prior = SpikeSlabLasso(4, 2, a=1.0, b=None)
    p = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.5, 0.0], [0.0, 0.0]])
    eta = prior.eta_update(p)
    assert eta[0].item() == pytest.approx((2.5 + 1 - 1) / (1 + 4 + 4 - 2))
    assert eta[1].item() == pytest.approx(prior.eps)  # clipped, never exactly 0


def test_em_update_writes_buffers_and_switches_off_unused_columns():
    prior = SpikeSlabLasso(50, 3)
    w = torch.zeros(50, 3)
    w[:20, 0] = 2.0
    w[20:, 1] = 1.5
    for _ in range(5):
        prior.em_update(w)
    assert prior.active_mask().tolist() == [True, True, False]
    assert prior.eta[2] < 1e-3
    assert torch.equal(prior.eta, prior.eta_update(prior.p_star))


def test_penalty_gradient_matches_full_negative_log_prior():
    prior = SpikeSlabLasso(5, 2)
    w = torch.randn(5, 2, requires_grad=True)
    prior.em_update(w)
    (g1,) = torch.autograd.grad(prior.penalty(w), w)
    (g2,) = torch.autograd.grad(prior.negative_log_prior(w), w)
    torch.testing.assert_close(g1, g2)
    lam = prior.lambda1 * prior.p_star + prior.lambda0 * (1 - prior.p_star)
    torch.testing.assert_close(g1, lam * torch.sign(w.detach()))


def test_log_odds_formula():
    logits = ssl_inclusion_logits(torch.tensor([[0.3]]), torch.tensor([0.2]), 10.0, 1.0)
    expected = math.log(0.2 / 0.8) + math.log(1 / 10) + 9 * 0.3
    assert logits.item() == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize(("lam0", "lam1"), [(1.0, 1.0), (1.0, 10.0), (5.0, 0.0)])
def test_invalid_rates_are_rejected(lam0, lam1):
    with pytest.raises(ValueError, match="lambda0 > lambda1 > 0"):
        SpikeSlabLasso(3, 2, lambda0=lam0, lambda1=lam1)


@pytest.mark.parametrize(("lambda0", "lambda1", "eta"), [(5.0, 0.001, 0.5), (5.0, 1.0, 0.5), (10.0, 1.0, 0.1)])
def test_slab_threshold_is_where_the_inclusion_probability_crosses_one_half(lambda0, lambda1, eta):
    t = slab_threshold(lambda0, lambda1, eta)
    w = torch.tensor([[t - 1e-3], [t + 1e-3]], dtype=torch.float64)
    logits = ssl_inclusion_logits(w, torch.tensor([eta], dtype=torch.float64), lambda0, lambda1).ravel()
    assert logits[0] < 0 < logits[1]
