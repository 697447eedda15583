"""Shared checks of the masked decoder's paths: one pass's outputs and gradients, and two passes compared."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

DecoderPass = tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor | None]]


def _decoder_pass(decoder: torch.nn.Module, z: torch.Tensor, weights: torch.Tensor, *args, **kwargs) -> DecoderPass:
    """The output of ``decoder(z, *args, **kwargs)`` and the gradients of ``(output * weights).sum()``.

    Returns the output, the gradient of ``z`` and each named parameter's gradient (``None`` where it has none).
    """
    z_in = z.clone().requires_grad_(True)
    out = decoder(z_in, *args, **kwargs)
    (out * weights).sum().backward()
    grads = {name: None if p.grad is None else p.grad.clone() for name, p in decoder.named_parameters()}
    return out.detach(), z_in.grad, grads


def _assert_same_pass(got: DecoderPass, want: DecoderPass, *, rtol: float, atol: float, param_rtol: float) -> None:
    """Outputs and input gradients close at ``rtol``/``atol``; every parameter's gradient at ``param_rtol``/``atol``."""
    torch.testing.assert_close(got[0], want[0], rtol=rtol, atol=atol)
    torch.testing.assert_close(got[1], want[1], rtol=rtol, atol=atol)
    assert got[2].keys() == want[2].keys()
    for name, grad in got[2].items():
        torch.testing.assert_close(grad, want[2][name], rtol=param_rtol, atol=atol, msg=name)


@pytest.fixture
def decoder_pass() -> Callable[..., DecoderPass]:
    """A function: one forward and backward pass of a decoder, its output and gradients (see ``_decoder_pass``)."""
    return _decoder_pass


@pytest.fixture
def assert_same_pass() -> Callable[..., None]:
    """A function: two decoder passes give the same output and gradients, to the tolerances given."""
    return _assert_same_pass
