"""Fitted blocks of the multi-study simulation benchmark and their scoring against the true programmes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scsparse.data import MultiStudyData
from scsparse.generic.metrics import assign_by_correlation, estimated_support, factor_correlation

__all__ = ["EstimatedBlock", "MultiStudyFit", "score_multistudy"]


# ---------------------------------------------------------------------------------------------- fitted blocks
@dataclass(eq=False)
class EstimatedBlock:
    """A group of estimated factor columns and the true programmes they are compared with.

    Attributes
    ----------
    cells
        Row indices (into the simulated data) of the cells on which the codes are defined.
    z
        Posterior means of those cells, ``(len(cells), K_block)``.
    W, pip
        Estimated mask and inclusion probabilities of the block's columns, ``(G, K_block)``.
    candidates
        Names of the true programmes (:attr:`MultiStudyData.programme_names`) the block's columns may be
        matched to.
    kind
        ``"shared"`` or ``"specific"`` when the block's columns are declared shared or specific by the model
        (every column of the block is scored as that kind); ``None`` when the model does not say (baselines):
        each column is then labelled with the kind of the true programme it is matched to, or, for
        unmatched columns, of the true programme it correlates with most.
    """

    cells: np.ndarray
    z: np.ndarray
    W: np.ndarray
    pip: np.ndarray
    candidates: list[str]
    kind: str | None = None


@dataclass(eq=False)
class MultiStudyFit:
    """What a method returns for scoring: its blocks of columns and its wall-clock time."""

    blocks: list[EstimatedBlock]
    fit_seconds: float
    extra: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------- scoring
def _true_factor(data: MultiStudyData, name: str, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The true factor ``name`` on ``cells``: (positions within ``cells`` where it is defined, values)."""
    if name.startswith("shared_"):
        k = int(name.split("_")[-1])
        return np.arange(cells.size), data.Z_shared[cells, k]
    study, k = name.rsplit("_", 1)
    own = data.study_indices(study)
    pos = np.flatnonzero(np.isin(cells, own))
    # rows of Z_specific[study] follow the order of the study's cells
    rank = np.searchsorted(own, cells[pos])
    return pos, data.Z_specific[study][rank, int(k)]


def true_support(data: MultiStudyData, name: str) -> np.ndarray:
    if name.startswith("shared_"):
        return data.W_shared_support[:, int(name.split("_")[-1])]
    study, k = name.rsplit("_", 1)
    return data.W_specific_support[study][:, int(k)]


def block_correlation(data: MultiStudyData, block: EstimatedBlock) -> np.ndarray:
    """``|corr|`` of every estimated column with every candidate programme, on the cells where it is defined."""
    corr = np.zeros((block.z.shape[1], len(block.candidates)))
    for j, name in enumerate(block.candidates):
        pos, values = _true_factor(data, name, block.cells)
        if pos.size > 2:
            corr[:, j] = factor_correlation(block.z[pos], values)[:, 0]
    return corr


def score_multistudy(
    data: MultiStudyData,
    fit: MultiStudyFit,
    *,
    w_threshold: float = 0.01,
    pip_threshold: float = 0.5,
) -> dict[str, float]:
    """Support F-scores, factor correlation and active factors of one fitted method.

    Parameters
    ----------
    data
        The simulated data (truth).
    fit
        The method's blocks (see :class:`EstimatedBlock`).
    w_threshold, pip_threshold
        Post-hoc thresholding of every method's ``W``: an entry is selected iff ``|W| >= w_threshold`` and
        ``p* >= pip_threshold``.

    Returns
    -------
    dict
        ``shared_fscore``, ``specific_fscore``, ``factor_corr``, ``n_active_shared``, ``n_active_specific``
        and the confusion counts (``shared_tp`` ...).

    Notes
    -----
    For every block: (1) ``C[c, p] = |corr(z_c, z_p^true)|`` of every estimated column ``c`` with every
    candidate programme ``p``, computed on the block's cells where ``p`` is defined (all cells for a shared
    programme, the study's cells for a specific one); (2) Hungarian assignment maximising the summed
    ``C`` (every candidate programme gets a distinct column), among the columns that select any gene when
    there are at least as many as candidates (a switched-off column can still correlate with a programme;
    :func:`scsparse.generic.metrics.match_factors`); (3) the estimated support ``S`` (thresholds
    above) of a matched column is compared with the matched programme's true support: ``TP = |S & T|``,
    ``FP = |S & ~T|``, ``FN = |~S & T|``, added to the tally of the programme's kind (shared or specific);
    (4) every selected entry of an unmatched column is a false positive, added to the tally of the block's
    kind, or, for blocks without a declared kind (baselines), of the kind of the programme that column
    correlates with most. F-score ``= 2 TP / (2 TP + FP + FN)`` of each tally, pooled over the blocks (and
    so over the studies). ``factor_corr`` is the mean ``C`` over all matched pairs. An active column has at
    least one gene with ``p* > pip_threshold``; it counts as shared or specific by its block's kind, or (no
    declared kind) by its matched programme, else its most correlated programme.
    """
    tally = {k: {"tp": 0, "fp": 0, "fn": 0} for k in ("shared", "specific")}
    active = {"shared": 0, "specific": 0}
    corrs: list[float] = []

    def kind_of(name: str) -> str:
        return "shared" if name.startswith("shared_") else "specific"

    for block in fit.blocks:
        if block.z.shape[1] < len(block.candidates):
            raise ValueError("a block needs at least as many columns as candidate programmes")
        C = block_correlation(data, block)
        S = estimated_support(block.W, pip=block.pip, w_threshold=w_threshold, pip_threshold=pip_threshold)
        # matched among the columns that select any gene when there are enough (see match_factors)
        match = assign_by_correlation(C, among=S.any(axis=0))
        matched = {int(c): j for j, c in enumerate(match)}
        is_active = (block.pip > pip_threshold).any(0)
        for c in range(block.z.shape[1]):
            if c in matched:
                name = block.candidates[matched[c]]
                T = true_support(data, name)
                t = tally[kind_of(name)]
                t["tp"] += int(np.sum(S[:, c] & T))
                t["fp"] += int(np.sum(S[:, c] & ~T))
                t["fn"] += int(np.sum(~S[:, c] & T))
                corrs.append(float(C[c, matched[c]]))
                label = block.kind or kind_of(name)
            else:
                label = block.kind or kind_of(block.candidates[int(np.argmax(C[c]))])
                tally[label]["fp"] += int(np.sum(S[:, c]))
            if is_active[c]:
                active[label] += 1

    def f1(t: dict[str, int]) -> float:
        den = 2 * t["tp"] + t["fp"] + t["fn"]
        return 2 * t["tp"] / den if den else math.nan

    out = {
        "shared_fscore": f1(tally["shared"]),
        "specific_fscore": f1(tally["specific"]),
        "factor_corr": float(np.mean(corrs)) if corrs else math.nan,
        "n_active_shared": float(active["shared"]),
        "n_active_specific": float(active["specific"]),
    }
    for kind, t in tally.items():
        for k, v in t.items():
            out[f"{kind}_{k}"] = float(v)
    return out
