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


# ------------------------------------------------------------------ guided prior (members)
def test_members_take_their_own_prior_inclusion_in_the_e_step():
    rng = np.random.default_rng(1)
    w = rng.normal(scale=0.5, size=(8, 2))
    members = np.zeros((8, 2), dtype=bool)
    members[:3, 0] = True
    lam0, lam1 = 10.0, 1.0
    prior = SpikeSlabLasso(8, 2, lambda0=lam0, lambda1=lam1, members=torch.tensor(members), member_prior=0.5)
    prior.eta.copy_(torch.tensor([0.05, 0.2]))
    theta = np.where(members, 0.5, np.array([0.05, 0.2]))
    expected = theta * laplace(w, lam1) / (theta * laplace(w, lam1) + (1 - theta) * laplace(w, lam0))
    got = prior.e_step(torch.tensor(w, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_a_member_the_data_do_not_support_leaves_the_slab():
    prior = SpikeSlabLasso(5, 1, members=torch.ones(5, 1, dtype=torch.bool), member_prior=0.5)
    p = prior.e_step(torch.zeros(5, 1))
    np.testing.assert_allclose(p.numpy(), prior.lambda1 / (prior.lambda0 + prior.lambda1), rtol=1e-5)
    assert (p < 0.5).all()


def test_eta_update_with_members_is_the_closed_form_over_the_other_entries():
    members = torch.zeros(6, 2, dtype=torch.bool)
    members[:2, 0] = True
    prior = SpikeSlabLasso(6, 2, a=1.0, b=None, members=members)
    p = torch.tensor([[1.0, 1.0], [1.0, 0.0], [0.5, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    eta = prior.eta_update(p)
    # column 0: its two members are left out (4 other entries, sum p* 0.5); column 1 as without members
    assert eta[0].item() == pytest.approx((0.5 + 1 - 1) / (1 + 6 + 4 - 2))
    assert eta[1].item() == pytest.approx((1.0 + 1 - 1) / (1 + 6 + 6 - 2))

    # the update maximises the Bernoulli and Beta terms in eta_0: nearby values do worse
    def objective(e):
        others = p[2:, 0]
        return float((others * math.log(e) + (1 - others) * math.log1p(-e)).sum() + (prior.b - 1) * math.log1p(-e))

    best = eta[0].item()
    assert objective(best) > max(objective(best * 0.9), objective(best * 1.1))


def test_without_members_the_prior_is_bit_for_bit_the_plain_one():
    rng = np.random.default_rng(2)
    w = torch.tensor(rng.normal(scale=0.4, size=(30, 4)), dtype=torch.float32)
    plain = SpikeSlabLasso(30, 4)
    guided_nowhere = SpikeSlabLasso(30, 4, members=torch.zeros(30, 4, dtype=torch.bool))
    assert "members" not in plain.state_dict()
    assert "members" in guided_nowhere.state_dict()
    for _ in range(3):
        plain.em_update(w)
        guided_nowhere.em_update(w)
    assert torch.equal(plain.p_star, guided_nowhere.p_star)
    assert torch.allclose(plain.eta, guided_nowhere.eta, rtol=0, atol=1e-7)
    assert torch.allclose(plain.negative_log_prior(w), guided_nowhere.negative_log_prior(w))


def test_members_are_saved_in_the_state_dict_and_checked():
    members = torch.zeros(4, 2, dtype=torch.bool)
    members[1, 1] = True
    prior = SpikeSlabLasso(4, 2, members=members)
    other = SpikeSlabLasso(4, 2, members=torch.zeros(4, 2, dtype=torch.bool))
    other.load_state_dict(prior.state_dict())
    assert torch.equal(other.members, members)
    with pytest.raises(ValueError, match="shape"):
        SpikeSlabLasso(4, 2, members=torch.zeros(3, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match="member_prior"):
        SpikeSlabLasso(4, 2, members=members, member_prior=1.0)
