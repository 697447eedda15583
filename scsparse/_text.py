"""Text for reports and summaries: how they write a p-value and a markdown table."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["format_p", "markdown_rows"]


def format_p(p: float) -> str:
    """An adjusted p-value for text: three decimals, scientific below 0.001, and ``< 1e-300`` below doubles.

    Examples
    --------
    >>> format_p(0.0123), format_p(3.1e-8), format_p(0.0)
    ('0.012', '3.1e-08', '< 1e-300')
    """
    if p <= 0.0:
        return "< 1e-300"  # below double precision
    return f"{p:.1e}" if p < 0.001 else f"{p:.3f}"


def markdown_rows(header: Sequence[Any], rows: Iterable[Sequence[Any]]) -> list[str]:
    """The lines of a GitHub-flavoured markdown table: ``header``, the ``|---|`` rule, one line per row.

    Examples
    --------
    >>> markdown_rows(["method", "n"], [["VAE", 3]])
    ['| method | n |', '|---|---|', '| VAE | 3 |']
    """
    header = [str(h) for h in header]
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] * len(header)) + "|",
        *("| " + " | ".join(str(c) for c in row) + " |" for row in rows),
    ]
