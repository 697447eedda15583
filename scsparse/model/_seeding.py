"""Seeding a fit without changing the caller's random state."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch
from scvi import settings

from scsparse.train import without_log_lines

__all__ = ["seeded"]

#: Environment variables that seeding scvi-tools (``scvi.settings.seed``, Lightning's ``seed_everything``) sets.
_SEEDING_ENV = ("PL_GLOBAL_SEED", "PL_SEED_WORKERS", "XLA_FLAGS")
#: The logger of Lightning's "Seed set to N" line, which seeding on the model's behalf would print.
_SEED_LOGGER = "lightning.fabric.utilities.seed"


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Seed scvi-tools (and so Python's, NumPy's and torch's global generators) for the block, then put back
    everything the seeding changed.

    Inside the block ``scvi.settings.seed`` is ``seed``: the train/validation split of scvi-tools' data splitter,
    the minibatch order, dropout and the sampled codes all follow it, so the same seed gives the same fit. After
    the block, the caller's generators (``random``, ``numpy.random``, torch's CPU generator and, when CUDA is
    initialised, the CUDA generators), ``scvi.settings.seed``, cuDNN's ``deterministic`` and ``benchmark`` flags
    and the environment variables seeding sets are as they were before it, also when the block raises.

    Not Lightning's ``isolate_rng``: it restores the same generators, but only when the block ends without an
    error, and not ``scvi.settings.seed``, cuDNN's flags or the environment variables.

    Parameters
    ----------
    seed
        The seed of the block.

    Examples
    --------
    >>> import numpy as np
    >>> before = np.random.get_state()[1].copy()
    >>> with seeded(3):
    ...     a = np.random.rand()
    >>> with seeded(3):
    ...     b = np.random.rand()
    >>> a == b, bool(np.array_equal(np.random.get_state()[1], before))
    (True, True)
    """
    python_state = random.getstate()
    numpy_state = np.random.get_state()  # noqa: NPY002 - the legacy global generator is what seeding changes
    cudnn = (torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)
    environment = {name: os.environ.get(name) for name in _SEEDING_ENV}
    previous_seed = settings.seed
    cuda_devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    # the seed is the model's (recorded with its results), not news to print
    try:
        with without_log_lines(_SEED_LOGGER, "Seed set to"), torch.random.fork_rng(devices=cuda_devices):
            settings.seed = int(seed)
            try:
                yield
            finally:
                settings.seed = previous_seed  # reseeds the generators when it is a number: restored below
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)  # noqa: NPY002
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = cudnn
        for name, value in environment.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
