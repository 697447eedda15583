"""The ``summary.md`` of the stability benchmark: its lines (:func:`summary_lines`), which ``_run`` writes."""

from __future__ import annotations

from typing import Any

import pandas as pd

from scsparse.generic.metrics import AGREEMENT_MEASURES

from .._real_data import REAL_DATASETS
from .._report import (
    NOT_ASSESSED_QUICK,
    summary_head,
    target_verdict,
)
from .._tables import markdown_table, mean_sd, within_spread
from ._consensus import (
    CONSENSUS_COLUMNS,
    REPRODUCIBILITY_COLUMNS,
    consensus_lines,
)
from ._halves import HALVES_COLUMNS, halves_lines
from ._same_seed import SAME_SEED_COLUMNS, same_seed_lines
from ._settings import (
    CONSENSUS_TARGET,
    FIT_METRICS,
    HALVES_TARGET,
    TARGETS,
    VARIANTS,
)

__all__ = ["summary_lines"]

#: The agreement measures' names in the summary.
_LABELS = {
    "jaccard": "programmes (Jaccard)",
    "top_overlap": "cores (top-10 shared)",
    "rbo": "rankings (RBO, p = 0.9)",
    "loadings_corr": "loadings (abs. correlation)",
    "n_active_diff": "active factors (difference)",
}


def summary_lines(
    results: pd.DataFrame,
    agreement: pd.DataFrame,
    prov: dict[str, Any],
    *,
    quick: bool,
    total_seconds: float,
    consensus: pd.DataFrame | None = None,
    consensus_programmes: pd.DataFrame | None = None,
    halves: pd.DataFrame | None = None,
    same_seed: pd.DataFrame | None = None,
) -> list[str]:
    """The lines of ``summary.md``: per data set, the agreement measures and the fits' scores per variant.

    ``consensus`` and ``consensus_programmes``: the consensus fits read off the single fits
    (:func:`._consensus.consensus_agreement`), shown under each data set; ``halves``: the resampling
    reading (:func:`._halves.halves_agreement`); ``same_seed``: variants against the default fit of the
    same seed (:func:`._same_seed.same_seed_agreement`).
    """
    same_seed = pd.DataFrame(columns=SAME_SEED_COLUMNS) if same_seed is None else same_seed
    halves = pd.DataFrame(columns=HALVES_COLUMNS) if halves is None else halves
    consensus = pd.DataFrame(columns=CONSENSUS_COLUMNS) if consensus is None else consensus
    if consensus_programmes is None:
        consensus_programmes = pd.DataFrame(columns=REPRODUCIBILITY_COLUMNS)
    lines = summary_head(
        "# Stability of the programmes over seeds", prov, total_seconds=total_seconds, mode="quick" if quick else "full"
    )
    if len(results):  # the seeds section ran
        lines += ["## Variants", ""]
        lines += [f"- **{v.name}**: {v.description}." for v in VARIANTS.values() if v.name in set(results["variant"])]
        lines += [""]
    lines += [
        "Agreement of every pair of fits (mean ± sd over the pairs): programmes paired one to one, a programme "
        "without a counterpart counts 0 (`scsparse.generic.metrics.programme_agreement`).",
        "",
    ]
    for dataset in dict.fromkeys([*agreement["dataset"], *halves["dataset"]]):
        lines += [f"## {REAL_DATASETS[dataset].title}", ""]
        part = agreement[agreement["dataset"] == dataset]
        if len(part):
            lines.append(
                markdown_table(part, ["variant"], list(AGREEMENT_MEASURES), digits=2, labels=_LABELS).replace(
                    "n seeds", "n pairs"
                )
            )
            fits = results[results["dataset"] == dataset]
            shown = [m for m in FIT_METRICS if fits[m].notna().any() and m != "interferon_p"]
            lines += ["", "The fits (mean ± sd over seeds):", ""]
            lines.append(markdown_table(fits, ["variant"], shown, digits=2))
            lines.append("")
        in_data = consensus[consensus["dataset"] == dataset]
        lines += consensus_lines(
            in_data, consensus_programmes[consensus_programmes["dataset"] == dataset], dict(_LABELS)
        )
        lines += halves_lines(halves, dataset)
        lines += _halves_target_lines(halves[halves["dataset"] == dataset], quick)
        lines += same_seed_lines(same_seed, agreement, dataset, dict(_LABELS))
        default = part[part["variant"] == "default"]
        if len(default):
            for measure, target in TARGETS.items():
                mean = float(default[measure].mean())
                verdict = target_verdict(mean >= target, assessed=not quick, unassessed=NOT_ASSESSED_QUICK)
                lines.append(f"- target: default single fit {_LABELS[measure]} >= {target}: {mean:.2f}, {verdict}")
        consensus_default = in_data[in_data["variant"] == "default"]
        if len(consensus_default):
            most = int(consensus_default["restarts"].max())
            mean = float(consensus_default.loc[consensus_default["restarts"] == most, "jaccard"].mean())
            verdict = target_verdict(mean >= CONSENSUS_TARGET, assessed=not quick, unassessed=NOT_ASSESSED_QUICK)
            lines.append(
                f"- target: two consensus fits of {most} restarts, programmes (Jaccard) >= {CONSENSUS_TARGET}: "
                f"{mean:.2f}, {verdict}"
            )
        if len(default) or len(consensus_default):
            lines.append("")
    return lines


def _halves_target_lines(halves: pd.DataFrame, quick: bool) -> list[str]:
    """The resampling target: consensus fits of the two halves agree >= :data:`HALVES_TARGET`, and as well as
    cNMF's (``within_spread``: a difference inside the larger sd of the two is a tie).
    """
    across = halves[(halves["reading"] == "halves") & (halves["method"] == "SparseVAE (consensus)")]
    if not len(across):
        return []
    most = int(across["restarts"].max())
    ours = across.loc[across["restarts"] == most, "jaccard"]
    mean = float(ours.mean())
    verdict = target_verdict(mean >= HALVES_TARGET, assessed=not quick, unassessed=NOT_ASSESSED_QUICK)
    lines = [
        f"- target: consensus fits of {most} restarts on the two halves, programmes (Jaccard) >= {HALVES_TARGET}: "
        f"{mean:.2f}, {verdict}"
    ]
    cnmf = mean_sd(halves.loc[(halves["reading"] == "halves") & (halves["method"] == "cNMF"), "jaccard"])
    if cnmf is not None:
        gap = mean - cnmf[0]
        if len(ours) < 2:  # one pair has no spread, so no tie rule can be applied
            word = f"not judged (one pair of consensus fits, no spread; difference {gap:+.2f})"
        else:
            reading = mean_sd(ours)
            word = "tie" if within_spread(reading, cnmf) else ("ahead" if gap > 0 else "behind")
            word += f" (difference {gap:+.2f}, spread {max(reading[1], cnmf[1]):.2f})"
        lines.append(f"- the same against cNMF's fits of the two halves ({cnmf[0]:.2f}): {word}")
    return [*lines, ""]
