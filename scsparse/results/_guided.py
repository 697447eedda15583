"""Guided factors read against their gene sets: the genes each kept, dropped and added, and a fidelity score."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

__all__ = ["GUIDED_COLUMNS", "GUIDED_STATUSES", "MIN_KEPT", "guided_table"]

#: The fewest set genes a guided factor keeps for its set to count as supported (``min_kept``).
MIN_KEPT = 3
#: The statuses of a guided factor in :func:`guided_table`, the supported ones first.
GUIDED_STATUSES = ("kept", "extended", "departed", "not supported", "switched off")

#: The columns of :func:`guided_table`, in order.
GUIDED_COLUMNS = (
    "factor",
    "gene_set",
    "set_size",
    "n_set_genes_kept",
    "n_set_genes_dropped",
    "n_genes_added",
    "n_genes",
    "retention",
    "share_in_set",
    "jaccard",
    "status",
    "kept_genes",
    "dropped_genes",
    "added_genes",
)


def guided_table(
    gene_sets: Mapping[str, Sequence[str]],
    pip: pd.DataFrame,
    pip_threshold: float = 0.5,
    min_kept: int = MIN_KEPT,
) -> pd.DataFrame:
    """How far each guided factor went from its gene set, one row per set.

    A gene is in a factor's programme (its support) when ``p* > pip_threshold``. For a factor guided by the set
    ``S`` (its genes in the data) with support ``P``:

    - ``n_set_genes_kept`` ``|P ∩ S|``, ``n_set_genes_dropped`` ``|S - P|``, ``n_genes_added`` ``|P - S|``;
    - ``retention`` ``|P ∩ S| / |S|``: the share of the set the data kept;
    - ``share_in_set`` ``|P ∩ S| / |P|``: the share of the programme inside the set (0 when ``P`` is empty);
    - ``jaccard`` ``|P ∩ S| / |P ∪ S|``: 1 when the programme is exactly the set (the fidelity score);
    - ``status``: ``"switched off"`` when ``P`` is empty (the data do not support the factor); ``"not supported"``
      when fewer than ``min_kept`` set genes are kept (a gene or two of a set is no evidence for its programme);
      ``"departed"`` when the factor kept under half of its set and under half of ``P`` is in the set (it became
      another programme: read its genes, not its set's name); ``"extended"`` when it kept at least half of its set
      but under half of ``P`` is in the set (the set's programme with more genes than the set: read
      ``added_genes``); else ``"kept"``.

    Parameters
    ----------
    gene_sets
        Set name -> its genes in the data, in the order of the guided factors.
    pip
        Inclusion probabilities, genes x factors, the guided factors first.
    pip_threshold
        Inclusion threshold of the support.
    min_kept
        The fewest set genes a factor must keep for its set to count as supported.

    Returns
    -------
    pandas.DataFrame
        The columns of :data:`GUIDED_COLUMNS`; ``kept_genes``, ``dropped_genes`` and ``added_genes`` hold the genes
        as one ``"; "``-joined string each (in the data's gene order), so the table is h5ad-writable.
    """
    rows: list[dict[str, Any]] = []
    genes = pip.index.astype(str)
    for column, (name, members) in enumerate(gene_sets.items()):
        in_set = genes.isin(set(members))
        support = pip.iloc[:, column].to_numpy() > pip_threshold
        kept, dropped, added = support & in_set, ~support & in_set, support & ~in_set
        n_set, n_support = int(in_set.sum()), int(support.sum())
        n_kept = int(kept.sum())
        union = n_set + n_support - n_kept
        share = n_kept / n_support if n_support else 0.0
        retention = n_kept / n_set if n_set else 0.0
        if n_support == 0:
            status = "switched off"
        elif n_kept < min_kept:
            status = "not supported"
        elif share < 0.5:
            status = "departed" if retention < 0.5 else "extended"
        else:
            status = "kept"
        rows.append(
            {
                "factor": str(pip.columns[column]),
                "gene_set": str(name),
                "set_size": n_set,
                "n_set_genes_kept": n_kept,
                "n_set_genes_dropped": int(dropped.sum()),
                "n_genes_added": int(added.sum()),
                "n_genes": n_support,
                "retention": retention,
                "share_in_set": share,
                "jaccard": n_kept / union if union else 0.0,
                "status": status,
                "kept_genes": "; ".join(genes[kept]),
                "dropped_genes": "; ".join(genes[dropped]),
                "added_genes": "; ".join(genes[added]),
            }
        )
    return pd.DataFrame(rows, columns=list(GUIDED_COLUMNS))
