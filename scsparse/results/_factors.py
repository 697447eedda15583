"""Choosing factors by name or position, as every ``factors=`` argument does."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scsparse._checks import InvalidInputError

__all__ = ["resolve_factors"]


def resolve_factors(
    names: Sequence[str],
    active: Sequence[str],
    factors: Sequence[str | int] | str | int | None,
    *,
    source: str,
    pip_threshold: float = 0.5,
) -> list[str]:
    """Factor names from names or positions; ``None`` gives the active factors.

    Parameters
    ----------
    names
        All factor names, in order (positions index them).
    active
        The active factors, returned for ``factors=None``.
    factors
        Names, positions, one of either, or ``None``.
    source
        Where the factors come from, for the messages (e.g. ``"adata.uns['sparsevae']"`` or ``"the model"``).
    pip_threshold
        The threshold that defined ``active``, for the message when none is active.

    Raises
    ------
    InvalidInputError
        No active factor (for ``None``), a position out of range, an unknown name or a factor named twice.

    Examples
    --------
    >>> resolve_factors(["factor_0", "factor_1", "factor_2"], ["factor_2"], [0, "factor_1"], source="the model")
    ['factor_0', 'factor_1']
    >>> resolve_factors(["factor_0", "factor_1", "factor_2"], ["factor_2"], None, source="the model")
    ['factor_2']
    """
    names = [str(n) for n in names]
    if factors is None:
        if not len(active):
            raise InvalidInputError(
                f"No active factor in {source} (no gene has p* > {pip_threshold}): the model may need more epochs. "
                "Pass factors=[...] (names or indices) to use inactive factors anyway."
            )
        return [str(f) for f in active]
    if isinstance(factors, str | int | np.integer):
        factors = [factors]
    out = []
    for f in factors:
        if isinstance(f, int | np.integer) and not isinstance(f, bool):
            if not 0 <= int(f) < len(names):
                raise InvalidInputError(f"Factor index {f} out of range: there are {len(names)} factors.")
            out.append(names[int(f)])
        elif str(f) in names:
            out.append(str(f))
        else:
            raise InvalidInputError(
                f"Unknown factor {f!r}; factors are {names[0]} ... {names[-1]} (or integer indices)."
            )
    if len(set(out)) != len(out):
        raise InvalidInputError(f"A factor is named twice: {out}.")
    return out
