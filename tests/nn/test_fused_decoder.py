import time

import pytest
import torch

from scsparse._threads import torch_threads
from scsparse.nn import MaskedDecoder
from scsparse.nn._fused_decoder import PAD_FACTORS_TO, FusedMaskedLayer


def _pair(**kwargs) -> tuple[MaskedDecoder, MaskedDecoder]:
    """The same decoder twice: run as the fused autograd function, and through autograd op by op."""
    fused = MaskedDecoder(fused=True, **kwargs)
    plain = MaskedDecoder(fused=False, **kwargs)
    plain.load_state_dict(fused.state_dict())
    return fused, plain


@pytest.mark.parametrize("n_heads", [1, 2])
@pytest.mark.parametrize("first_bias", [False, True])
@pytest.mark.parametrize("chunk_size", [None, 4])
@pytest.mark.parametrize("covariates", [None, "folded", "term"])
def test_fused_path_gives_the_autograd_outputs_and_gradients(
    n_heads, first_bias, chunk_size, covariates, decoder_pass, assert_same_pass
):
    """Covariates are folded into the first layer's inputs while the padded width grows by half, else a term."""
    torch.manual_seed(0)
    n_cat = {None: 0, "folded": 2, "term": 3}[covariates]
    cov = {"n_cat_list": [n_cat], "n_continuous": 2 if covariates == "term" else 1} if covariates else {}
    fused, plain = _pair(
        n_latent=4, n_output=11, n_hidden=6, n_heads=n_heads, first_bias=first_bias, chunk_size=chunk_size, **cov
    )
    assert fused.uses_fused_path() and not plain.uses_fused_path()
    with torch.no_grad():
        fused.W.mul_(torch.bernoulli(torch.full_like(fused.W, 0.5)))
        plain.W.copy_(fused.W)
    z = torch.randn(7, 4)
    args = (torch.tensor([0, 1, 2, 1, 0, 2, 2]) % n_cat,) if covariates else ()
    continuous = torch.randn(7, cov["n_continuous"]) if covariates else None
    weights = torch.randn(n_heads, 7, 11)
    fused_pass, plain_pass = (decoder_pass(dec, z, weights, *args, continuous=continuous) for dec in (fused, plain))
    assert_same_pass(fused_pass, plain_pass, rtol=1e-5, atol=1e-6, param_rtol=1e-5)


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("chunk_size", [None, 4])
@pytest.mark.parametrize("n_heads", [1, 2])
def test_outputs_are_laid_out_cells_by_genes(fused, chunk_size, n_heads):
    """The softmax over genes and the likelihood read the outputs along genes: they come contiguous from every path."""
    dec = MaskedDecoder(n_latent=4, n_output=11, n_hidden=6, n_heads=n_heads, chunk_size=chunk_size, fused=fused)
    out = dec(torch.randn(7, 4))
    assert out.shape == (n_heads, 7, 11) and out.is_contiguous()


@pytest.mark.parametrize("n_cells", [1, 5])
def test_outputs_do_not_share_the_workspace(n_cells):
    """One cell's genes-first outputs are already contiguous: the result must still be a copy, not the buffer."""
    dec = MaskedDecoder(n_latent=4, n_output=11, n_hidden=6)
    first = dec(torch.randn(n_cells, 4))
    kept = first.detach().clone()
    dec(torch.randn(n_cells, 4))
    assert torch.equal(first.detach(), kept)


@pytest.mark.parametrize(("n_cat", "folded"), [(3, True), (11, True), (12, False)])
def test_covariates_fold_into_the_inputs_only_while_the_padded_width_grows_by_half(monkeypatch, n_cat, folded):
    """20 factors and a bias are 21 inputs, padded to 24: up to 11 batch columns pad to 32, 12 to 40 (> 36)."""
    import scsparse.nn._masked_decoder as masked

    calls = []

    class Spy(FusedMaskedLayer):
        @staticmethod
        def forward(ctx, z, w, first, cov_term, *rest):
            calls.append((z.shape[1], cov_term is None))
            return FusedMaskedLayer.forward(ctx, z, w, first, cov_term, *rest)

    monkeypatch.setattr(masked, "FusedMaskedLayer", Spy)
    dec = MaskedDecoder(n_latent=20, n_output=5, n_hidden=8, first_bias=True, n_cat_list=[n_cat])
    dec(torch.randn(6, 20), torch.arange(6) % n_cat).sum().backward()
    assert calls == [(21 + n_cat, True)] if folded else [(21, False)]
    assert dec.covariates.weight.grad is not None and dec.covariates.weight.grad.abs().sum() > 0


def test_fused_path_serves_the_pruned_decoder_genes_with_several_factors():
    torch.manual_seed(2)
    fused, plain = _pair(n_latent=3, n_output=9, n_hidden=5, n_heads=2, chunk_size=2)
    keep = torch.tensor(
        [[1, 1, 0], [0, 0, 0], [1, 0, 0], [1, 1, 1], [0, 1, 1], [0, 0, 1], [1, 0, 1], [0, 0, 0], [1, 1, 0]]
    )
    for dec in (fused, plain):
        dec.prune_(keep.bool())
    z = torch.randn(6, 3, requires_grad=True)
    (fused(z) ** 2).sum().backward()
    grad_fused = (z.grad.clone(), fused.first.grad.clone(), fused.W.grad.clone())
    z.grad = None
    (plain(z) ** 2).sum().backward()
    for a, b in zip(grad_fused, (z.grad, plain.first.grad, plain.W.grad), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_fused_path_only_for_one_relu_layer_without_dropout():
    assert MaskedDecoder(3, 5).uses_fused_path("cpu")
    if not torch.cuda.is_available():  # no GPU, so no Triton kernels: a CUDA device keeps autograd unless asked
        assert not MaskedDecoder(3, 5).uses_fused_path("cuda")
    assert MaskedDecoder(3, 5, fused=True).uses_fused_path("cuda")
    assert not MaskedDecoder(3, 5, fused=False).uses_fused_path("cpu")
    for kwargs in ({"n_layers": 2}, {"activation": "elu"}, {"activation": "leaky_relu"}, {"dropout_rate": 0.1}):
        assert not MaskedDecoder(3, 5, fused=True, **kwargs).uses_fused_path("cpu"), kwargs


def test_fused_layer_keeps_no_activations_for_the_backward_pass():
    z, w, first = torch.randn(8, 3), torch.randn(40, 3), torch.randn(16, 3)
    head, bias = torch.randn(1, 40, 16), torch.zeros(1, 40)
    inputs = [t.requires_grad_(True) for t in (z, w, first, head, bias)]
    out = FusedMaskedLayer.apply(inputs[0], inputs[1], inputs[2], None, inputs[3], inputs[4], 5)
    saved = [t for t in out.grad_fn.saved_tensors if t is not None]
    padded = PAD_FACTORS_TO * (8 + 40 + 16)  # z, w and A with the factor dimension padded
    assert sum(t.numel() for t in saved) == padded + head.numel()  # no (genes, cells, hidden) activations


def _step_seconds(dec: MaskedDecoder, z: torch.Tensor) -> float:
    start = time.perf_counter()
    dec(z).square().mean().backward()
    return time.perf_counter() - start


def test_fused_training_step_is_not_slower_than_autograd_on_cpu():
    torch.manual_seed(3)
    fused, plain = _pair(n_latent=10, n_output=600, n_hidden=64, first_bias=True)
    z = torch.randn(64, 10)
    times: dict[str, list[float]] = {"fused": [], "autograd": []}
    # One thread: the comparison is of the work each path does. With several threads on a host whose cores other
    # processes also hold, every parallel region waits for a descheduled worker, and the chunked fused path has more
    # of them: it once measured 3x slower than autograd that way while two test suites shared two cores.
    with torch_threads(1):
        for _ in range(9):  # interleaved, so that load from other processes hits both alike; the best of each
            times["fused"].append(_step_seconds(fused, z))
            times["autograd"].append(_step_seconds(plain, z))
    t_fused, t_plain = min(times["fused"][1:]), min(times["autograd"][1:])
    assert t_fused <= 1.1 * t_plain, f"fused {t_fused * 1e3:.1f} ms vs autograd {t_plain * 1e3:.1f} ms per step"


def test_workspace_is_kept_between_calls_and_survives_inference_mode():
    dec = MaskedDecoder(n_latent=3, n_output=20, n_hidden=8, chunk_size=6)
    with torch.inference_mode():  # the buffers first allocated here ...
        dec(torch.randn(4, 3))
    buffer = dec._workspace._flat["hidden"]
    dec.train()
    (dec(torch.randn(4, 3)) ** 2).sum().backward()  # ... are written by training afterwards
    assert dec._workspace._flat["hidden"] is buffer  # reused, not reallocated
    dec(torch.randn(9, 3))  # a larger batch grows the buffer
    assert dec._workspace._flat["hidden"].numel() == 6 * 9 * 8
    import copy
    import pickle

    assert pickle.loads(pickle.dumps(dec))._workspace._flat == {}  # scratch space is not pickled
    assert copy.deepcopy(dec)._workspace._flat == {}


def test_covariates_follow_the_dtype_of_a_float64_decoder():
    dec = MaskedDecoder(n_latent=3, n_output=6, n_hidden=5, n_cat_list=[2]).double()
    out = dec(torch.randn(4, 3, dtype=torch.float64), torch.tensor([0, 1, 1, 0]))
    assert out.dtype == torch.float64
