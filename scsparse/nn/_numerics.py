"""Floating-point settings for training on the CPU."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

__all__ = ["flush_denormals", "flushing_denormals"]


def flushing_denormals() -> bool:
    """Whether the CPU currently flushes denormal floats to zero (:func:`torch.set_flush_denormal`).

    torch has a setter but no getter; a denormal float32 survives a multiplication by one unless flushing
    is on.

    Examples
    --------
    >>> flushing_denormals() in (True, False)
    True
    """
    return bool((torch.tensor([1e-39], dtype=torch.float32) * 1.0 == 0).item())


@contextmanager
def flush_denormals() -> Iterator[None]:
    """Flush denormal floats to zero on the CPU inside the block; restore the previous setting after it.

    Late in training some intermediate float32 values can fall below the smallest normal number (1.2e-38),
    and the CPU computes with such denormal numbers in slow microcode, which can make epochs several times
    slower (:doc:`/user-guide/large-data`). Values this small contribute nothing to the model. The setting acts
    on the CPU only.

    Examples
    --------
    >>> with flush_denormals():
    ...     flushing_denormals()
    True
    """
    previous = flushing_denormals()
    supported = torch.set_flush_denormal(True)
    try:
        yield
    finally:
        if supported:
            torch.set_flush_denormal(previous)
