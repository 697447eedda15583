"""A run's settings and options: the defaults with the quick run's and the caller's counts, and the names an
option chose.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scsparse.utils import check_integer

__all__ = [
    "chosen_names",
    "run_settings",
]


def run_settings(
    defaults: Mapping[str, Any],
    quick_overrides: Mapping[str, Any],
    quick: bool,
    *,
    given: Mapping[str, Any] | None = None,
    **counts: int | None,
) -> dict[str, Any]:
    """Settings of a run: ``defaults``, then ``quick_overrides`` if ``quick``, then the caller's values not ``None``.

    The ``counts`` are checked (:func:`scsparse.utils.check_integer`, in the order given) and stored as ``int``;
    the ``given`` values after them are stored as they are (the caller checks them).

    Examples
    --------
    >>> run_settings({"n_hidden": 400, "lr": 0.1}, {"n_hidden": 64}, True, n_hidden=None, max_epochs=3)
    {'n_hidden': 64, 'lr': 0.1, 'max_epochs': 3}
    >>> run_settings({"n_hidden": 400, "lr": 0.1}, {}, False, given={"lr": 0.5, "n_hidden": None})
    {'n_hidden': 400, 'lr': 0.5}
    """
    cfg = dict(defaults)
    if quick:
        cfg.update(quick_overrides)
    for key, value in counts.items():
        if value is not None:
            cfg[key] = check_integer(key, value)
    cfg.update({key: value for key, value in (given or {}).items() if value is not None})
    return cfg


def chosen_names(value: str | Sequence[str] | None, known: Sequence[str], what: str) -> list[str]:
    """The names a ``--datasets`` / ``--methods`` option chose, in the order of ``known`` (``None``: all of them).

    Examples
    --------
    >>> chosen_names("b, a", ["a", "b", "c"], "data set(s)")
    ['a', 'b']
    >>> chosen_names(None, ["a", "b"], "method(s)")
    ['a', 'b']
    """
    if value is None:
        return list(known)
    names = [v.strip() for v in value.split(",")] if isinstance(value, str) else [str(v) for v in value]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ValueError(f"Unknown {what} {unknown}; choose from {', '.join(known)} (comma-separated).")
    return [n for n in known if n in names]
