"""Exact zeros in W (the lasso's zero rule on Adam's steps) and the decoder's active set with its KKT checks."""

import numpy as np
import pytest
import torch

from scsparse.model import InvalidInputError, SparseVAE
from scsparse.module import SparseVAEModule
from scsparse.train import ACTIVE_SET_EVERY, ZERO_RULE_DECAY, SparseVAETrainingPlan


def _module() -> SparseVAEModule:
    torch.manual_seed(0)
    module = SparseVAEModule(n_input=3, n_latent=2, n_hidden=4)
    with torch.no_grad():
        module.decoder.W.copy_(torch.tensor([[0.5, 0.0], [0.02, 0.0], [-1.0, 0.0]]))
    module.em_update()
    return module


def test_zero_entries_get_the_least_subgradient_and_steps_stop_at_zero():
    module = _module()
    w = module.decoder.W
    rates = module.prior.rates() / module.prior_cells(100)
    g = torch.zeros(3, 2)
    g[:, 1] = torch.tensor([0.5, -0.5, 2.0]) * rates[:, 1]  # below, below, above the rate
    g[0, 0], g[1, 0], g[2, 0] = 1.0, 1.0, -1.0
    w.grad = g.clone()
    before = module.zero_rule_gradient_(100)
    # nonzero entries keep their gradient; zero entries keep only what exceeds their rate
    torch.testing.assert_close(w.grad[:, 0], g[:, 0])
    assert w.grad[0, 1] == 0 and w.grad[1, 1] == 0
    torch.testing.assert_close(w.grad[2, 1], g[2, 1] - rates[2, 1])
    with torch.no_grad():  # a step: entry (1, 0) crosses zero, (0, 1) moves against its least subgradient (momentum)
        w.copy_(torch.tensor([[0.4, 0.3], [-0.01, 0.0], [-0.9, -0.2]]))
    module.zero_rule_step_(before)
    expected = torch.tensor([[0.4, 0.0], [0.0, 0.0], [-0.9, -0.2]])
    torch.testing.assert_close(w.detach(), expected)  # (2, 1) left zero the way its gradient asks


def test_zero_entries_the_data_call_back_are_the_lasso_violators():
    module = _module()
    rates = module.prior.rates() / module.prior_cells(100)
    grad = torch.zeros(3, 2)
    grad[:, 1] = rates[:, 1] * torch.tensor([0.9, 1.1, -2.0])
    grad[0, 0] = 100.0  # a nonzero entry is never "readmitted"
    assert module.entries_to_readmit(grad, 100).tolist() == [[False, False], [False, True], [False, True]]


def test_data_gradient_takes_the_prior_out_of_w_grad():
    module = _module()
    module.decoder.W.grad = None
    (module.global_penalty() / module.prior_cells(100)).backward()  # the prior alone: no data gradient
    torch.testing.assert_close(module.data_gradient(100), torch.zeros(3, 2))


def test_a_running_mean_judges_zero_entries_so_noise_does_not_move_them():
    module = _module()
    w = module.decoder.W
    rate = float(module.prior.rates()[1, 1] / module.prior_cells(100))
    moved = {}
    for decay in (0.0, 0.9):
        plan = SparseVAETrainingPlan(module, exact_zeros=True, zero_rule_decay=decay, n_obs_training=100)
        for step in range(20):  # noise three times the rate, mean zero, on the zero entry (1, 1)
            w.grad = torch.zeros(3, 2)
            w.grad[1, 1] = 3 * rate * (-1) ** step
            judged = plan._judged_gradient()
            if step == 0:  # the mean starts as the first gradient (its weight corrects the start)
                torch.testing.assert_close(judged[1, 1], torch.tensor(3 * rate))
        module.zero_rule_gradient_(100, judged)
        moved[decay] = float(w.grad[1, 1])  # the least subgradient the step would take
    assert moved[0.0] != 0  # by the minibatch's own gradient the entry leaves zero
    assert moved[0.9] == 0  # by the mean (about 0.16 times the rate) it stays


def test_the_running_mean_of_an_entry_outside_the_active_set_runs_over_check_steps():
    module = _module()
    w, decoder = module.decoder.W, module.decoder
    plan = SparseVAETrainingPlan(module, exact_zeros=True, zero_rule_decay=0.5, n_obs_training=100)
    keep = torch.ones(3, 2, dtype=torch.bool)
    keep[1, 1] = False
    decoder.prune_(keep)
    w.grad = torch.ones(3, 2)
    plan._judged_gradient()  # (1, 1) is not computed: its mean is not updated
    assert module.zero_rule_weight[1, 1] == 0 and module.zero_rule_weight[0, 1] == 0.5
    decoder.readmit_(torch.ones(3, 2, dtype=torch.bool))  # a check step computes it
    w.grad = torch.full((3, 2), 4.0)
    judged = plan._judged_gradient()
    assert judged[1, 1] == pytest.approx(4.0)  # its first seen gradient
    assert judged[0, 1] == pytest.approx((0.25 * 1 + 0.5 * 4) / 0.75)


def _train(adata, **plan):
    model = SparseVAE(adata, n_latent=4, n_hidden=16, seed=0)
    model.train(max_epochs=150, batch_size=64, plan_kwargs=plan, enable_progress_bar=False)
    return model


@pytest.fixture(scope="module")
def planted(counts_factory):
    adata = counts_factory(n_obs=400, n_vars=30, n_latent=3)
    SparseVAE.setup_anndata(adata, layer="counts")
    return adata


def test_exact_zeros_give_zeros_and_the_planted_programmes(planted):
    model = _train(planted, exact_zeros=True)
    w = model.module.decoder.W.detach()
    # exact zeros, not small numbers: each of the 30 genes belongs to one of 4 factors, so the planted support leaves
    # 75% of W zero (judged by each minibatch's gradient, zero_rule_decay=0, noise kept about 28% zero)
    assert (w == 0).float().mean() > 0.6
    pip = model.get_inclusion_probabilities().to_numpy()
    assert not ((pip > 0.5) & (w.numpy() == 0)).any()  # a zero entry is in the spike
    owner = planted.var["owner"].to_numpy()
    slab = pip > 0.5
    for k in range(3):  # each planted programme is one factor's genes
        cols = slab[owner == k].mean(0)
        assert cols.max() > 0.8
    assert model.history["w_nonzero"].iloc[-1, 0] == pytest.approx(float((w != 0).float().mean()))


def test_active_set_fixes_the_rest_at_zero_and_readmits_what_the_data_call_back(planted):
    model = _train(planted, exact_zeros=True, active_set_every=5)
    decoder = model.module.decoder
    assert decoder.is_pruned and (decoder.W[~decoder.prune_mask] == 0).all()
    assert model.history["w_active"].iloc[-1, 0] < 0.8
    # take out the strongest entry, which the data need: the first check step brings it back
    g, k = np.unravel_index(int(decoder.W.detach().abs().argmax()), tuple(decoder.W.shape))
    drop = torch.ones_like(decoder.prune_mask)
    drop[g, k] = False
    decoder.prune_(drop)
    model.train(max_epochs=2, batch_size=64, stop_when_settled=False, plan_kwargs={"exact_zeros": True,
                "active_set_every": 5}, enable_progress_bar=False)  # fmt: skip
    assert decoder.prune_mask[g, k] and decoder.W[g, k] != 0
    assert model.history["w_readmitted"].iloc[-2, 0] >= 1  # the second fit's first epoch


def test_a_second_fit_goes_on_from_the_first_fits_running_mean(planted):
    model = _train(planted, exact_zeros=True, active_set_every=5)
    module = model.module
    assert module.zero_rule_mean.shape == module.decoder.W.shape  # kept with the module after the fit
    state = {k: v.clone() for k, v in module.state_dict().items()}
    again = {"max_epochs": 1, "batch_size": 64, "stop_when_settled": False, "enable_progress_bar": False}
    plan = {"exact_zeros": True, "active_set_every": 5}
    model.train(plan_kwargs=plan, **again)
    went_on = int(model.history["w_readmitted"].iloc[-1, 0])
    module.load_state_dict(state)  # the same fit, its running mean begun afresh (as a loaded model begins it)
    module.forget_zero_rule_mean_()
    model.train(plan_kwargs=plan, **again)
    afresh = int(model.history["w_readmitted"].iloc[-1, 0])
    # judged by one minibatch the first check readmits noise (35 of 120 entries against 2 on this fixture)
    assert went_on * 4 < afresh


def test_a_fit_without_exact_zeros_clears_the_running_mean(planted):
    model = _train(planted, exact_zeros=True)
    model.train(max_epochs=1, batch_size=64, stop_when_settled=False, enable_progress_bar=False)
    assert model.module.zero_rule_mean.numel() == 0 and model.module.zero_rule_weight.numel() == 0


def test_exact_zeros_options_are_checked(planted):
    module = SparseVAEModule(n_input=30, n_latent=2)
    with pytest.raises(InvalidInputError, match="needs exact_zeros=True"):
        SparseVAETrainingPlan(module, active_set_every=5)
    with pytest.raises(InvalidInputError, match="active_set_every must be a whole number >= 1"):
        SparseVAETrainingPlan(module, exact_zeros=True, active_set_every=0)
    with pytest.raises(InvalidInputError, match="True or False"):
        SparseVAETrainingPlan(module, exact_zeros="yes")
    assert SparseVAETrainingPlan(module, exact_zeros=True).zero_rule_decay == ZERO_RULE_DECAY
    assert SparseVAETrainingPlan(module).zero_rule_decay == 0
    with pytest.raises(InvalidInputError, match="zero_rule_decay needs exact_zeros=True"):
        SparseVAETrainingPlan(module, zero_rule_decay=0.9)
    with pytest.raises(InvalidInputError, match="zero_rule_decay"):
        SparseVAETrainingPlan(module, exact_zeros=True, zero_rule_decay=1.0)
    fixed = SparseVAEModule(n_input=30, n_latent=2, fixed_support=True)
    with pytest.raises(InvalidInputError, match="keeps part of W fixed"):
        SparseVAETrainingPlan(fixed, exact_zeros=True)


def test_train_exact_zeros_saves_loads_and_serves_the_consensus(planted, tmp_path):
    model = SparseVAE(planted, n_latent=4, n_hidden=16, seed=0)
    model.train(max_epochs=40, batch_size=64, exact_zeros=True, enable_progress_bar=False)
    plan = model.train_kwargs_["plan_kwargs"]
    assert plan["exact_zeros"] is True and plan["active_set_every"] == ACTIVE_SET_EVERY
    decoder = model.module.decoder
    assert decoder.is_pruned and (decoder.W[~decoder.prune_mask] == 0).all()
    model.save(tmp_path / "fit")
    back = SparseVAE.load(tmp_path / "fit", adata=planted)
    assert torch.equal(back.module.decoder.prune_mask, decoder.prune_mask)
    np.testing.assert_allclose(back.get_latent_representation(), model.get_latent_representation(), atol=1e-6)
    # restarts with exact zeros; the refit holds its support fixed and trains without them
    fit = SparseVAE.consensus(
        planted, 2, seed=0, n_latent=4, n_hidden=16,
        train_kwargs={"max_epochs": 40, "batch_size": 64, "exact_zeros": True, "enable_progress_bar": False},
    )  # fmt: skip
    assert fit.module.fixed_support and "exact_zeros" not in fit.train_kwargs_["plan_kwargs"]
