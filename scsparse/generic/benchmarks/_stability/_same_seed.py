"""The same-seed reading of ``bench stability``: a variant's fit against the default fit of the same seed.

A variant that changes how a fit computes, not what it fits (exact zeros in ``W`` with the decoder on its active
set), should give the default fit's programmes. Its fit of seed ``s`` is compared with the default fit of seed ``s``
(same initial weights, split and minibatches) by the measures the seeds are compared by; the default fits' own
seed pairs are the scale: a change of computation should move the programmes far less than a change of seed.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from scsparse.generic.metrics import AGREEMENT_MEASURES, ProgrammeSet, programme_agreement

from .._tables import markdown_table

__all__ = ["SAME_SEED_COLUMNS", "same_seed_agreement", "same_seed_lines"]

SAME_SEED_COLUMNS: list[str] = ["dataset", "variant", "seed", *AGREEMENT_MEASURES]


def same_seed_agreement(
    dataset: str, variant: str, fits: dict[int, ProgrammeSet], default: dict[int, ProgrammeSet], n_genes: int
) -> list[dict[str, Any]]:
    """One row per seed both ``fits`` and ``default`` hold: the programmes of the two fits compared.

    Parameters
    ----------
    dataset, variant
        Names written into the rows.
    fits, default
        The variant's and the default variant's programme sets, keyed by seed.
    n_genes
        Number of genes (the rank measures need it).
    """
    return [
        {"dataset": dataset, "variant": variant, "seed": s, **programme_agreement(fits[s], default[s], n_genes)}
        for s in sorted(set(fits) & set(default))
    ]


def same_seed_lines(
    same_seed: pd.DataFrame, agreement: pd.DataFrame, dataset: str, labels: dict[str, str]
) -> list[str]:
    """The summary's lines for ``dataset``: each variant against the default fit of the same seed, beside the
    default fits' seed pairs (``agreement``); none when the run has no such reading.
    """
    here = same_seed[same_seed["dataset"] == dataset]
    if not len(here):
        return []
    seeds = agreement[(agreement["dataset"] == dataset) & (agreement["variant"] == "default")].copy()
    seeds["variant"] = "default, two seeds (the scale)"
    table = pd.concat([here.assign(variant=here["variant"] + " against default, same seed"), seeds])
    lines = [
        "Same seed, another computation (each seed's fit against the default fit of that seed; mean ± sd over the "
        "seeds), beside two default fits of different seeds:",
        "",
        markdown_table(table, ["variant"], list(AGREEMENT_MEASURES), digits=2, labels=labels).replace(
            "n seeds", "n pairs"
        ),
        "",
    ]
    return lines
