"""The ``summary.md`` of ``scsparse bench guided``: one table of every method given the same gene sets, the
comparisons with ties written as ties, and the targets of the Kang must-show.

A difference is a tie when it is inside the seeds' spread: ``|mean_a - mean_b|`` at most the larger of the two
methods' standard deviations over seeds (with one seed each, only equal means tie).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from scsparse.utils import markdown_rows

from .._report import NOT_ASSESSED_QUICK, count_verdict, summary_head, target_verdict
from .._tables import format_mean_sd, mean_sd, within_spread

__all__ = ["COMPARED", "compare", "summary_lines"]

#: Metrics compared between methods: column -> (label, higher is better).
COMPARED: dict[str, tuple[str, bool]] = {
    "ifn_auroc": ("IFN AUROC (stim vs ctrl)", True),
    "ifn_added_precision": ("share of added genes held-out IFN", True),
    "markers_kept": ("marker sets kept", True),
    "decoy_off": ("decoy switched off / flagged", True),
    "accuracy": ("held-out cell-type accuracy", True),
    "ifn_agreement": ("seeds' agreement, IFN programme", True),
    "seconds": ("seconds", False),
    "peak_mb": ("peak memory (MB)", False),
}

_TABLE: tuple[tuple[str, str, int], ...] = (
    ("ifn_found", "IFN found", 0),
    ("ifn_auroc", "IFN AUROC", 3),
    ("ifn_retention", "IFN set kept", 2),
    ("ifn_jaccard", "IFN Jaccard", 2),
    ("ifn_added", "genes added", 1),
    ("ifn_added_heldout", "added held-out IFN", 1),
    ("ifn_heldout_p", "hypergeom. p", 0),
    ("markers_kept", "marker sets kept", 1),
    ("decoy_off", "decoy off / flagged", 0),
    ("decoy_jaccard", "decoy Jaccard", 2),
    ("accuracy", "cell-type accuracy", 3),
    ("ifn_agreement", "seeds' agreement (IFN)", 2),
    ("seconds", "seconds", 0),
    ("peak_mb", "peak MB", 0),
)


def compare(values: Mapping[str, Sequence[float]], higher: bool) -> dict[str, str]:
    """Each method against the best one: ``"best"``, ``"tie"`` (inside the seeds' spread) or ``"behind"``.

    Examples
    --------
    >>> compare({"a": [0.9, 0.92], "b": [0.89, 0.91], "c": [0.5, 0.52]}, higher=True)
    {'a': 'best', 'b': 'tie', 'c': 'behind'}
    """
    stats = {method: found for method, vals in values.items() if (found := mean_sd(vals)) is not None}
    if not stats:
        return {}
    best = (max if higher else min)(stats, key=lambda m: stats[m][0])
    verdicts = {}
    for method, reading in stats.items():
        if method == best:
            verdicts[method] = "best"
        else:
            verdicts[method] = "tie" if within_spread(reading, stats[best]) else "behind"
    return verdicts


def _count(values: pd.Series) -> str:
    vals = pd.to_numeric(values, errors="coerce").dropna()
    return "n/a" if vals.empty else f"{int(vals.sum())}/{len(vals)}"


def _p_range(values: pd.Series) -> str:
    vals = pd.to_numeric(values, errors="coerce").dropna()
    return "n/a" if vals.empty else f"{vals.min():.1e}..{vals.max():.1e}"


def _with_agreement(df: pd.DataFrame, agreement: pd.DataFrame, ifn_set: str) -> pd.DataFrame:
    ifn = agreement[agreement["gene_set"] == ifn_set].set_index("method")["jaccard"] if len(agreement) else {}
    df = df.copy()
    df["ifn_agreement"] = [ifn.get(m, math.nan) if hasattr(ifn, "get") else math.nan for m in df["method"]]
    return df


def summary_lines(
    df: pd.DataFrame,
    agreement: pd.DataFrame,
    sets: Mapping[str, Sequence[str]],
    heldout: Sequence[str],
    prov: Mapping[str, Any],
    *,
    ifn_set: str,
    decoy: str,
    found_auroc: float,
    quick: bool,
    total_seconds: float | None = None,
) -> list[str]:
    """The lines of ``summary.md``: ``ifn_set`` and ``decoy`` name the interferon and decoy sets of ``sets``,
    ``found_auroc`` is the AUROC at which the interferon programme counts as found.
    """
    lines = summary_head(
        "# Guided programmes: SparseVAE against Spectra and expiMap on the same gene sets (Kang PBMCs)",
        prov,
        total_seconds=total_seconds,
        mode="quick" if quick else "full",
    )
    ok = df[df["status"] == "ok"]
    other = df[df["status"] != "ok"].drop_duplicates("method")
    lines += [
        "## Gene sets",
        "",
        f"- interferon: `{ifn_set}`, {len(sets[ifn_set])} genes in the data; held out (given to no method): "
        f"{len(heldout)} interferon genes (the Hallmark gamma set outside the alpha set, and well-known ISGs)",
        *(f"- `{name}`: {', '.join(genes)}" for name, genes in sets.items() if name not in (ifn_set,)),
        f"- `{decoy}` is the planted decoy: random genes no programme should own.",
        "",
        "## Results",
        "",
        f"Mean ± sd over seeds; counts are seeds. IFN found: the programme tied to the interferon set is on, its "
        f"activity separates stimulated from control cells with AUROC >= {found_auroc} (either direction) and it keeps "
        "at least half of the set. Genes added: its genes outside the set; held-out IFN: of those, the held-out "
        "interferon genes (hypergeometric p among the genes outside the set). The unguided fit's set programmes are "
        "the free programmes that overlap each set most; it has no way to flag a set.",
        "",
    ]
    full = _with_agreement(ok, agreement, ifn_set)
    header = ["method", *(label for _, label, _ in _TABLE), "n seeds"]
    rows = []
    for method, group in full.groupby("method", sort=False):
        cells = [method]
        for col, _, digits in _TABLE:
            if col in ("ifn_found", "decoy_off"):
                cells.append(_count(group[col]))
            elif col == "ifn_heldout_p":
                cells.append(_p_range(group[col]))
            elif col == "ifn_agreement":
                value = group[col].iloc[0]
                cells.append("n/a" if not np.isfinite(value) else f"{value:.2f}")
            else:
                cells.append(format_mean_sd(pd.to_numeric(group[col], errors="coerce"), digits))
        rows.append([*cells, str(len(group))])
    lines += markdown_rows(header, rows)
    for _, row in other.iterrows():
        lines.append(f"\n- {row['method']}: {row['status']}")
    lines += ["", "## Who is ahead (ties inside the seeds' spread)", ""]
    comp_rows = []
    for col, (label, higher) in COMPARED.items():
        values = {m: pd.to_numeric(g[col], errors="coerce").tolist() for m, g in full.groupby("method", sort=False)}
        verdicts = compare(values, higher)
        if not verdicts:
            continue
        best = [m for m, v in verdicts.items() if v == "best"]
        ties = [m for m, v in verdicts.items() if v == "tie"]
        behind = [m for m, v in verdicts.items() if v == "behind"]
        comp_rows.append([label, ", ".join(best + ties) if ties else best[0], ", ".join(behind) or "-"])
    lines += markdown_rows(["metric", "best (ties with it)", "behind"], comp_rows)
    lines += ["", "## Targets", ""]
    guided = ok[ok["method"] == "SparseVAE (guided)"]
    n = len(guided)
    found = int(pd.to_numeric(guided["ifn_found"], errors="coerce").fillna(0).sum()) if n else 0
    enriched = int((pd.to_numeric(guided["ifn_heldout_p"], errors="coerce") < 0.05).sum()) if n else 0
    decoy = int(pd.to_numeric(guided["decoy_off"], errors="coerce").fillna(0).sum()) if n else 0
    assessed = not quick and n > 0

    def verdict(n_ok: int) -> str:
        if not assessed:
            return target_verdict(False, assessed=False, unassessed=NOT_ASSESSED_QUICK)
        return count_verdict(n_ok, n, counts=True)

    lines += [
        f"- guided interferon factor found in every seed: {verdict(found)}",
        f"- its genes beyond the set enriched in held-out interferon genes (p < 0.05), every seed: {verdict(enriched)}",
        f"- the decoy switched off or flagged in every seed: {verdict(decoy)}",
    ]
    if quick:
        lines += ["", "A quick smoke run (300 cells, 300 genes, a few epochs): its numbers are not read."]
    return lines
