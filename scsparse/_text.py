"""Numbers in sentences: how reports and summaries write a p-value."""

from __future__ import annotations

__all__ = ["format_p"]


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
