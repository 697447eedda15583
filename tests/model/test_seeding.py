"""model._seeding.seeded: a seeded block that leaves the caller's random state and settings as they were."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
import scvi
import torch

from scsparse.model._seeding import seeded


def _state() -> dict:
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state()[1].copy(),  # noqa: NPY002 - the legacy global generator seeding changes
        "torch": torch.random.get_rng_state().clone(),
        "cudnn": (torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark),
        "scvi_seed": scvi.settings.seed,
        "env": {k: os.environ.get(k) for k in ("PL_GLOBAL_SEED", "PL_SEED_WORKERS", "XLA_FLAGS")},
    }


def _assert_same(before: dict, after: dict) -> None:
    assert after["python"] == before["python"]
    assert np.array_equal(after["numpy"], before["numpy"])
    assert torch.equal(after["torch"], before["torch"])
    assert (after["cudnn"], after["scvi_seed"], after["env"]) == (before["cudnn"], before["scvi_seed"], before["env"])


def test_seeded_gives_the_same_draws_and_puts_everything_back_also_when_the_block_raises():
    """What Lightning's isolate_rng does not: the state comes back after an error too, and scvi-tools' seed, the
    cuDNN flags and the seeding environment variables with it."""
    random.seed(1)
    np.random.seed(2)  # noqa: NPY002
    torch.manual_seed(3)
    before = _state()
    draws = []
    for _ in range(2):
        with seeded(7):
            assert scvi.settings.seed == 7 and os.environ.get("PL_GLOBAL_SEED") == "7"
            draws.append((random.random(), float(np.random.rand()), float(torch.rand(1))))  # noqa: NPY002
        _assert_same(before, _state())
    assert draws[0] == draws[1]
    with pytest.raises(RuntimeError, match="inside the block"):
        with seeded(11):
            random.random(), np.random.rand(), torch.rand(1)  # noqa: NPY002
            torch.backends.cudnn.benchmark = not torch.backends.cudnn.benchmark
            raise RuntimeError("inside the block")
    _assert_same(before, _state())
