"""How many CPU threads torch may use, for one block of work."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["torch_threads"]


@contextlib.contextmanager
def torch_threads(n_threads: int | None) -> Iterator[None]:
    """Set ``torch.set_num_threads(n_threads)`` inside the block and restore the previous setting after it.

    numba's threads are set to the same number (at most its ``NUMBA_NUM_THREADS``) and restored too: its OpenMP
    threading layer, which scanpy's preprocessing runs on, shares torch's OpenMP runtime and sets that runtime's
    thread count to one per core when its pool starts, so the first ``sc.pp.normalize_total`` inside the block
    would otherwise raise torch from one thread to one per core for the rest of it.

    On cores shared with another job, torch's default of one thread per core oversubscribes them: each step then
    waits for a descheduled thread and training can run an order of magnitude slower. Cap the threads at the
    cores no other job uses.

    Parameters
    ----------
    n_threads
        Number of intra-op threads; ``None`` leaves torch's setting as it is inside the block (and restores it
        afterwards: wrap third-party code that changes it behind torch's back, such as numba's OpenMP layer
        under scanpy's ``seurat_v3`` gene selection, which raised a one-thread setting to the core count).

    Raises
    ------
    ValueError
        If ``n_threads`` is not a positive integer or ``None``.

    Examples
    --------
    >>> import torch
    >>> before = torch.get_num_threads()
    >>> with torch_threads(1):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
    """
    if n_threads is not None and (isinstance(n_threads, bool) or int(n_threads) != n_threads or n_threads < 1):
        raise ValueError(f"n_threads must be a positive integer or None, got {n_threads!r}")
    import torch

    saved = torch.get_num_threads()
    # numba first: starting its pool (any call) and setting its count set the OpenMP runtime torch shares
    numba = _numba() if n_threads is not None else None
    saved_numba = numba.get_num_threads() if numba is not None else None
    if numba is not None:
        numba.set_num_threads(min(int(n_threads), numba.config.NUMBA_NUM_THREADS))
    if n_threads is not None:
        torch.set_num_threads(int(n_threads))
    try:
        yield
    finally:
        if numba is not None:
            numba.set_num_threads(saved_numba)
        torch.set_num_threads(saved)


def _numba():
    """numba, when installed (scanpy needs it); ``None`` otherwise."""
    try:
        import numba
    except ImportError:
        return None
    return numba
