"""Argument checks shared by every layer of scsparse: one error type, keyword checks, closest-name hints."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Iterable

__all__ = ["InvalidInputError", "accepted_keywords", "check_keywords", "did_you_mean"]


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
