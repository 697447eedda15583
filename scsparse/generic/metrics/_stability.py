"""Agreement of two fits' programmes, separated into what moves: gene sets, cores, loadings, number of factors.

A refit with another seed can change a programme in different ways, and each calls for a different remedy: the
gene set changes at its edges while its strongest genes stay (a reading question), the strongest genes change (the
programme itself moves), the loadings change while the sets stay, or the number of programmes changes. The
functions here measure each on its own, with one convention: programmes are paired one to one, and a programme
without a counterpart in the other fit counts as 0 (the means run over the larger of the two counts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from scsparse.results import match_pairs, rank_biased_overlap

from ._matching import factor_correlation
from ._programmes import jaccard_between, programme_indicator

__all__ = [
    "AGREEMENT_MEASURES",
    "ProgrammeSet",
    "block_jaccard",
    "pairwise_agreement",
    "programme_agreement",
    "rank_biased_overlap",
    "top_overlap",
]

#: The measures of :func:`programme_agreement`, in the order they are reported.
AGREEMENT_MEASURES: tuple[str, ...] = ("jaccard", "top_overlap", "rbo", "loadings_corr", "n_active_diff")


def top_overlap(a: Sequence[int], b: Sequence[int], n: int = 10) -> float:
    """Share of the ``n`` first items of ranking ``a`` that are among the ``n`` first of ranking ``b``.

    For lists shorter than ``n`` the denominator is the longer list's length up to ``n``, so two identical
    3-gene programmes agree fully and a 3-gene programme against a 10-gene one cannot exceed 0.3.

    Parameters
    ----------
    a, b
        Rankings (strongest first), e.g. gene indices of two matched programmes.
    n
        Depth of the comparison.

    Returns
    -------
    float
        In ``[0, 1]``; ``nan`` when both lists are empty.

    Examples
    --------
    >>> top_overlap([1, 2, 3, 4], [4, 3, 9, 8], n=3)
    0.3333333333333333
    >>> top_overlap([1, 2], [2, 1], n=10)
    1.0
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}.")
    head_a, head_b = list(a)[:n], list(b)[:n]
    depth = max(len(head_a), len(head_b))
    if depth == 0:
        return float("nan")
    return len(set(head_a) & set(head_b)) / depth


@dataclass
class ProgrammeSet:
    """One fit's programmes, as the agreement measures read them.

    Attributes
    ----------
    programmes
        Gene indices of each programme, strongest first (e.g. each active factor and direction).
    loadings
        Genes x factors loadings of the fit's active factors (``None``: no loadings, e.g. a method read from gene
        lists only).
    scopes
        The block of each programme (e.g. ``"shared"`` or a study's name for a multi-study fit), or ``None`` for
        a fit with one block. Two fits with scopes are matched block by block (:func:`programme_agreement`).
    factor_scopes
        The block of each column of ``loadings`` (``None`` with ``scopes=None``).

    Examples
    --------
    >>> import numpy as np
    >>> fit = ProgrammeSet([np.array([0, 1]), np.array([2])], scopes=["shared", "stim"])
    >>> fit.n_active
    2
    """

    programmes: list[np.ndarray]
    loadings: np.ndarray | None = None
    scopes: list[str] | None = None
    factor_scopes: list[str] | None = None

    def __post_init__(self) -> None:
        if self.scopes is not None and len(self.scopes) != len(self.programmes):
            raise ValueError(
                f"scopes has {len(self.scopes)} entries for {len(self.programmes)} programmes: give one block per "
                "programme, or scopes=None."
            )
        if self.factor_scopes is not None:
            if self.loadings is None or len(self.factor_scopes) != self.loadings.shape[1]:
                n_columns = "no loadings" if self.loadings is None else f"{self.loadings.shape[1]} loading columns"
                raise ValueError(
                    f"factor_scopes has {len(self.factor_scopes)} entries for {n_columns}: give one block per "
                    "column of loadings, or factor_scopes=None."
                )

    @property
    def n_active(self) -> int:
        """Number of active factors (columns of ``loadings``), else of programmes."""
        return int(self.loadings.shape[1]) if self.loadings is not None else len(self.programmes)


def _same_block(a: list[str] | None, b: list[str] | None, what: str) -> np.ndarray | float:
    """1 where an item of ``a`` and one of ``b`` are in the same block, else 0 (1 when neither has blocks)."""
    if (a is None) != (b is None):
        raise ValueError(
            f"One fit has {what} and the other has none: give both fits their blocks (e.g. two multi-study fits), "
            "or neither."
        )
    if a is None or b is None:
        return 1.0
    return (np.asarray(a, dtype=object)[:, None] == np.asarray(b, dtype=object)[None, :]).astype(np.float64)


def block_jaccard(a: ProgrammeSet, b: ProgrammeSet, n_genes: int) -> np.ndarray:
    """Jaccard index of every programme of ``a`` with every programme of ``b``, 0 across blocks.

    Parameters
    ----------
    a, b
        Two fits; with ``scopes`` (both or neither), programmes of different blocks score 0.
    n_genes
        Number of genes the programmes' indices refer to.

    Returns
    -------
    numpy.ndarray
        ``len(a.programmes) x len(b.programmes)``.

    Examples
    --------
    >>> import numpy as np
    >>> a = ProgrammeSet([np.array([0, 1]), np.array([2, 3])], scopes=["shared", "stim"])
    >>> b = ProgrammeSet([np.array([0, 1]), np.array([0, 1, 2, 3])], scopes=["stim", "stim"])
    >>> block_jaccard(a, b, n_genes=4).tolist()
    [[0.0, 0.0], [0.0, 0.5]]
    """
    same = _same_block(a.scopes, b.scopes, "programme blocks (scopes)")
    jac = jaccard_between(programme_indicator(a.programmes, n_genes), programme_indicator(b.programmes, n_genes))
    return jac * same


def programme_agreement(
    a: ProgrammeSet, b: ProgrammeSet, n_genes: int, *, n_top: int = 10, p: float = 0.9
) -> dict[str, float]:
    """Agreement of two fits, by what moves: gene sets, cores, loadings, number of active factors.

    - ``jaccard``: programmes paired by a Hungarian assignment on their Jaccard index; the mean Jaccard index
      over the larger programme count (:func:`matched_programme_agreement`).
    - ``rbo``: programmes paired by a Hungarian assignment on the rank-biased overlap of their rankings
      (:func:`rank_biased_overlap`, strongest genes weighted most); the mean over the larger programme count. A
      programme whose long tail overlaps another programme's is still paired with its own core, which the
      Jaccard pairing can miss.
    - ``top_overlap``: over the ``rbo`` pairs and denominator, the overlap of the ``n_top`` strongest genes
      (:func:`top_overlap`).
    - ``loadings_corr``: active factors paired on ``|corr|`` of their loading columns (across genes), the mean
      ``|corr|`` over the larger factor count (``nan`` when a fit has no loadings).
    - ``n_active_diff``: the difference in the number of active factors (absolute).

    When both fits have blocks (``ProgrammeSet.scopes`` and ``factor_scopes``, e.g. the shared and each study's
    factors of two multi-study fits), a programme is paired only with a programme of the same block, as
    :meth:`scsparse.model.SparseVAE.consensus` matches them: a programme one seed puts in a study's block and
    another in the shared block counts as unmatched (0).

    Parameters
    ----------
    a, b
        The two fits.
    n_genes
        Number of genes the programmes' indices refer to.
    n_top
        Depth of ``top_overlap``.
    p
        Persistence of ``rbo``.

    Returns
    -------
    dict
        The five measures, plus ``n_programmes_a`` / ``n_programmes_b`` and ``n_active_a`` / ``n_active_b``.

    Examples
    --------
    >>> import numpy as np
    >>> a = ProgrammeSet([np.array([0, 1, 2]), np.array([3, 4])])
    >>> b = ProgrammeSet([np.array([3, 4, 5]), np.array([0, 1, 2])])
    >>> {k: round(v, 2) for k, v in programme_agreement(a, b, n_genes=6).items() if k in ("jaccard", "rbo")}
    {'jaccard': 0.83, 'rbo': 1.0}

    The same programmes in other blocks do not pair:

    >>> a.scopes, b.scopes = ["shared", "stim"], ["shared", "stim"]
    >>> programme_agreement(a, b, n_genes=6)["jaccard"]
    0.0
    """
    same = _same_block(a.scopes, b.scopes, "programme blocks (scopes)")
    n_prog = max(len(a.programmes), len(b.programmes))
    out: dict[str, float] = {
        "n_programmes_a": float(len(a.programmes)),
        "n_programmes_b": float(len(b.programmes)),
        "n_active_a": float(a.n_active),
        "n_active_b": float(b.n_active),
        "n_active_diff": float(abs(a.n_active - b.n_active)),
    }
    if n_prog == 0:
        out.update(jaccard=np.nan, top_overlap=np.nan, rbo=np.nan)
    elif min(len(a.programmes), len(b.programmes)) == 0:
        out.update(jaccard=0.0, top_overlap=0.0, rbo=0.0)
    else:
        jac = block_jaccard(a, b, n_genes)
        rows, cols = match_pairs(jac)
        out["jaccard"] = float(jac[rows, cols].sum() / n_prog)
        # cores are paired on their rankings: a long tail shared with another programme does not steal the pair
        ranked_a = [list(x) for x in a.programmes]
        ranked_b = [list(x) for x in b.programmes]
        rbo = np.array([[rank_biased_overlap(x, y, p) for y in ranked_b] for x in ranked_a]) * same
        rows, cols = match_pairs(np.nan_to_num(rbo))
        same_pair = np.broadcast_to(same, rbo.shape)  # a forced pair across blocks counts 0
        tops = [top_overlap(ranked_a[i], ranked_b[j], n_top) * same_pair[i, j] for i, j in zip(rows, cols, strict=True)]
        out["top_overlap"] = float(np.nansum(tops) / n_prog)
        out["rbo"] = float(np.nansum(rbo[rows, cols]) / n_prog)
    if a.loadings is None or b.loadings is None:
        out["loadings_corr"] = np.nan
    else:
        n_fac = max(a.n_active, b.n_active)
        if n_fac == 0:
            out["loadings_corr"] = np.nan
        elif min(a.n_active, b.n_active) == 0:
            out["loadings_corr"] = 0.0
        else:
            corr = factor_correlation(a.loadings, b.loadings)
            corr = corr * _same_block(a.factor_scopes, b.factor_scopes, "factor blocks (factor_scopes)")
            rows, cols = match_pairs(corr)
            out["loadings_corr"] = float(corr[rows, cols].sum() / n_fac)
    return out


def pairwise_agreement(
    fits: dict[int, ProgrammeSet] | Sequence[ProgrammeSet], n_genes: int, *, n_top: int = 10, p: float = 0.9
) -> pd.DataFrame:
    """:func:`programme_agreement` for every pair of fits (e.g. seeds of one method).

    Parameters
    ----------
    fits
        The fits, keyed by seed (a sequence is keyed 0, 1, ...).
    n_genes, n_top, p
        As in :func:`programme_agreement`.

    Returns
    -------
    pandas.DataFrame
        One row per pair: ``seed_a``, ``seed_b`` and the columns of :func:`programme_agreement`.

    Examples
    --------
    >>> import numpy as np
    >>> fits = {s: ProgrammeSet([np.array([0, 1, 2])]) for s in range(3)}
    >>> pairwise_agreement(fits, n_genes=3)[["seed_a", "seed_b", "jaccard"]].to_numpy().tolist()
    [[0.0, 1.0, 1.0], [0.0, 2.0, 1.0], [1.0, 2.0, 1.0]]
    """
    keyed = dict(fits) if isinstance(fits, dict) else dict(enumerate(fits))
    rows = [
        {"seed_a": s, "seed_b": t, **programme_agreement(keyed[s], keyed[t], n_genes, n_top=n_top, p=p)}
        for s, t in combinations(sorted(keyed), 2)
    ]
    columns = ["seed_a", "seed_b", *AGREEMENT_MEASURES, "n_programmes_a", "n_programmes_b", "n_active_a", "n_active_b"]
    return pd.DataFrame(rows, columns=columns)
