"""The Triton kernels of the masked decoder against autograd, in Triton's interpreter on CPU tensors.

Run by ``test_triton_decoder.py`` in a process of its own started with ``TRITON_INTERPRET=1``: Triton builds its own
helpers for the interpreter when it is first imported, and a CUDA build of torch can import Triton before any test
runs.
"""

import math
import os

import pytest
import torch

if os.environ.get("TRITON_INTERPRET") != "1":
    pytest.skip("run by test_triton_decoder.py, under TRITON_INTERPRET=1", allow_module_level=True)
pytest.importorskip("triton")

from scsparse.nn import MaskedDecoder, _masked_decoder, _triton_decoder  # noqa: E402
from scsparse.nn._triton_decoder import TritonMaskedLayer, _layout  # noqa: E402


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def _reference(z, w, first, cov, head, bias):
    u = (w[:, None] * z[None]) @ first.t() + (0 if cov is None else cov)
    return torch.einsum("gbh,ngh->nbg", torch.relu(u), head) + bias[:, None]


@pytest.mark.parametrize(
    ("n_cells", "n_genes", "n_factors", "n_hidden", "n_heads", "covariates"),
    [(10, 7, 3, 8, 1, False), (70, 37, 21, 30, 2, True), (5, 3, 17, 128, 1, True), (130, 1, 2, 16, 2, False)],
)
def test_kernels_give_the_outputs_and_gradients_of_autograd(n_cells, n_genes, n_factors, n_hidden, n_heads, covariates):
    torch.manual_seed(0)
    shapes = [(n_cells, n_factors), (n_genes, n_factors), (n_hidden, n_factors), (n_cells, n_hidden),
              (n_heads, n_genes, n_hidden), (n_heads, n_genes)]  # fmt: skip
    exact = [torch.randn(s, dtype=torch.float64, requires_grad=True) for s in shapes]
    if not covariates:
        exact[3] = None
    inputs = [None if t is None else t.detach().float().requires_grad_(True) for t in exact]
    expected = _reference(*exact)
    weights = torch.randn_like(expected)
    out = TritonMaskedLayer.apply(*inputs)
    torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-4)
    grads = torch.autograd.grad((out * weights.float()).sum(), [t for t in inputs if t is not None])
    expected_grads = torch.autograd.grad((expected * weights).sum(), [t for t in exact if t is not None])
    for grad, want in zip(grads, expected_grads, strict=True):
        assert grad.shape == want.shape
        scale = want.abs().max().clamp_min(1.0)
        torch.testing.assert_close(grad.double() / scale, want / scale, rtol=0, atol=1e-5)


def test_decoder_runs_the_kernels_where_triton_is_at_hand(monkeypatch, decoder_pass, assert_same_pass):
    torch.manual_seed(1)
    kwargs = {"n_latent": 4, "n_output": 23, "n_hidden": 12, "n_heads": 2, "n_cat_list": [3]}
    kernel, plain = MaskedDecoder(**kwargs), MaskedDecoder(fused=False, **kwargs)
    plain.load_state_dict(kernel.state_dict())
    assert not kernel.uses_triton_kernel("cpu")
    monkeypatch.setattr(_masked_decoder, "triton_available", lambda device: True)  # a GPU, as far as it can tell
    assert kernel.uses_triton_kernel("cpu") and not plain.uses_triton_kernel("cpu")
    assert not MaskedDecoder(n_layers=2, **kwargs).uses_triton_kernel("cpu")
    z, batch = torch.randn(19, 4), torch.tensor([0, 1, 2, 1, 0, 2, 2, 0, 1, 1, 0, 2, 0, 0, 1, 2, 2, 1, 0])
    weights = torch.randn(2, 19, 23)
    kernel_pass, plain_pass = (decoder_pass(dec, z, weights, batch) for dec in (kernel, plain))
    assert kernel(z, batch).grad_fn.name() == "TritonMaskedLayerBackward"
    with monkeypatch.context() as patch:  # torch.compile gets the op-by-op path, which it fuses itself
        patch.setattr(torch.compiler, "is_compiling", lambda: True)
        assert not kernel.uses_triton_kernel("cpu") and not kernel.uses_fused_path("cuda")
    monkeypatch.setattr(_masked_decoder, "kernel_fits", lambda *shape: False)  # offsets past 32 bits: chunks instead
    assert kernel(z, batch).grad_fn.name() == "FusedMaskedLayerBackward"
    assert_same_pass(kernel_pass, plain_pass, rtol=1e-5, atol=1e-5, param_rtol=1e-4)  # 3xTF32 sums in another order


def test_layout_covers_every_gene_with_few_kernel_variants():
    for n_cells, n_genes in [(1, 1), (128, 2_000), (1_024, 20_000), (1_000, 3), (4_096, 100_000)]:
        layout = _layout(n_cells, n_genes, 21, 128)
        per_group = layout["genes_per_group"]
        assert per_group & (per_group - 1) == 0  # a power of two: few compiled variants
        assert layout["n_groups"] * per_group >= n_genes > (layout["n_groups"] - 1) * per_group
        assert layout["n_tiles"] * layout["BLOCK_B"] >= n_cells
        assert min(layout["BLOCK_B"], layout["BLOCK_K"], layout["BLOCK_H"]) >= 16
        assert layout["BLOCK_K"] >= 21 and layout["BLOCK_H"] >= 128
    assert math.prod(_layout(1_024, 20_000, 21, 128)[k] for k in ("n_tiles", "n_groups")) >= 256  # fills a GPU
    assert _triton_decoder.kernel_fits(4_096, 60_000, 21, 128, 2)
    assert not _triton_decoder.kernel_fits(65_536, 200_000, 21, 128, 2)


def test_backward_keeps_no_activations_and_float32_only():
    z, w, first = torch.randn(8, 3), torch.randn(40, 3), torch.randn(16, 3)
    head, bias = torch.randn(1, 40, 16), torch.zeros(1, 40)
    inputs = [t.requires_grad_(True) for t in (z, w, first, head, bias)]
    out = TritonMaskedLayer.apply(inputs[0], inputs[1], inputs[2], None, inputs[3], inputs[4])
    saved = [t for t in out.grad_fn.saved_tensors if t is not None]
    assert sum(t.numel() for t in saved) == z.numel() + w.numel() + first.numel() + head.numel()
    with pytest.raises(TypeError, match="float32"):
        TritonMaskedLayer.apply(z.double(), w.double(), first.double(), None, head.double(), bias.double())
    assert not _triton_decoder.triton_available("cpu")
