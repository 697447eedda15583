"""How many CPU threads torch may use, for one block of work."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["torch_threads"]


@contextlib.contextmanager
def torch_threads(n_threads: int | None) -> Iterator[None]:
    """Set ``torch.set_num_threads(n_threads)`` inside the block and restore the previous setting after it.

    Small models gain nothing from intra-op threads, and on a shared machine (another job on the same cores)
    torch's default of one thread per core oversubscribes them: each step then waits for a descheduled thread
    and training can run an order of magnitude slower. One or two threads avoid that.

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
    if n_threads is not None:
        torch.set_num_threads(int(n_threads))
    try:
        yield
    finally:
        torch.set_num_threads(saved)
