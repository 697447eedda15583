"""Argument checks shared by every layer of scsparse: one error type, keyword checks, closest-name hints."""

from __future__ import annotations

import difflib
import inspect
import math
import numbers
from collections.abc import Iterable
from typing import Any

__all__ = [
    "InvalidInputError",
    "accepted_keywords",
    "check_choice",
    "check_integer",
    "check_key_added",
    "check_keywords",
    "check_pip_threshold",
    "check_real",
    "did_you_mean",
]


class InvalidInputError(ValueError):
    """The AnnData given to a scsparse model cannot be used as it is; the message says how to fix it."""


def accepted_keywords(cls: type, follow_var_keyword: bool = True) -> set[str]:
    """Keyword arguments ``cls(...)`` accepts, following ``**kwargs`` that ``__init__`` passes to its bases.

    ``follow_var_keyword=False`` reads the first ``__init__`` only (a model whose ``**kwargs`` go to its module,
    not to its bases).
    """
    names: set[str] = set()
    for base in inspect.getmro(cls):
        init = base.__dict__.get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        names |= {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        if not follow_var_keyword or not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return names - {"self"}


def check_keywords(owner: str, given: Iterable[str], accepted: set[str]) -> None:
    """Refuse keyword arguments that nothing accepts, naming the closest accepted ones.

    Examples
    --------
    >>> check_keywords("SparseVAE", ["n_latent"], {"n_latent", "n_hidden"})
    >>> check_keywords("SparseVAE", ["n_latents"], {"n_latent", "n_hidden"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: SparseVAE got an unexpected keyword argument 'n_latents' (did you mean 'n_latent'?). Accepted: ...
    """
    unknown = [k for k in given if k not in accepted]
    if not unknown:
        return
    parts = []
    for k in unknown:
        parts.append(f"{k!r}{did_you_mean(k, sorted(accepted))}")
    noun = "argument" if len(unknown) == 1 else "arguments"
    raise TypeError(
        f"{owner} got an unexpected keyword {noun} {', '.join(parts)}. Accepted: {', '.join(sorted(accepted))}."
    )


def did_you_mean(key: str, options: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` naming the closest of ``options`` to a mistyped ``key``, or ``""``.

    Examples
    --------
    >>> did_you_mean("cnts", ["counts", "spliced"])
    " (did you mean 'counts'?)"
    >>> did_you_mean("zzz", ["counts"])
    ''
    """
    close = difflib.get_close_matches(str(key), [str(o) for o in options], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_integer(name: str, value: Any, *, minimum: int = 1, fix: str = "") -> int:
    """``value`` as an ``int`` if it is a whole number of at least ``minimum``; otherwise say what to pass.

    Examples
    --------
    >>> check_integer("n_latent", 20)
    20
    >>> check_integer("n_latent", 2.5, fix="It is the number of factors.")
    Traceback (most recent call last):
    ...
    scsparse._checks.InvalidInputError: n_latent must be a whole number >= 1, got 2.5. It is the number of factors.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        hint = f" {fix}" if fix else ""
        raise InvalidInputError(f"{name} must be a whole number >= {minimum}, got {value!r}.{hint}")
    return int(value)


def check_real(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    fix: str = "",
) -> float:
    """``value`` as a ``float`` if it is a finite number in the interval; otherwise say which interval.

    Examples
    --------
    >>> check_real("lr", 1e-3, low=0, low_open=True)
    0.001
    >>> check_real("dropout_rate", 1.0, low=0, high=1, high_open=True)
    Traceback (most recent call last):
    ...
    scsparse._checks.InvalidInputError: dropout_rate must be a number in [0, 1), got 1.0.
    """
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (low is None or (value > low if low_open else value >= low))
    ok = ok and (high is None or (value < high if high_open else value <= high))
    if ok:
        return float(value)
    if low is not None and high is not None:
        where = f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    elif low is not None:
        where = f"{'>' if low_open else '>='} {low:g}"
    elif high is not None:
        where = f"{'<' if high_open else '<='} {high:g}"
    else:
        where = "finite"
    raise InvalidInputError(f"{name} must be a number {where}, got {value!r}." + (f" {fix}" if fix else ""))


def check_key_added(key: Any, *, argument: str = "key_added", fix: str = "") -> str:
    """``key`` if it can name AnnData keys that ``.h5ad`` and ``.zarr`` files hold; otherwise say why and what to pass.

    A key must be a non-empty string without ``"/"`` (a file reads ``"a/b"`` as ``"b"`` inside a group ``"a"``, so
    the written file cannot be read back), without the NUL character, and not ``"."`` or ``".."``.

    Examples
    --------
    >>> check_key_added("sparsevae")
    'sparsevae'
    >>> check_key_added("run/1")
    Traceback (most recent call last):
    ...
    scsparse._checks.InvalidInputError: key_added='run/1' contains '/', which .h5ad and .zarr files read as a ...
    """
    hint = f" {fix}" if fix else ""
    if not isinstance(key, str) or not key:
        raise InvalidInputError(f"{argument} must be a non-empty string, got {key!r}.{hint}")
    if "/" in key:
        raise InvalidInputError(
            f"{argument}={key!r} contains '/', which .h5ad and .zarr files read as a group separator: the file "
            f"written would not read back. Use another character, e.g. {key.replace('/', '_')!r}."
        )
    if "\x00" in key or key in (".", ".."):
        raise InvalidInputError(
            f"{argument}={key!r} cannot name a key in an .h5ad or .zarr file; use letters, digits, '_'."
        )
    return key


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """``value`` if it is one of ``choices``; otherwise name them and the closest one.

    Examples
    --------
    >>> check_choice("likelihood", "nbb", ("nb", "poisson"))
    Traceback (most recent call last):
    ...
    scsparse._checks.InvalidInputError: likelihood must be one of 'nb', 'poisson', got 'nbb' (did you mean 'nb'?).
    """
    options = tuple(choices)
    if isinstance(value, str) and value in options:
        return value
    raise InvalidInputError(
        f"{name} must be one of {', '.join(map(repr, options))}, got {value!r}"
        + (did_you_mean(value, options) if isinstance(value, str) else "")
        + "."
    )


def check_pip_threshold(pip_threshold: Any) -> float:
    """``pip_threshold`` as a ``float`` if it is in ``[0, 1)``: a gene is in a programme when its ``p*`` exceeds it.

    Examples
    --------
    >>> check_pip_threshold(0.5)
    0.5
    """
    return check_real(
        "pip_threshold", pip_threshold, low=0, high=1, high_open=True,
        fix="A gene is in a programme when its p* exceeds it (default 0.5).",
    )  # fmt: skip
