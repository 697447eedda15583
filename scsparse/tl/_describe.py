"""What each factor is: its genes by direction, its best gene sets and the groups where it is high or low."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from anndata import AnnData

from scsparse._text import format_p
from scsparse.data._genesets import short_term
from scsparse.results import read_results

from ._association import association_table
from ._top_genes import top_genes

__all__ = ["describe_factors", "factor_report"]


def _best_gene_sets(enrichment: pd.DataFrame, factor: str, n_terms: int, max_p_adj: float, term_max_chars: int) -> str:
    """The ``n_terms`` best gene sets of each direction, most significant first, as one line of text."""
    hits = []
    for direction, arrow in (("positive", "up"), ("negative", "down")):
        rows = enrichment[
            (enrichment["factor"] == factor)
            & (enrichment["direction"] == direction)
            & (enrichment["p_adj"] <= max_p_adj)
        ].sort_values("p_adj")
        hits += [(float(row["p_adj"]), arrow, row) for _, row in rows.head(n_terms).iterrows()]
    return "; ".join(
        f"{short_term(row['term'], term_max_chars)} ({arrow}, {int(row['overlap'])} genes, adj. p {format_p(p_adj)})"
        for p_adj, arrow, row in sorted(hits, key=lambda hit: hit[0])
    )


def _extremes(association: pd.DataFrame, factor: str, groupby: str, max_p_adj: float) -> dict[str, object]:
    """The groups where a factor is highest and lowest among the significant ones (empty when none is)."""
    rows = association[association["factor"] == factor]
    significant = rows[rows["p_adj"] <= max_p_adj]
    out: dict[str, object] = {f"{groupby}_n_groups": int(rows["group"].nunique())}
    for side, pick in (("highest", "idxmax"), ("lowest", "idxmin")):
        best = significant.loc[getattr(significant["cohens_d"], pick)()] if len(significant) else None
        out[f"{groupby}_{side}"] = "" if best is None else str(best["group"])
        out[f"{groupby}_{side}_d"] = np.nan if best is None else float(best["cohens_d"])
        out[f"{groupby}_{side}_p_adj"] = np.nan if best is None else float(best["p_adj"])
    return out


def describe_factors(
    adata: AnnData,
    *,
    key: str = "sparsevae",
    factors: Sequence[str | int] | None = None,
    groupby: Sequence[str] | str = (),
    enrichment: pd.DataFrame | None = None,
    n_genes: int = 6,
    n_terms: int = 2,
    max_p_adj: float = 0.05,
    term_max_chars: int = 60,
) -> pd.DataFrame:
    """What each factor is, one row per factor: genes up and down with it, best gene sets, where it is high or low.

    Puts together :func:`top_genes` (the data-defined direction of each gene), the enrichment table of
    :func:`enrich` and :func:`factor_association` for each ``groupby`` column. :func:`factor_report` turns the
    table into one Markdown line per factor.

    Parameters
    ----------
    adata
        AnnData with results of :func:`scsparse.tl.sparse_vae` (or of a multi-study fit) under ``key``.
    key
        The ``key_added`` of the fit.
    factors
        Factor names or indices (default: the active factors).
    groupby
        ``obs`` columns to relate the factors to (e.g. ``["condition", "cell_type"]``), as
        :func:`factor_association` does (nothing is stored).
    enrichment
        A table of :func:`enrich` (``adata.uns[f"{key}_enrichment"]``; ``None`` or an empty table: no gene-set
        column).
    n_genes
        Genes listed per direction, by decreasing ``|w|`` among the programme's genes.
    n_terms
        Gene sets listed per direction.
    max_p_adj
        Adjusted p-value at or below which a gene set or an association is reported.
    term_max_chars
        Gene-set names are shortened to this many characters (:func:`short_term`).

    Returns
    -------
    pandas.DataFrame
        Indexed by factor: ``n_genes`` (genes with ``p*`` above the fit's threshold), ``genes_up`` and
        ``genes_down`` (comma-separated, ``""`` when none); with ``enrichment`` ``gene_sets`` (``"term (up, 12
        genes, adj. p 3.1e-08); ..."``, ``""`` when none passes ``max_p_adj``); for each ``groupby`` column ``g``:
        ``g_n_groups``, ``g_highest``, ``g_highest_d``, ``g_highest_p_adj``, ``g_lowest``, ``g_lowest_d`` and
        ``g_lowest_p_adj`` (the groups with the largest and smallest Cohen's d among those at adjusted
        ``p <= max_p_adj``; ``""`` and NaN when none is). ``attrs["max_p_adj"]`` and ``attrs["groupby"]`` record
        the settings.

    Examples
    --------
    >>> scsparse.tl.enrich(adata, "hallmark_human")
    >>> hallmark = adata.uns["sparsevae_enrichment"]
    >>> table = scsparse.tl.describe_factors(adata, groupby=["condition", "cell_type"], enrichment=hallmark)
    >>> table[["genes_up", "gene_sets", "condition_highest"]]
    """
    res = read_results(adata, key)
    names = res.resolve(factors)
    columns = [groupby] if isinstance(groupby, str) else list(groupby)
    genes = top_genes(adata, key=key, n_top=max(200, 4 * n_genes), factors=names)
    associations = {g: association_table(adata, g, key=key, factors=names) for g in columns}
    rows = []
    for f in names:
        g = genes[genes["factor"] == f]
        k = res.factor_names.index(f)
        row: dict[str, object] = {
            "factor": f,
            "n_genes": int((res.pip[:, k] > res.pip_threshold).sum()),
            "genes_up": ", ".join(g.loc[g["direction"] == "positive", "gene"].head(n_genes)),
            "genes_down": ", ".join(g.loc[g["direction"] == "negative", "gene"].head(n_genes)),
        }
        if enrichment is not None and len(enrichment):
            row["gene_sets"] = _best_gene_sets(enrichment, f, n_terms, max_p_adj, term_max_chars)
        for column, association in associations.items():
            row.update(_extremes(association, f, column, max_p_adj))
        rows.append(row)
    table = pd.DataFrame(rows).set_index("factor") if rows else pd.DataFrame(index=pd.Index([], name="factor"))
    table.attrs.update({"max_p_adj": float(max_p_adj), "groupby": columns})
    return table


def _association_sentence(row: pd.Series, column: str, max_p_adj: float) -> str:
    label = column.replace("_", " ")
    if not row[f"{column}_highest"]:
        return f"{label.capitalize()}: no difference at adj. p <= {max_p_adj:g}."
    high_d, high_p = float(row[f"{column}_highest_d"]), float(row[f"{column}_highest_p_adj"])
    if int(row[f"{column}_n_groups"]) == 2:  # two groups: one statement
        return (
            f"{label.capitalize()}: higher in {row[f'{column}_highest']} (Cohen's d {high_d:+.2f}, adj. p "
            f"{format_p(high_p)})."
        )
    text = []
    if high_d > 0:
        text.append(f"highest in {row[f'{column}_highest']} (d {high_d:+.2f}, adj. p {format_p(high_p)})")
    low_d, low_p = float(row[f"{column}_lowest_d"]), float(row[f"{column}_lowest_p_adj"])
    if low_d < 0:
        text.append(f"lowest in {row[f'{column}_lowest']} (d {low_d:+.2f}, adj. p {format_p(low_p)})")
    return f"{label.capitalize()}s: {', '.join(text)}."


def factor_report(description: pd.DataFrame) -> list[str]:
    """One Markdown line per factor from :func:`describe_factors`: genes, gene sets and associations in words.

    Parameters
    ----------
    description
        The output of :func:`describe_factors`.

    Returns
    -------
    list of str
        ``"- **factor_3**: genes up with it: ...; genes down with it: .... Gene sets: .... Condition: higher in
        stimulated (Cohen's d +2.10, adj. p < 1e-300)."``, one per factor.

    Examples
    --------
    >>> table = scsparse.tl.describe_factors(adata, groupby="condition")
    >>> for line in scsparse.tl.factor_report(table):
    ...     print(line)
    """
    max_p_adj = float(description.attrs.get("max_p_adj", 0.05))
    lines = []
    for factor, row in description.iterrows():
        parts = [
            f"- **{factor}**: genes up with it: {row['genes_up'] or 'none'}; genes down with it: "
            f"{row['genes_down'] or 'none'}."
        ]
        if "gene_sets" in description.columns:
            sets = row["gene_sets"]
            parts.append(f"Gene sets: {sets}." if sets else f"No gene set at adj. p <= {max_p_adj:g}.")
        for column in description.attrs.get("groupby", []):
            parts.append(_association_sentence(row, column, max_p_adj))
        lines.append(" ".join(parts))
    return lines
