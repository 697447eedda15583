"""Warnings about the state of the Spike-and-Slab Lasso prior after training."""

from __future__ import annotations

import warnings

from ._spike_slab_lasso import slab_threshold

__all__ = ["NoActiveFactorWarning", "warn_no_active_factor"]


class NoActiveFactorWarning(UserWarning):
    """Training ended with every entry of ``W`` in the spike, so the factors carry no programme.

    Silence it with ``warnings.filterwarnings("ignore", category=NoActiveFactorWarning)``.
    """


def warn_no_active_factor(
    n_rows: int,
    n_steps: int | None,
    rows: str = "training cells",
    stacklevel: int = 3,
    lambda0: float | None = None,
    lambda1: float | None = None,
) -> None:
    """Warn that training left no factor active (``p* <= 0.5`` for every row of ``W`` and factor).

    Parameters
    ----------
    n_rows
        Number of training rows (cells, users, documents).
    n_steps
        Optimiser steps taken, or ``None`` when unknown.
    rows
        What the rows are, for the message.
    stacklevel
        Passed to :func:`warnings.warn`, so the warning points at the user's call.
    lambda0, lambda1
        The prior's spike and slab rates; when given, the message says how large ``|w|`` must grow to enter the
        slab (:func:`~scsparse.nn.slab_threshold`).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_no_active_factor(300, 180)
    >>> caught[0].category.__name__
    'NoActiveFactorWarning'
    """
    steps = f"{n_steps} optimiser steps" if n_steps is not None else "training"
    rates = ""
    if lambda0 is not None and lambda1 is not None:
        rates = (
            f" With lambda0 = {lambda0:g} and lambda1 = {lambda1:g} an entry is in the slab only once |w| > "
            f"{slab_threshold(lambda0, lambda1):.2f} (p* > 0.5 at eta = 0.5); if that is large, raise lambda1 "
            "or lower lambda0 (user guide: Choosing settings, 'The prior's two rates')."
        )
    warnings.warn(
        "Training ended with no active factor: p* <= 0.5 for every feature and factor, so W is all spike and "
        "the factors carry no programme. The Spike-and-Slab Lasso prior switched every factor off before W had "
        f"grown ({steps} on {n_rows} {rows}). Train for more epochs (what counts is the number of steps, "
        "epochs x rows / batch size), with lr=1e-2 if you lowered it, or start W deeper in the slab "
        "(decoder_kwargs={'w_init': 1.0}: fewer entries then go to the spike). See the user guide, Choosing "
        f"settings, 'How long to train'.{rates}",
        NoActiveFactorWarning,
        stacklevel=stacklevel,
    )
