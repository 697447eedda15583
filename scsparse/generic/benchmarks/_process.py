"""The benchmark process: its training logs, its CPU threads and its memory."""

from __future__ import annotations

import contextlib
import logging
import math
import warnings
from collections.abc import Iterator
from pathlib import Path

from scsparse.nn import NoActiveFactorWarning
from scsparse.utils import torch_threads

__all__ = [
    "cpu_threads",
    "proc_status_mb",
    "quiet_training_logs",
]


@contextlib.contextmanager
def quiet_training_logs(level: int = logging.WARNING) -> Iterator[None]:
    """Raise the level of the lightning and scvi-tools loggers for the duration of a benchmark.

    The previous levels (and ``scvi.settings.verbosity``) are restored on exit. The
    :class:`~scsparse.nn.NoActiveFactorWarning` is silenced too: the benchmarks that read factors report each
    fit's active factors in their results (and the summaries say when none is left); speed and scale runs
    are timings, where the factors do not matter.
    """
    names = ("lightning", "lightning.pytorch", "lightning.fabric", "scvi", "pytorch_lightning")
    loggers = [logging.getLogger(n) for n in names]
    saved = [lg.level for lg in loggers]
    from scsparse.train import clean_training_output

    try:
        import scvi

        saved_verbosity = scvi.settings.verbosity
        scvi.settings.verbosity = level
    except ImportError:  # pragma: no cover
        scvi = None
        saved_verbosity = None
    for lg in loggers:
        lg.setLevel(level)
    try:
        with (
            clean_training_output([r".*smaller than the logging interval.*", r".*does not have many workers.*"]),
            warnings.catch_warnings(),
        ):
            warnings.filterwarnings("ignore", category=NoActiveFactorWarning)
            yield
    finally:
        for lg, lvl in zip(loggers, saved, strict=True):
            lg.setLevel(lvl)
        if scvi is not None:
            scvi.settings.verbosity = saved_verbosity


@contextlib.contextmanager
def cpu_threads(n_threads: int | None) -> Iterator[None]:
    """The CPU threads of torch and of the native pools of the other methods (BLAS, OpenMP) inside the block.

    torch (and numba) through :func:`scsparse.utils.torch_threads`, the BLAS and OpenMP pools of NMF, cNMF, MOFA+
    and PCA through ``threadpoolctl``; both are restored after the block.

    Parameters
    ----------
    n_threads
        Threads per pool; ``None`` leaves the libraries' defaults.

    Examples
    --------
    >>> import torch
    >>> with cpu_threads(1):
    ...     torch.get_num_threads()
    1
    """
    from threadpoolctl import threadpool_limits

    with torch_threads(n_threads), threadpool_limits(n_threads):
        yield


def proc_status_mb(field: str) -> float:
    """A memory field of this process's ``/proc/self/status`` (``"VmRSS"``, ``"VmHWM"``) in MB; ``nan`` off Linux."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024  # kB
    return math.nan
