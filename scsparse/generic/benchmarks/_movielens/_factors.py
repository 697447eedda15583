"""Table 3a of the MovieLens benchmark: the top movies of the sparse VAE's factors, in the summary and factors.csv."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scsparse.generic.datasets import MovieLensData
from scsparse.generic.models import ArraySparseVAE
from scsparse.utils import markdown_rows, write_csv

__all__ = ["PAPER_TABLE_3A", "TOP_MOVIES", "factor_top_movies"]

#: Table 3a of the paper: the top movies of three sparse VAE factors on ML-25M.
PAPER_TABLE_3A: tuple[str, ...] = (
    "The Fifth Element; Alien; Gattaca; Aliens",
    "A Bug's Life; Monsters, Inc.; Toy Story 3 & 2",
    "Star Wars V, IV & VI; Indiana Jones 1",
)

#: Movies listed per factor in Table 3a.
TOP_MOVIES = 5


def factor_top_movies(
    W: np.ndarray, pip: np.ndarray, titles: Sequence[str], factors: Sequence[int], n_top: int = TOP_MOVIES
) -> list[dict[str, Any]]:
    """The movies with the largest ``|w_jk|`` among those selected (``p* > 0.5``) by each factor.

    Parameters
    ----------
    W, pip
        Movies x factors mask and inclusion probabilities of a fitted sparse VAE.
    titles
        Title of every movie (row of ``W``).
    factors
        Factor indices to describe.
    n_top
        Movies listed per factor.

    Returns
    -------
    list of dict
        Per factor: ``factor``, ``n_selected`` (movies with ``p* > 0.5``), ``movies`` (titles, largest
        ``|w|`` first), ``weights`` (their ``w_jk``) and ``rows`` (their row indices in ``W``).

    Examples
    --------
    >>> import numpy as np
    >>> W = np.array([[0.9, 0.0], [0.0, 0.5], [0.4, 0.0]])
    >>> pip = (np.abs(W) > 0.1).astype(float)
    >>> factor_top_movies(W, pip, ["A", "B", "C"], [0])[0]["movies"]
    ['A', 'C']
    """
    out = []
    for k in factors:
        sel = np.flatnonzero(pip[:, k] > 0.5)
        order = sel[np.argsort(-np.abs(W[sel, k]), kind="stable")][:n_top]
        out.append(
            {
                "factor": int(k),
                "n_selected": int(sel.size),
                "movies": [str(titles[j]) for j in order],
                "weights": [float(W[j, k]) for j in order],
                "rows": [int(j) for j in order],
            }
        )
    return out


def describe_factors(model: ArraySparseVAE, data: MovieLensData) -> list[dict[str, Any]]:
    """Factors of a fitted sparse VAE with their top movies, ordered by decreasing ``sum_j |w_jk|``.

    The active factors (some movie with ``p* > 0.5``), movies ranked among those selected. When no factor
    is active (the prior kept every entry in the spike), every factor is listed with its movies ranked by
    ``|w_jk|`` alone; ``selection`` records which rule applied.
    """
    W, pip = model.loadings(), model.inclusion_probabilities()
    active = [int(k) for k in model.active_factors()]
    rule = "p* > 0.5"
    if not active:
        active, rule = list(range(W.shape[1])), "none active: by abs(w) only"
    active.sort(key=lambda k: -float(np.abs(W[:, k]).sum()))
    ranked_pip = pip if rule == "p* > 0.5" else np.ones_like(pip)
    out = factor_top_movies(W, ranked_pip, data.titles, active)
    for f in out:
        f["selection"] = rule
        f["pips"] = [float(pip[j, f["factor"]]) for j in f["rows"]]
        f["n_selected"] = int((pip[:, f["factor"]] > 0.5).sum())
    return out


def factor_section(factors: dict[str, list[dict[str, Any]]]) -> list[str]:
    lines = [
        "## Table 3a: top movies of three sparse VAE factors (seed 0)",
        "",
        f"Per data set, the three active factors (some movie with p* > 0.5) with the largest `sum_j |w_jk|`, "
        f"their selected movies ranked by |w_jk| (at most {TOP_MOVIES}). If no factor is active, the three "
        "factors with the largest `sum_j |w_jk|` with their movies ranked by |w_jk| alone, and the rule says so. "
        "All listed factors are in `factors.csv`.",
        "",
    ]
    rows = []
    for ds, facs in factors.items():
        if not facs:
            rows.append([ds, "-", "-", 0, "-"])
        for f in facs[:3]:
            movies = "; ".join(
                f"{m} ({w:+.2f}, {p:.2f})" for m, w, p in zip(f["movies"], f["weights"], f["pips"], strict=True)
            )
            rows.append([ds, f["factor"], f["selection"], f["n_selected"], movies])
    lines += markdown_rows(["dataset", "factor", "rule", "movies with p* > 0.5", "top movies (w_jk, p*)"], rows)
    lines += ["", "The paper (ML-25M, 300 movies): " + " / ".join(f"{t}" for t in PAPER_TABLE_3A) + "."]
    return lines


def write_factors(out_dir: Path, factors: dict[str, list[dict[str, Any]]]) -> Path:
    columns = ["dataset", "factor", "selection", "n_selected", "top_movies", "weights", "pips"]
    rows = [
        {
            "dataset": ds,
            "factor": f["factor"],
            "selection": f["selection"],
            "n_selected": f["n_selected"],
            "top_movies": "; ".join(f["movies"]),
            "weights": "; ".join(f"{w:.3f}" for w in f["weights"]),
            "pips": "; ".join(f"{p:.3f}" for p in f["pips"]),
        }
        for ds, facs in factors.items()
        for f in facs
    ]
    path = out_dir / "factors.csv"
    write_csv(pd.DataFrame(rows, columns=columns), path, index=False)
    return path
