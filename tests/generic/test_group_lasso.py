import numpy as np
import pytest
import torch

from scsparse.generic.nn._group_lasso import group_column_norms, group_lasso_penalty, group_lasso_prox


def hand_w():
    # two groups, p = 2, K = 2; column norms: [[5, 0.5], [1, 2]]
    return torch.tensor(
        [
            [[3.0, 0.3], [4.0, 0.4]],
            [[0.6, 0.0], [0.8, 2.0]],
        ]
    )


def test_column_norms_and_penalty_hand_values():
    w = hand_w()
    np.testing.assert_allclose(group_column_norms(w).numpy(), [[5.0, 0.5], [1.0, 2.0]], rtol=1e-6)
    assert float(group_lasso_penalty(w, lambda_=0.5)) == pytest.approx(0.5 * (5 + 0.5 + 1 + 2))


def test_prox_zeroes_small_columns_and_shrinks_the_others_by_lr_lambda():
    lr, lam = 0.5, 2.0  # threshold t = lr * lambda = 1
    w = hand_w()
    out = group_lasso_prox(w, lr * lam)
    expected = torch.tensor(
        [
            [[3.0 * 4 / 5, 0.0], [4.0 * 4 / 5, 0.0]],  # norm 5 -> 4, same direction; norm 0.5 < 1 -> 0
            [[0.0, 0.0], [0.0, 1.0]],  # norm exactly 1 -> 0; (0, 2) -> (0, 1)
        ]
    )
    torch.testing.assert_close(out, expected)
    norms_before, norms_after = group_column_norms(w), group_column_norms(out)
    kept = norms_before > lr * lam
    torch.testing.assert_close(norms_after[kept], norms_before[kept] - lr * lam)
    assert (out[:, :, ~kept[0]][0] == 0).all() and (norms_after[~kept] == 0).all()  # exact zeros
    torch.testing.assert_close(w, hand_w())  # input untouched


def test_prox_is_the_minimiser_of_the_proximal_objective():
    torch.manual_seed(0)
    w = torch.randn(3, 4, 5)
    t = 1.2
    u = group_lasso_prox(w, t)

    def objective(v):
        return t * group_column_norms(v).sum() + 0.5 * ((v - w) ** 2).sum()

    best = objective(u)
    for _ in range(200):
        assert objective(u + 0.05 * torch.randn_like(u)) >= best - 1e-5


def test_prox_edge_cases():
    w = torch.zeros(2, 3, 4)
    assert torch.equal(group_lasso_prox(w, 0.1), w)  # zero columns stay zero, no NaN
    v = torch.randn(2, 3, 4)
    torch.testing.assert_close(group_lasso_prox(v, 0.0), v)  # t = 0 is the identity
    # a per-(group, factor) threshold broadcasts over the p axis
    t = torch.tensor([[[0.0, 100.0, 0.0, 100.0]], [[100.0, 0.0, 100.0, 0.0]]])
    out = group_lasso_prox(v, t)
    assert (group_column_norms(out) == 0).sum() == 4
    with pytest.raises(ValueError):
        group_lasso_prox(v, -1.0)
