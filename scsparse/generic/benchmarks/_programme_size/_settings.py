"""The programme_size benchmark's scenarios, result columns and rare population, for ``_run`` and ``_summary``."""

from __future__ import annotations

from ._real import REAL_SCENARIO

__all__ = [
    "EFFECT_COLUMNS",
    "RARE_COLUMNS",
    "REAL_COLUMNS",
    "SCENARIOS",
    "SCORE_COLUMNS",
    "SIMULATED",
    "rare_cells",
]

#: Scenario -> its description in the summary.
SCENARIOS: dict[str, str] = {
    "planted": "each programme drives its planted genes only",
    "background": "the planted programmes plus small effects of every programme on every gene",
    "rare": "the planted programmes plus two more, one active in most cells and one in a rare population",
    REAL_SCENARIO: "nested subsamples of the 10x PBMCs in three chemistries (no planted truth)",
}

#: The scenarios whose data are simulated (the others are real data).
SIMULATED = ("planted", "background", "rare")

SCORE_COLUMNS: list[str] = [
    "n_active", "median_size", "max_size", "precision", "recall", "jaccard", "slab_outside", "top_precision",
]  # fmt: skip

#: The effect-size reading's scores (``p* > 0.5`` and ``|log2 fold change| >= min_effect``).
EFFECT_COLUMNS: list[str] = ["effect_median_size", "effect_precision", "effect_recall"]

#: The real scenario's scores (no truth): overlap between programmes, and cores against the largest subsample.
REAL_COLUMNS: list[str] = ["redundancy", "core_overlap", "core_rbo"]

#: The rare scenario's scores of the programme active in the rare population alone (its pair, as in the others).
RARE_COLUMNS: list[str] = ["rare_jaccard", "rare_recall", "rare_precision", "rare_effect_recall"]


def rare_cells(n_cells: int, share: float) -> int:
    """Cells of the rare population among ``n_cells``: ``share`` of them, rounded, at least 1 and at most half."""
    return int(min(max(1, round(n_cells * share)), n_cells // 2))
