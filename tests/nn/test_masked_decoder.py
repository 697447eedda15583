import pytest
import torch

from scsparse._threads import torch_threads
from scsparse.nn import MaskedDecoder
from scsparse.nn._mlp import one_hot_covariates


def naive_per_gene(decoder: MaskedDecoder, z: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
    """The authors' algorithm: run the whole network once per gene on w_j * z and keep output j."""
    first, hidden, head = decoder.network_weights()
    cov = None
    if batch is not None:
        cov = decoder.covariates(one_hot_covariates([batch], decoder.n_cat_list))
    outs = []
    for j in range(decoder.n_output):
        h = (z * decoder.W[j]) @ first.t()
        if cov is not None:
            h = h + cov
        if decoder.first_bias is not None:
            h = h + decoder.first_bias
        h = decoder.activation(h)
        for layer, weight in zip(decoder.hidden, hidden, strict=True):
            h = decoder.activation(torch.nn.functional.linear(h, weight, layer.bias))
        outs.append(h @ head[:, j].t() + decoder.head_bias[:, j])  # (B, n_heads)
    return torch.stack(outs, dim=-1).permute(1, 0, 2)


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("n_layers", [1, 3])
@pytest.mark.parametrize("chunk_size", [None, 3])
@pytest.mark.parametrize("first_bias", [False, True])
def test_vectorised_decoder_equals_per_gene_loop(normalize, n_layers, chunk_size, first_bias):
    torch.manual_seed(0)
    dec = MaskedDecoder(
        n_latent=4,
        n_output=11,
        n_hidden=6,
        n_layers=n_layers,
        n_heads=2,
        n_cat_list=[3],
        chunk_size=chunk_size,
        normalize_weights=normalize,
        first_bias=first_bias,
    )
    with torch.no_grad():
        dec.W.mul_(torch.bernoulli(torch.full_like(dec.W, 0.5)))  # a sparse mask
    z = torch.randn(5, 4)
    batch = torch.tensor([0, 1, 2, 1, 0])
    dec.eval()
    torch.testing.assert_close(dec(z, batch), naive_per_gene(dec, z, batch), rtol=1e-5, atol=1e-5)


def test_chunked_checkpointed_gradients_match_single_pass():
    torch.manual_seed(1)
    full = MaskedDecoder(n_latent=3, n_output=10, n_hidden=5, n_layers=2)
    chunked = MaskedDecoder(n_latent=3, n_output=10, n_hidden=5, n_layers=2, chunk_size=4)
    checkpointed = MaskedDecoder(n_latent=3, n_output=10, n_hidden=5, n_layers=2, chunk_size=4, memory_budget_mb=1e-4)
    chunked.load_state_dict(full.state_dict())
    checkpointed.load_state_dict(full.state_dict())
    z = torch.randn(6, 3)
    assert not chunked.uses_checkpointing(6) and checkpointed.uses_checkpointing(6)
    grads = []
    for dec in (full, chunked, checkpointed):
        dec.train()
        dec.zero_grad()
        (dec(z) ** 2).sum().backward()
        grads.append({n: p.grad.clone() for n, p in dec.named_parameters()})
    for name in grads[0]:
        torch.testing.assert_close(grads[0][name], grads[1][name], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(grads[0][name], grads[2][name], rtol=1e-5, atol=1e-6)


def test_zero_mask_row_removes_dependence_on_factors():
    torch.manual_seed(2)
    dec = MaskedDecoder(n_latent=3, n_output=4, n_hidden=8)
    with torch.no_grad():
        dec.W[1] = 0.0
        dec.W[2, 0] = 0.0
    z1, z2 = torch.randn(7, 3), torch.randn(7, 3)
    out1, out2 = dec(z1), dec(z2)
    torch.testing.assert_close(out1[:, :, 1], out2[:, :, 1])  # gene 1 sees no factor
    z3 = z1.clone()
    z3[:, 0] += 5.0  # move only factor 0: gene 2 must not change
    torch.testing.assert_close(dec(z3)[:, :, 2], out1[:, :, 2])
    assert not torch.allclose(dec(z3)[:, :, 0], out1[:, :, 0])


def test_covariates_enter_outside_the_mask():
    torch.manual_seed(3)
    dec = MaskedDecoder(n_latent=2, n_output=3, n_hidden=4, n_cat_list=[2])
    assert dec.W.shape == (3, 2)  # the batch never gets a column of W
    with torch.no_grad():
        dec.W.zero_()
    z = torch.randn(4, 2)
    a = dec(z, torch.zeros(4, dtype=torch.long))
    b = dec(z, torch.ones(4, dtype=torch.long))
    assert not torch.allclose(a, b)


@pytest.mark.parametrize(
    ("n_threads", "given", "expected"), [(1, None, 8.0), (2, None, 16.0), (6, None, 32.0), (2, 4.0, 4.0)]
)
def test_cpu_chunk_grows_with_torch_threads_unless_given(n_threads, given, expected):
    dec = MaskedDecoder(n_latent=5, n_output=2_000, n_hidden=128, cache_chunk_mb=given)
    with torch_threads(n_threads):
        assert dec.chunk_mb_on_cpu() == expected
        assert dec.resolve_chunk_size(batch_size=128, device="cpu") == int(expected * 2**20 // (128 * 128 * 4))


def test_auto_chunk_size_respects_budget():
    dec = MaskedDecoder(n_latent=5, n_output=20_000, n_hidden=128, memory_budget_mb=64)
    chunk = dec.resolve_chunk_size(batch_size=128, device="cuda")  # only the memory budget
    assert 1 <= chunk < 20_000
    assert chunk * 128 * 128 * 4 <= 64 * 2**20 < (chunk + 1) * 128 * 128 * 4
    cpu_chunk = dec.resolve_chunk_size(batch_size=128, device="cpu")  # cache-sized on the CPU
    assert cpu_chunk * 128 * 128 * 4 <= dec.chunk_mb_on_cpu() * 2**20 < (cpu_chunk + 1) * 128 * 128 * 4
    assert dec.resolve_chunk_size(batch_size=512, device="cpu") == cpu_chunk // 4
    assert dec.uses_checkpointing(128)  # 20,000 genes x 128 cells x 128 units x 2 x 4 bytes > 64 MB
    assert not MaskedDecoder(n_latent=5, n_output=200, n_hidden=128).uses_checkpointing(128)
    with pytest.raises(ValueError, match="must be positive"):
        MaskedDecoder(n_latent=2, n_output=3, cache_chunk_mb=0)
    with pytest.raises(ValueError, match="at least one hidden layer"):
        MaskedDecoder(n_latent=2, n_output=3, n_layers=0)


@pytest.mark.parametrize("activation", ["relu", "leaky_relu"])
@pytest.mark.parametrize("n_heads", [1, 2])
@pytest.mark.parametrize("first_bias", [False, True])
@pytest.mark.parametrize("covariates", [False, True])
def test_pruned_sparse_path_equals_dense_masked_network(activation, n_heads, first_bias, covariates):
    torch.manual_seed(4)
    kw = {"n_latent": 4, "n_output": 12, "n_hidden": 7, "n_heads": n_heads, "activation": activation}
    if covariates:
        kw |= {"n_cat_list": [3], "n_continuous": 2}
    dec = MaskedDecoder(**kw, chunk_size=2, first_bias=first_bias).double()
    dense = MaskedDecoder(**kw, first_bias=first_bias).double()
    keep = torch.rand(12, 4) < 0.35
    keep[0] = False  # a gene with no active factor
    keep[1] = torch.tensor([False, True, False, False])  # one active factor
    keep[3] = torch.tensor([False, False, False, True])
    keep[2] = True  # all active
    keep[:, 2] = keep[:, 2] & (torch.arange(12) == 2)  # a factor active in gene 2 only
    assert dec.prune_(keep) == int((~keep).sum())
    assert dec.is_pruned and dec.supports_sparse_path
    groups = dec._gene_groups()
    closed_form = not covariates and (activation == "relu" or not first_bias)
    assert 0 in groups["idx0"].tolist()  # no per-gene network
    assert (1 in groups["idx1"].tolist()) == closed_form  # one factor: in closed form, else the network
    assert groups["cols2"].tolist() == sorted(set(torch.nonzero(keep[groups["idx2"]])[:, 1].tolist()))
    assert (dec.W[~keep] == 0).all()
    dense.load_state_dict(dec.state_dict())
    z = torch.randn(6, 4, dtype=torch.float64)
    cats = (torch.randint(0, 3, (6,)),) if covariates else ()
    cont = torch.randn(6, 2, dtype=torch.float64) if covariates else None
    out_sparse = dec(z, *cats, continuous=cont)
    out_dense = dense._decode_dense(z, dense.covariate_inputs(cats, cont, z.dtype))
    torch.testing.assert_close(out_sparse, out_dense, rtol=1e-10, atol=1e-12)
    out_sparse.square().sum().backward()
    out_dense.square().sum().backward()
    for (name, p_s), p_d in zip(dec.named_parameters(), dense.parameters(), strict=True):
        torch.testing.assert_close(p_s.grad, p_d.grad, rtol=1e-9, atol=1e-11, msg=name)
    assert (dec.W.grad[~keep] == 0).all()  # pruned entries get no gradient
    z2 = z.clone()
    z2[:, 0] += 3.0  # gene 0 sees nothing, gene 1 only factor 1
    torch.testing.assert_close(dec(z2, *cats, continuous=cont)[..., :2], out_sparse[..., :2].detach())


def test_readmitted_entries_train_from_zero():
    torch.manual_seed(0)
    dec = MaskedDecoder(n_latent=3, n_output=4, n_hidden=8)
    dec.prune_(torch.zeros(4, 3, dtype=torch.bool))
    z = torch.randn(5, 3)
    assert torch.allclose(dec(z), dec(torch.randn(5, 3)))  # every gene a constant
    back = torch.zeros(4, 3, dtype=torch.bool)
    back[1, 2] = True
    assert dec.readmit_(back) == 1 and dec.readmit_(back) == 0
    assert dec.W[1, 2] == 0 and dec.prune_mask.sum() == 1
    dec(z).sum().backward()
    assert dec.W.grad[1, 2] != 0 and (dec.W.grad.flatten().count_nonzero() == 1)
    with pytest.raises(ValueError, match="shape"):
        dec.readmit_(torch.ones(2, 2, dtype=torch.bool))


@pytest.mark.parametrize("first_bias", [False, True])
def test_first_layer_norm_bounds_the_slope_of_a_gene_by_w(first_bias):
    # |d out_j / d z_k| <= first_norm * |w_jk| for unit-norm hidden and output weights; the default norm halves
    # the biased network's gain, which reaches |w| with every unit in its linear range (the unbiased one's
    # linear responses reach |w| / 2), so that |w| and the prior's rates mean the same in both networks
    dec = MaskedDecoder(n_latent=3, n_output=40, n_hidden=32, first_bias=first_bias)
    assert dec.first_norm == (0.5 if first_bias else 1.0)
    first, _, head = dec.network_weights()
    torch.testing.assert_close(first.norm(dim=0), torch.full((3,), dec.first_norm))
    torch.testing.assert_close(head.norm(dim=-1), torch.ones(1, 40))
    jac = torch.stack(
        [torch.autograd.functional.jacobian(lambda v: dec(v)[0, 0], z[None])[:, 0] for z in torch.randn(8, 3)]
    )  # (cells, G, K)
    assert (jac.abs() <= dec.first_norm * dec.W.detach().abs() + 1e-6).all()
    assert jac.abs().amax() > 0.1 * dec.first_norm * dec.W.detach().abs().amin()  # the bound is not vacuous
    # the bias network in its linear range attains the bound: head along A_k, bias large
    lin = MaskedDecoder(n_latent=1, n_output=1, n_hidden=4, first_bias=True, w_init=1.0, w_init_noise=0.0)
    with torch.no_grad():
        lin.first.fill_(1.0)
        lin.first_bias.fill_(10.0)
        lin.head_weight.fill_(1.0)
    slope = lin(torch.tensor([[1.0]])) - lin(torch.tensor([[0.0]]))
    torch.testing.assert_close(slope.flatten(), torch.tensor([0.5]))
    with pytest.raises(ValueError, match="first_norm"):
        MaskedDecoder(n_latent=3, n_output=4, first_norm=0.0)


def test_first_bias_moves_the_kink_of_a_single_factor_response():
    # one hidden unit, A = 1, b = -1, w = 1, output weight 1: the gene is relu(z - 1), flat below z = 1
    kw = {"n_latent": 1, "n_output": 1, "n_hidden": 1, "w_init": 1.0, "w_init_noise": 0.0}
    dec = MaskedDecoder(**kw, first_bias=True, first_norm=1.0)
    with torch.no_grad():
        dec.first.fill_(1.0)
        dec.first_bias.fill_(-1.0)
        dec.head_weight.fill_(1.0)
    z = torch.tensor([[-2.0], [0.0], [0.5], [1.0], [3.0]])
    torch.testing.assert_close(dec(z)[0, :, 0], torch.tensor([0.0, 0.0, 0.0, 0.0, 2.0]))
    no_bias = MaskedDecoder(**kw, first_bias=False)
    assert no_bias.first_bias is None and "first_bias" not in dict(no_bias.named_parameters())
    with torch.no_grad():
        no_bias.first.fill_(1.0)
        no_bias.head_weight.fill_(1.0)
    torch.testing.assert_close(no_bias(z)[0, :, 0], torch.tensor([0.0, 0.0, 0.5, 1.0, 3.0]))  # kink at 0


def test_prune_only_shrinks_and_survives_state_dict():
    dec = MaskedDecoder(n_latent=3, n_output=5, n_hidden=4, n_layers=2)  # two layers: dense path, masked W
    dec.prune_(torch.tensor([[1, 0, 1]] * 5, dtype=torch.bool))
    assert dec.prune_(torch.ones(5, 3, dtype=torch.bool)) == 0  # cannot un-prune
    assert not dec.supports_sparse_path and dec._gene_groups() is None
    z = torch.randn(3, 3)
    z2 = z.clone()
    z2[:, 1] += 5.0
    torch.testing.assert_close(dec(z), dec(z2))  # factor 1 pruned everywhere
    copy = MaskedDecoder(n_latent=3, n_output=5, n_hidden=4, n_layers=2)
    copy.load_state_dict(dec.state_dict())
    assert copy.is_pruned and torch.equal(copy.prune_mask, dec.prune_mask)
    with pytest.raises(ValueError, match="keep must have shape"):
        dec.prune_(torch.ones(2, 2, dtype=torch.bool))


def test_decoder_pickles_for_spawned_processes():
    import pickle

    dec = MaskedDecoder(n_latent=3, n_output=5, n_hidden=4)
    dec.prune_(torch.tensor([[1, 0, 0]] * 5, dtype=torch.bool))
    copy = pickle.loads(pickle.dumps(dec))  # ddp_spawn pickles the model
    z = torch.randn(2, 3)
    torch.testing.assert_close(copy(z), dec(z))


def test_default_budget_follows_the_device(monkeypatch):
    from scsparse.nn import _masked_decoder as md

    dec = MaskedDecoder(n_latent=5, n_output=2_000, n_hidden=128)
    assert dec.budget_mb("cpu") == md.DEFAULT_MEMORY_BUDGET_MB == 512.0
    assert dec.uses_checkpointing(1024, "cpu")  # 2,000 genes x 1,024 cells x 128 units x 2 x 4 bytes > 512 MB

    class Properties:
        total_memory = 80 * 2**30  # an 80 GB GPU

    monkeypatch.setattr(md.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(md.torch.cuda, "get_device_properties", lambda device: Properties())
    assert dec.budget_mb("cuda") == 0.25 * 80 * 1024
    assert not dec.uses_checkpointing(1024, "cuda")  # 2.1 GB of activations fit a quarter of 80 GB
    assert dec.resolve_chunk_size(1024, "cuda") == 2_000  # one chunk
    fixed = MaskedDecoder(n_latent=5, n_output=2_000, n_hidden=128, memory_budget_mb=512)
    assert fixed.budget_mb("cuda") == 512 and fixed.uses_checkpointing(1024, "cuda")
