"""The names of the AnnData keys a fit is stored under: the only place they are spelt out."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["factors_key", "loadings_key", "pip_key", "result_keys", "study_key_name"]


def factors_key(key: str, block: str | None = None) -> str:
    """``obsm`` key of the factors: ``X_{key}``, or ``X_{key}_{block}`` for a multi-study block.

    Examples
    --------
    >>> factors_key("sparsevae"), factors_key("mssvae", "shared")
    ('X_sparsevae', 'X_mssvae_shared')
    """
    return f"X_{key}" if block is None else f"X_{key}_{block}"


def loadings_key(key: str, block: str | None = None) -> str:
    """``varm`` key of the mask ``W``: ``{key}_W``, or ``{key}_W_{block}`` (``shared`` or a study's key name).

    Examples
    --------
    >>> loadings_key("sparsevae"), loadings_key("mssvae", "stim")
    ('sparsevae_W', 'mssvae_W_stim')
    """
    return f"{key}_W" if block is None else f"{key}_W_{block}"


def pip_key(key: str, block: str | None = None) -> str:
    """``varm`` key of the inclusion probabilities ``p*``: ``{key}_pip``, or ``{key}_pip_{block}``.

    Examples
    --------
    >>> pip_key("sparsevae"), pip_key("mssvae", "shared")
    ('sparsevae_pip', 'mssvae_pip_shared')
    """
    return f"{key}_pip" if block is None else f"{key}_pip_{block}"


def study_key_name(study: str) -> str:
    """A study name usable inside an AnnData key (characters other than letters, digits, ``-_.`` become ``_``).

    Examples
    --------
    >>> study_key_name("10x v2 (3')")
    '10x_v2__3__'
    """
    return "".join(c if (c.isalnum() or c in "-_.") else "_" for c in str(study))


def result_keys(key: str, studies: Sequence[str] | None = None) -> dict[str, list[str]]:
    """The AnnData keys a fit writes for ``key_added=key``.

    Parameters
    ----------
    key
        The ``key_added`` prefix.
    studies
        For a :class:`~scsparse.model.MultiStudySparseVAE` fit, its studies (each has its own ``varm`` keys);
        ``None`` for a :class:`~scsparse.model.SparseVAE` fit.

    Returns
    -------
    dict
        Attribute name (``"obsm"``, ``"varm"``, ``"uns"``) -> list of keys.

    Examples
    --------
    >>> result_keys("sparsevae")
    {'obsm': ['X_sparsevae'], 'varm': ['sparsevae_W', 'sparsevae_pip'], 'uns': ['sparsevae']}
    >>> result_keys("mssvae", studies=["ctrl", "stim"])["obsm"]
    ['X_mssvae_shared', 'X_mssvae_specific']
    """
    if studies is None:
        return {"obsm": [factors_key(key)], "varm": [loadings_key(key), pip_key(key)], "uns": [key]}
    blocks = ["shared", *(study_key_name(s) for s in studies)]
    return {
        "obsm": [factors_key(key, "shared"), factors_key(key, "specific")],
        "varm": [name for b in blocks for name in (loadings_key(key, b), pip_key(key, b))],
        "uns": [key],
    }
