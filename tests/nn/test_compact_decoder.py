import pytest
import torch

from scsparse.nn import MaskedDecoder
from scsparse.nn._compact_decoder import COMPACT_PAD_TO, CompactMaskedLayer, compact_index


def _reference(z, w_dense, first, cov_term, head, bias):
    """The network op by op, on every factor: the dense weights carry the zeros."""
    u = (w_dense[:, None, :] * z[None]) @ first.t()
    if cov_term is not None:
        u = u + cov_term
    return torch.einsum("gbh,ngh->nbg", torch.relu(u), head) + bias[:, None, :]


@pytest.mark.parametrize("n_heads", [1, 2])
@pytest.mark.parametrize("covariates", [False, True])
@pytest.mark.parametrize("chunk", [1, 3, 50])
def test_compact_layer_gives_the_dense_outputs_and_gradients_in_float64(n_heads, covariates, chunk):
    """One head without covariates takes the rank-one backward form, the others the general one."""
    torch.manual_seed(0)
    n_cells, n_genes, n_in, n_hidden = 5, 9, 7, 6
    active = torch.rand(n_genes, n_in) < 0.4
    active[0] = False  # a gene reading only the zero column
    active[1] = True
    groups = compact_index(active)
    z = torch.randn(n_cells, n_in, dtype=torch.float64, requires_grad=True)
    first = torch.randn(n_hidden, n_in, dtype=torch.float64, requires_grad=True)
    w_dense = (torch.randn(n_genes, n_in, dtype=torch.float64) * active).requires_grad_()
    head = torch.randn(n_heads, n_genes, n_hidden, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(n_heads, n_genes, dtype=torch.float64, requires_grad=True)
    cov = torch.randn(n_cells, n_hidden, dtype=torch.float64, requires_grad=True) if covariates else None
    weights = torch.randn(n_heads, n_cells, n_genes, dtype=torch.float64)
    leaves = [t for t in (z, first, w_dense, head, bias, cov) if t is not None]

    reference = _reference(z, w_dense, first, cov, head, bias)
    expected = torch.autograd.grad((reference * weights).sum(), leaves)
    outs, genes_order = [], []
    w_padded = torch.nn.functional.pad(w_dense, (0, 1))
    for genes, index in groups:
        w_genes = torch.gather(w_padded[genes], 1, index)
        outs.append(CompactMaskedLayer.apply(z, w_genes, index, first, cov, head[:, genes], bias[:, genes], chunk))
        genes_order.append(genes)
    out = torch.cat(outs, dim=-1)[..., torch.argsort(torch.cat(genes_order))]
    torch.testing.assert_close(out, reference, rtol=1e-12, atol=1e-12)
    got = torch.autograd.grad((out * weights).sum(), leaves)
    got, expected = list(got), list(expected)
    assert (got[2][~active] == 0).all()  # an entry outside the mask is not an input: no gradient
    expected[2] = expected[2] * active  # the dense network's gradients on the active entries
    for name, a, b in zip(["z", "first", "W", "head", "bias", "cov"], got, expected, strict=False):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12, msg=name)


def test_compact_index_gives_each_gene_its_active_columns_padded_to_a_zero_column():
    active = torch.tensor([[1, 0, 0, 1, 0, 1], [0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0]]).bool()
    groups = {int(i.shape[1]): (g.tolist(), i.tolist()) for g, i in compact_index(active, always=1)}
    assert set(groups) == {COMPACT_PAD_TO, 2 * COMPACT_PAD_TO}
    assert groups[4] == ([0, 1], [[0, 3, 5, 6], [6, 7, 7, 7]])  # 6: the bias column, 7: the zero column
    assert groups[8] == ([2], [[0, 1, 2, 3, 4, 6, 7, 7]])


def test_pruned_decoder_computes_each_gene_on_its_own_factors(monkeypatch):
    """A gene with two active factors of 12 reads 4 inputs (its two, the bias, a zero), not the union of factors."""
    torch.manual_seed(1)
    dec = MaskedDecoder(n_latent=12, n_output=6, n_hidden=8)
    keep = torch.zeros(6, 12, dtype=torch.bool)
    for g in range(6):
        keep[g, [g, g + 6]] = True  # together the genes use every factor
    dec.prune_(keep)
    widths = []
    original = CompactMaskedLayer.apply

    def spy(z, w, index, *args):
        widths.append(tuple(index.shape))
        return original(z, w, index, *args)

    monkeypatch.setattr(CompactMaskedLayer, "apply", spy)
    dec(torch.randn(3, 12)).sum().backward()
    assert widths == [(6, 4)]
    assert dec._gene_groups()["cols2"].numel() == 12
    assert (dec.W.grad[~keep] == 0).all() and (dec.W.grad[keep] != 0).any()
