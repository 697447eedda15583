import pytest
import torch
from torch import nn

from scsparse.nn import GaussianEncoder, StackedEncoder, copy_into_grown_, train_only_


def test_copy_into_grown_fills_the_leading_block_and_keeps_the_rest():
    torch.manual_seed(0)
    small, big = nn.Linear(3, 2), nn.Linear(5, 4)
    init = {k: v.clone() for k, v in big.state_dict().items()}
    copy_into_grown_(big, small.state_dict())
    assert torch.equal(big.weight[:2, :3], small.weight) and torch.equal(big.bias[:2], small.bias)
    assert torch.equal(big.weight[2:], init["weight"][2:]) and torch.equal(big.weight[:, 3:], init["weight"][:, 3:])
    # a buffer of the same shape and a scalar (BatchNorm's counter) are copied whole
    bn_small, bn_big = nn.BatchNorm1d(3), nn.BatchNorm1d(3)
    bn_small(torch.randn(8, 3))
    copy_into_grown_(bn_big, bn_small.state_dict())
    small_state = bn_small.state_dict()
    assert all(torch.equal(value, small_state[name]) for name, value in bn_big.state_dict().items())


def test_copy_into_grown_refuses_what_does_not_fit():
    with pytest.raises(ValueError, match="cannot copy"):
        copy_into_grown_(nn.Linear(3, 2), nn.Linear(3, 4).state_dict())
    with pytest.raises(ValueError, match="same entries"):
        copy_into_grown_(nn.Linear(3, 2, bias=False), nn.Linear(3, 2).state_dict())


def test_train_only_masks_gradients_and_adam_leaves_frozen_entries_exactly():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    mask = torch.tensor([[True, False, False], [True, False, False]])
    train_only_(net, {"2.weight": mask, "2.bias": None})
    assert not net[0].weight.requires_grad and not net[0].bias.requires_grad
    before = {k: v.clone() for k, v in net.state_dict().items()}
    opt = torch.optim.Adam([p for p in net.parameters() if p.requires_grad], lr=0.1)
    for _ in range(5):
        opt.zero_grad()
        net(torch.randn(16, 4)).pow(2).sum().backward()
        opt.step()
    after = net.state_dict()
    assert torch.equal(after["2.weight"][:, 1:], before["2.weight"][:, 1:])  # frozen entries: bit for bit
    assert not torch.equal(after["2.weight"][:, 0], before["2.weight"][:, 0])  # trainable column moved
    assert not torch.equal(after["2.bias"], before["2.bias"])
    assert torch.equal(after["0.weight"], before["0.weight"])
    with pytest.raises(ValueError, match="Unknown parameters"):
        train_only_(net, {"9.weight": None})
    with pytest.raises(ValueError, match="mask of shape"):
        train_only_(net, {"2.weight": torch.ones(3, 3, dtype=torch.bool)})


def test_stacked_encoder_concatenates_and_flips_each_part():
    torch.manual_seed(0)
    first, second = GaussianEncoder(6, 2, n_hidden=8).eval(), GaussianEncoder(6, 3, n_hidden=8).eval()
    enc = StackedEncoder(first, second)
    x = torch.randn(5, 6)
    qz, _ = enc(x)
    assert torch.equal(qz.loc, torch.cat([first(x)[0].loc, second(x)[0].loc], dim=1))
    signs = torch.tensor([1.0, -1.0, -1.0, 1.0, 1.0])
    enc.flip_(signs)
    assert torch.allclose(enc(x)[0].loc, qz.loc * signs) and torch.allclose(enc(x)[0].scale, qz.scale)
