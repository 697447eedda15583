"""Gene-set enrichment of sparse VAE programmes: over-representation (ORA) and preranked GSEA, by direction."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from typing import Literal

import numpy as np
import pandas as pd
import scipy.sparse as sp
from anndata import AnnData

from scsparse.data._genesets import GeneSetError, library_name, load_gene_sets
from scsparse.results import FitResults, rank_genes, read_results

from ._store import check_table_key, store_table
from ._top_genes import factor_gene_correlation

__all__ = ["DEFAULT_N_TOP", "bh_adjust", "enrich", "enrich_gene_lists", "programme_genes"]

#: Programme size used when more than ``max_size`` genes pass the ``p*`` threshold (``W`` not sparse yet).
DEFAULT_N_TOP = 50

_ENSEMBL = re.compile(r"^ENS[A-Z]*G\d{6,}(\.\d+)?$", flags=re.IGNORECASE)

ORA_COLUMNS = [
    "factor", "direction", "term", "overlap", "set_size", "programme_size", "background_size",
    "fold_enrichment", "p", "p_adj", "p_adj_all", "genes", "selection", "method", "library",
]  # fmt: skip
PRERANK_COLUMNS = [
    "factor", "direction", "term", "overlap", "set_size", "programme_size", "background_size",
    "es", "nes", "p", "p_adj", "p_adj_all", "fdr_gsea", "genes", "selection", "method", "library",
]  # fmt: skip


def bh_adjust(p: Iterable[float]) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values over every entry that is not NaN (NaN entries stay NaN, uncounted).

    :func:`scipy.stats.false_discovery_control` on the entries that are not NaN, which it refuses. Entries outside
    ``[0, 1]`` (it refuses those too) are clipped into it first, which gives the adjusted values of the entries as
    they are, clipped.

    Examples
    --------
    >>> bh_adjust([0.01, 0.04, 0.03]).round(3)
    array([0.03, 0.04, 0.04])
    >>> bh_adjust([0.02, float("nan"), 0.01])
    array([0.02,  nan, 0.02])
    """
    from scipy.stats import false_discovery_control  # scipy.stats only when needed: importing scsparse.tl stays light

    p = np.asarray(list(p) if not isinstance(p, np.ndarray) else p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        out[ok] = false_discovery_control(np.clip(p[ok], 0.0, 1.0))
    return out


def _looks_ensembl(names: Sequence[str], fraction: float = 0.5) -> bool:
    names = [str(n) for n in names]
    if not names:
        return False
    sample = names[:: max(1, len(names) // 2000)]
    return sum(bool(_ENSEMBL.match(n)) for n in sample) >= fraction * len(sample)


def _data_symbols(adata: AnnData, gene_symbols: str | None) -> np.ndarray:
    if gene_symbols is None:
        return np.asarray(adata.var_names).astype(str)
    if gene_symbols not in adata.var.columns:
        raise KeyError(f"gene_symbols={gene_symbols!r} is not a column of adata.var (columns: {list(adata.var)}).")
    return adata.var[gene_symbols].astype(str).to_numpy()


def _match_sets(
    sets: dict[str, list[str]], symbols: np.ndarray, min_size: int, max_size: int
) -> tuple[list[str], list[np.ndarray]]:
    """Gene sets as arrays of data-gene indices (case-insensitive), filtered to ``min_size <= size <= max_size``."""
    index: dict[str, int] = {}
    for j, s in enumerate(symbols):
        index.setdefault(s.upper(), j)
    data_ensembl = _looks_ensembl(symbols)
    set_genes = [g for genes in sets.values() for g in genes]
    sets_ensembl = _looks_ensembl(set_genes)
    if data_ensembl and not sets_ensembl:
        raise GeneSetError(
            f"The gene names of the data look like Ensembl ids (e.g. {', '.join(symbols[:3])}), but the gene sets "
            f"use symbols (e.g. {', '.join(set_genes[:3])}). Use gene symbols: pass gene_symbols='<column of "
            "adata.var with symbols>' or set adata.var_names to the symbols."
        )
    names, members = [], []
    largest = 0
    for name, genes in sets.items():
        idx = np.unique([index[g.upper()] for g in genes if g.upper() in index]).astype(np.int64)
        largest = max(largest, idx.size)
        if min_size <= idx.size <= max_size:
            names.append(name)
            members.append(idx)
    if largest == 0:
        hint = (
            " The gene sets look like Ensembl ids: pass symbols, or use gene_symbols= to match another column."
            if sets_ensembl and not data_ensembl
            else " Check the species (human sets on mouse data match only by coincidence of case-insensitive "
            "symbols) and the identifier type."
        )
        raise GeneSetError(
            f"No gene of any of the {len(sets)} gene sets is in the data (data genes e.g. "
            f"{', '.join(symbols[:3])}; set genes e.g. {', '.join(set_genes[:3])}).{hint}"
        )
    if not names:
        raise GeneSetError(
            f"No gene set has between min_size={min_size} and max_size={max_size} genes in the data (the largest "
            f"overlap with the data is {largest} genes); change min_size or max_size."
        )
    return names, members


def _membership(members: list[np.ndarray], n_genes: int) -> sp.csr_matrix:
    rows = np.repeat(np.arange(len(members)), [m.size for m in members])
    cols = np.concatenate(members) if members else np.zeros(0, dtype=np.int64)
    return sp.csr_matrix((np.ones(cols.size), (rows, cols)), shape=(len(members), n_genes))


def _select_programme(
    absw: np.ndarray, pip: np.ndarray, sign: np.ndarray, want: int, pip_threshold: float, n_top: int | None,
    max_size: int,
) -> tuple[np.ndarray, str]:  # fmt: skip
    """Indices of one programme's genes in one direction, and the rule used (see :func:`enrich`)."""
    included = pip > pip_threshold
    order = rank_genes(absw, pip, pip_threshold, among=sign == want)
    if n_top is not None:
        return order[: int(n_top)], f"top {int(n_top)} by |w| among p* > {pip_threshold:g}"
    n_included = int(included.sum())
    if n_included > max_size:  # W not sparse (yet): the factor includes most genes
        return (
            order[:DEFAULT_N_TOP],
            f"top {DEFAULT_N_TOP} by |w| (factor has {n_included} genes with p* > {pip_threshold:g} > max_size)",
        )
    return order, f"p* > {pip_threshold:g}"


def _programmes(
    res: FitResults, names: list[str], corr: np.ndarray, directions: list[str], pip_threshold: float,
    n_top: int | None, max_size: int,
) -> list[tuple[str, str, np.ndarray, str]]:  # fmt: skip
    """``(factor, direction, gene indices by decreasing |w|, selection rule)`` of every non-empty programme."""
    out = []
    for f in names:
        k = res.factor_names.index(f)
        absw = np.abs(res.W[:, k])
        sign = np.sign(corr[:, k])
        for d in directions:
            prog, rule = _select_programme(
                absw, res.pip[:, k], sign, 1 if d == "positive" else -1, pip_threshold, n_top, max_size
            )
            if prog.size:
                out.append((f, d, prog, rule))
    return out


def _ora(
    programmes: Sequence[tuple[str, str, np.ndarray, str]], set_names: list[str], members: list[np.ndarray],
    genes: np.ndarray,
) -> pd.DataFrame:  # fmt: skip
    """One-sided hypergeometric test of every gene set in every programme, the data's genes as background."""
    from scipy.stats import hypergeom

    n_genes = genes.size
    M = _membership(members, n_genes)
    set_size = np.asarray([m.size for m in members])
    frames = []
    for f, d, prog, rule in programmes:
        indicator = np.zeros(n_genes)
        indicator[prog] = 1.0
        overlap = np.asarray(M @ indicator).round().astype(np.int64)
        p = hypergeom.sf(overlap - 1, n_genes, set_size, prog.size)
        p = np.where(overlap > 0, p, 1.0)
        rank = np.empty(n_genes)
        rank[prog] = np.arange(prog.size)  # genes listed in programme order
        in_prog = np.zeros(n_genes, dtype=bool)
        in_prog[prog] = True
        hits = [
            ";".join(genes[sorted(m[in_prog[m]], key=lambda j: rank[j])]) if o > 0 else ""
            for m, o in zip(members, overlap, strict=True)
        ]
        frames.append(
            pd.DataFrame(
                {
                    "factor": f,
                    "direction": d,
                    "term": set_names,
                    "overlap": overlap,
                    "set_size": set_size,
                    "programme_size": int(prog.size),
                    "background_size": int(n_genes),
                    "fold_enrichment": (overlap / prog.size) / (set_size / n_genes),
                    "p": np.clip(p, 0.0, 1.0),
                    "genes": hits,
                    "selection": rule,
                }
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _prerank(
    res: FitResults, names: list[str], corr: np.ndarray, set_names: list[str], members: list[np.ndarray],
    genes: np.ndarray, directions: list[str], permutation_num: int, seed: int, min_size: int, max_size: int,
) -> pd.DataFrame:  # fmt: skip
    import logging

    import gseapy

    n_genes = genes.size
    keys = np.asarray([f"G{j}" for j in range(n_genes)])  # unique ids: symbols may repeat after upper-casing
    gmt = {name: list(keys[m]) for name, m in zip(set_names, members, strict=True)}
    cols = [res.factor_names.index(f) for f in names]
    score = np.abs(res.W[:, cols]) * np.sign(corr[:, cols])
    frames = []
    for f, s in zip(names, score.T, strict=True):
        rnk = pd.Series(s, index=keys, name=f)
        previous = logging.root.manager.disable
        logging.disable(logging.WARNING)  # gseapy warns about tied scores (genes without variance) on its own handler
        try:
            pre = gseapy.prerank(
                rnk=rnk,
                gene_sets=gmt,
                outdir=None,
                min_size=min_size,
                max_size=max_size,
                permutation_num=int(permutation_num),
                threads=1,
                seed=int(seed),
                no_plot=True,
                verbose=False,
            )
        finally:
            logging.disable(previous)
        out = pre.res2d
        if out is None or not len(out):
            continue
        lookup = dict(zip(keys, genes, strict=True))
        nes = pd.to_numeric(out["NES"], errors="coerce").to_numpy(dtype=np.float64)
        lead = [
            [lookup[g] for g in str(x).split(";") if g in lookup] if isinstance(x, str) else []
            for x in out["Lead_genes"]
        ]
        term_size = {name: m.size for name, m in zip(set_names, members, strict=True)}
        frame = pd.DataFrame(
            {
                "factor": f,
                "direction": np.where(nes >= 0, "positive", "negative"),
                "term": out["Term"].astype(str).to_numpy(),
                "overlap": np.asarray([len(g) for g in lead], dtype=np.int64),
                "set_size": np.asarray([term_size[t] for t in out["Term"].astype(str)], dtype=np.int64),
                "programme_size": int(n_genes),
                "background_size": int(n_genes),
                "es": pd.to_numeric(out["ES"], errors="coerce").to_numpy(dtype=np.float64),
                "nes": nes,
                # a permutation p-value of 0 means "below 1 / permutation_num": report that bound
                "p": np.maximum(
                    pd.to_numeric(out["NOM p-val"], errors="coerce").to_numpy(dtype=np.float64),
                    1.0 / (int(permutation_num) + 1),
                ),
                "fdr_gsea": pd.to_numeric(out["FDR q-val"], errors="coerce").to_numpy(dtype=np.float64),
                "genes": [";".join(g) for g in lead],
                "selection": "all genes ranked by |w|*sign(r)",
            }
        )
        frames.append(frame[frame["direction"].isin(directions)])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _finish(table: pd.DataFrame, names: Sequence[str], columns: list[str], method: str, library: str) -> pd.DataFrame:
    """Adjusted p-values, ``method`` and ``library`` columns, rows in programme order (ORA: overlapping sets only)."""
    if len(table):
        table["p_adj"] = np.nan
        for _, idx in table.groupby(["factor", "direction"], sort=False).groups.items():
            table.loc[idx, "p_adj"] = bh_adjust(table.loc[idx, "p"].to_numpy())
        table["p_adj_all"] = bh_adjust(table["p"].to_numpy())
        table["method"] = method
        table["library"] = library
        if method == "ora":
            table = table[table["overlap"] > 0]
        order = {f: i for i, f in enumerate(names)}
        table = (
            table.assign(_f=table["factor"].map(order), _d=(table["direction"] == "negative").astype(int))
            .sort_values(["_f", "_d", "p", "term"], kind="stable")
            .drop(columns=["_f", "_d"])
            .reset_index(drop=True)
        )
        table = table[columns]
    else:
        text = {"factor", "direction", "term", "genes", "selection", "method", "library"}
        table = pd.DataFrame({c: pd.Series(dtype=object if c in text else np.float64) for c in columns})
    for col in ("factor", "direction", "term", "genes", "selection", "method", "library"):
        table[col] = table[col].astype(str).astype(object)
    return table


def _directions(direction: str, n_top: int | None) -> list[str]:
    """The directions ``direction`` asks for, after checking it and ``n_top``."""
    if direction not in ("both", "positive", "negative"):
        raise ValueError(f"direction must be 'both', 'positive' or 'negative', got {direction!r}.")
    if n_top is not None and int(n_top) < 1:
        raise ValueError(f"n_top must be a positive integer or None, got {n_top!r}.")
    return ["positive", "negative"] if direction == "both" else [direction]


def _check_sizes(min_size: int, max_size: int) -> None:
    if min_size < 1 or max_size < min_size:
        raise ValueError(f"Need 1 <= min_size <= max_size, got min_size={min_size}, max_size={max_size}.")


def enrich(
    adata: AnnData,
    gene_sets: str | PathLike[str] | Mapping[str, Iterable[str]],
    *,
    key: str = "sparsevae",
    method: Literal["ora", "prerank"] = "ora",
    direction: Literal["both", "positive", "negative"] = "both",
    pip_threshold: float = 0.5,
    n_top: int | None = None,
    factors: Sequence[str | int] | None = None,
    min_size: int = 5,
    max_size: int = 500,
    layer: str | None = None,
    gene_symbols: str | None = None,
    species: Literal["human", "mouse"] | None = None,
    permutation_num: int = 1000,
    seed: int = 0,
    key_added: str | None = None,
    overwrite: bool = False,
    copy: bool = False,
) -> AnnData | None:
    """Gene-set enrichment of each programme (factor), with genes going up and down tested separately.

    The table goes to ``adata.uns[f"{key}_enrichment"]`` (or ``key_added``), where
    :func:`scsparse.pl.enrichment_dotplot`, :func:`scsparse.tl.factor_diagnostics` and
    :func:`scsparse.tl.describe_factors` read it.

    **Direction (sign convention).** The sign of a loading ``w_jk`` is not the direction of the effect in this
    model (the nonlinear decoder, with unit-norm per-gene output vectors, can flip it). The direction of gene
    ``j`` in programme ``k`` is taken from the data: the sign of the correlation, across cells, between the
    factor's activity ``obsm[f"X_{key}"][:, k]`` and the gene's normalised expression
    (:func:`scsparse.tl.factor_gene_correlation`). ``"positive"`` programme genes are higher in cells where the
    factor is high; ``"negative"`` ones are lower. A positive enrichment therefore reads "cells with high factor
    ``k`` express more of this gene set".

    **ORA** (``method="ora"``): for each factor and direction, the programme is the genes with
    ``p*_jk > pip_threshold`` in that direction. When ``n_top`` is given, the ``n_top`` of them with the largest
    ``|w_jk|``; when ``n_top`` is ``None`` and more than ``max_size`` genes pass the threshold (a model whose ``W``
    is not sparse yet includes nearly every gene), the :data:`DEFAULT_N_TOP` (50) with the largest ``|w_jk|``;
    the ``selection`` column records which rule applied. Each gene set (restricted to the model's genes, sets
    with fewer than ``min_size`` or more than ``max_size`` genes dropped) is tested with a one-sided
    hypergeometric test against the model's genes as background (the same test as ``gseapy.enrich`` with
    ``background=`` the model's genes).

    **Prerank** (``method="prerank"``): all model genes ranked by ``|w_jk| · sign(r_jk)`` and tested with GSEA
    (``gseapy.prerank``, ``permutation_num`` permutations of the gene sets); ``nes > 0`` is reported as
    ``"positive"``, ``nes < 0`` as ``"negative"``; ``genes`` are the leading-edge genes.

    **Multi-study results** (``MultiStudySparseVAE.write_results(adata, key_added=key)``, e.g. ``key="mssvae"``):
    the shared factors and every study's specific factors are tested, under the names of the model's factor
    table (``shared_0``, ``<study>_0``, ...; default: the active ones). A specific factor's programme comes from
    its study's mask (``varm[f"{key}_W_<study>"]``, ``varm[f"{key}_pip_<study>"]``) and its direction from the
    correlation within that study's cells only (the factor is zero in the other studies).

    Gene symbols are matched case-insensitively (mouse sets in upper case, such as GO2MSIG or PanglaoDB, match
    mouse data). ``p_adj`` is Benjamini-Hochberg within each factor and direction, ``p_adj_all`` over all tests of
    the call.

    Parameters
    ----------
    adata
        AnnData with results of :func:`scsparse.tl.sparse_vae` (or ``model.write_results`` of a
        :class:`~scsparse.model.SparseVAE` or :class:`~scsparse.model.MultiStudySparseVAE`) under ``key``.
    gene_sets
        A GMT path (plain, ``.gz`` or ``.zip``), a PanglaoDB TSV, a CellMarker CSV, a dict ``{name: genes}`` or a
        library name (``"hallmark_human"`` (shipped with the package), ``"hallmark_mouse"``, ``"hallmark_v7"``,
        ``"go_bp_human"``, ``"go_bp_mouse"``, ``"panglaodb"``, ``"panglaodb_human"``, ``"panglaodb_mouse"``,
        ``"cellmarker_mouse"``; see :func:`scsparse.tl.load_gene_sets`).
    key
        The ``key_added`` of the fit.
    method
        ``"ora"`` or ``"prerank"``.
    direction
        ``"both"``, ``"positive"`` or ``"negative"``.
    pip_threshold
        Inclusion threshold on ``p*`` defining programme membership (ORA).
    n_top
        Use the ``n_top`` genes with largest ``|w_jk|`` per factor and direction (ORA); see above for the default.
    factors
        Factor names or indices (default: the active factors, ``uns[key]["active_factors"]``).
    min_size, max_size
        Gene sets with fewer or more genes in the data are not tested.
    layer
        Expression used for the direction (default: the model's training layer when present, else ``X``).
    gene_symbols
        Column of ``adata.var`` with gene symbols, when ``var_names`` are other ids.
    species
        For PanglaoDB: keep the markers of ``"human"`` or ``"mouse"``.
    permutation_num
        Permutations for ``method="prerank"`` (smallest p-value about ``1 / permutation_num``).
    seed
        Seed of the permutations.
    key_added
        Where the table goes in ``adata.uns`` (default ``f"{key}_enrichment"``). An earlier enrichment table there
        is replaced; anything else (e.g. a fit's record, ``key_added=key``) only with ``overwrite=True``.
    overwrite
        Replace whatever ``adata.uns[key_added]`` holds.
    copy
        Store the table in a copy of ``adata`` and return the copy.

    Returns
    -------
    None or AnnData
        ``None`` (the table is in ``adata.uns[key_added]``), or the copy with it when ``copy=True``. The table has
        one row per factor, direction and gene set, sorted by factor, direction and ``p``: ``factor``,
        ``direction``, ``term``, ``overlap`` (programme genes in the set; leading-edge size for prerank),
        ``set_size`` (set genes in the data), ``programme_size``, ``background_size``, ``fold_enrichment``
        (ORA) or ``es``/``nes``/``fdr_gsea`` (prerank), ``p``, ``p_adj``, ``p_adj_all``, ``genes``
        (``;``-separated, by decreasing ``|w|``), ``selection``, ``method`` and ``library``. ORA rows with no
        overlap are left out (they count in the adjustment). It is h5ad-writable (string, integer and float
        columns).

    Raises
    ------
    KeyError
        No results under ``key`` (:class:`~scsparse.pl.MissingResultsError`), or a missing ``layer`` or
        ``gene_symbols`` column.
    scsparse.tl.GeneSetError
        Unknown library name; malformed GMT; no gene of any set in the data; data genes that look like Ensembl
        ids while the sets use symbols; no set within ``min_size``/``max_size``.
    ValueError
        Bad ``method`` or ``direction``, or no active factor (pass ``factors=``).

    Examples
    --------
    >>> import scsparse
    >>> adata = scsparse.data.kang_pbmc()
    >>> scsparse.tl.sparse_vae(adata, layer="counts", max_epochs=25)
    >>> scsparse.tl.enrich(adata, "hallmark_human")
    >>> res = adata.uns["sparsevae_enrichment"]
    >>> res[res.p_adj < 0.05].groupby(["factor", "direction"]).head(1)
    >>> scsparse.tl.enrich(adata, "hallmark_human", method="prerank", direction="positive", key_added="prerank")

    Multi-study fit (shared and condition-specific programmes):

    >>> model.write_results(adata, key_added="mssvae")
    >>> scsparse.tl.enrich(adata, "hallmark_human", key="mssvae")
    >>> res = adata.uns["mssvae_enrichment"]
    >>> res[res.factor.str.startswith("stimulated_")].head()
    """
    if method not in ("ora", "prerank"):
        raise ValueError(f"method must be 'ora' or 'prerank', got {method!r}.")
    name = f"{key}_enrichment" if key_added is None else key_added
    check_table_key(adata, name, overwrite=overwrite, default_name=f"{key}_enrichment")  # before the work
    directions = _directions(direction, n_top)
    _check_sizes(min_size, max_size)
    res = read_results(adata, key)
    names = res.resolve(factors)
    symbols = _data_symbols(adata, gene_symbols)
    sets = load_gene_sets(gene_sets, species=species)
    set_names, members = _match_sets(sets, symbols, int(min_size), int(max_size))
    corr = factor_gene_correlation(adata, key=key, layer=layer).to_numpy()
    if method == "ora":
        programmes = _programmes(res, names, corr, directions, pip_threshold, n_top, max_size)
        table = _ora(programmes, set_names, members, symbols)
        columns = ORA_COLUMNS
    else:
        table = _prerank(
            res, names, corr, set_names, members, symbols, directions, permutation_num, seed, min_size, max_size
        )
        columns = PRERANK_COLUMNS
    table = _finish(table, names, columns, method, library_name(gene_sets))
    return store_table(adata, name, table, copy=copy, overwrite=overwrite, default_name=f"{key}_enrichment")


def programme_genes(
    adata: AnnData,
    *,
    key: str = "sparsevae",
    direction: Literal["both", "positive", "negative"] = "both",
    pip_threshold: float = 0.5,
    n_top: int | None = None,
    max_size: int = 500,
    factors: Sequence[str | int] | None = None,
    layer: str | None = None,
) -> pd.DataFrame:
    """The genes of each programme, by factor and direction, as :func:`enrich` tests them (ORA).

    A programme is the genes of one factor with ``p*_jk > pip_threshold`` that go one way with it (the direction
    from the data, see :func:`enrich`), strongest ``|w_jk|`` first; with ``n_top``, the first ``n_top`` of them;
    when ``n_top`` is ``None`` and more than ``max_size`` genes pass the threshold, the first
    :data:`DEFAULT_N_TOP`. Use it to hand a fit's programmes to another tool, or to compare them with another
    method's gene lists (:func:`enrich_gene_lists`).

    Parameters
    ----------
    adata
        AnnData with results of :func:`scsparse.tl.sparse_vae` (or ``model.write_results``) under ``key``.
    key
        The ``key_added`` of the fit.
    direction
        ``"both"``, ``"positive"`` or ``"negative"``.
    pip_threshold
        Inclusion threshold on ``p*``.
    n_top
        At most this many genes per programme (``None``: all genes that pass, see above).
    max_size
        Largest programme read from ``p*`` alone (``n_top=None``).
    factors
        Factor names or indices (default: the active factors).
    layer
        Expression used for the direction (default: the model's training layer when present, else ``X``).

    Returns
    -------
    pandas.DataFrame
        One row per non-empty programme: ``factor``, ``direction``, ``size``, ``genes`` (a list of gene names,
        strongest first) and ``selection`` (the rule that applied).

    Examples
    --------
    >>> import scsparse
    >>> adata = scsparse.data.kang_pbmc()
    >>> scsparse.tl.sparse_vae(adata, layer="counts", max_epochs=25)
    >>> scsparse.tl.programme_genes(adata).head()
    """
    directions = _directions(direction, n_top)
    res = read_results(adata, key)
    names = res.resolve(factors)
    corr = factor_gene_correlation(adata, key=key, layer=layer).to_numpy()
    genes = np.asarray(adata.var_names).astype(str)
    rows = [
        {"factor": f, "direction": d, "size": int(prog.size), "genes": genes[prog].tolist(), "selection": rule}
        for f, d, prog, rule in _programmes(res, names, corr, directions, pip_threshold, n_top, int(max_size))
    ]
    return pd.DataFrame(rows, columns=["factor", "direction", "size", "genes", "selection"])


def enrich_gene_lists(
    gene_lists: Mapping[str, Sequence[str]],
    gene_sets: str | PathLike[str] | Mapping[str, Iterable[str]],
    *,
    background: Sequence[str],
    min_size: int = 5,
    max_size: int = 500,
    species: Literal["human", "mouse"] | None = None,
) -> pd.DataFrame:
    """Over-representation of gene sets in any named gene lists, with the test and columns of :func:`enrich`.

    Each list (a programme of another method, a marker list, a cluster's genes) is tested against every gene set
    restricted to ``background`` with a one-sided hypergeometric test, exactly as :func:`enrich` tests a
    factor's programme; so lists from different methods on the same genes can be compared term by term.

    Parameters
    ----------
    gene_lists
        ``{name: genes}``; a list's order is kept in the ``genes`` column. A name ending in ``"+"`` or ``"-"``
        is reported as that factor's ``"positive"`` or ``"negative"`` direction, any other name as
        ``"positive"``.
    gene_sets
        As in :func:`enrich` (a library name, a path or a dict).
    background
        The genes that could have been chosen (e.g. ``adata.var_names`` of the fit); every list must lie in it.
    min_size, max_size
        Gene sets with fewer or more genes in the background are not tested.
    species
        For PanglaoDB: keep the markers of ``"human"`` or ``"mouse"``.

    Returns
    -------
    pandas.DataFrame
        The columns of :func:`enrich` with ``method="ora"`` (``factor`` is the list's name without its sign,
        ``selection`` is ``"given list"``); ``p_adj`` is Benjamini-Hochberg within each list, ``p_adj_all`` over
        all tests of the call.

    Raises
    ------
    ValueError
        A list with genes outside ``background``, an empty list, or bad ``min_size``/``max_size``.
    scsparse.tl.GeneSetError
        As in :func:`enrich`.

    Examples
    --------
    >>> import scsparse
    >>> lists = {"ifn+": ["ISG15", "IFI6", "IFIT3", "IFIT1", "RSAD2", "ISG20"], "b_cells": ["MS4A1", "CD79A", "CD19"]}
    >>> background = scsparse.data.kang_pbmc().var_names
    >>> res = scsparse.tl.enrich_gene_lists(lists, "hallmark_human", background=background)
    >>> sorted(res.loc[(res.factor == "ifn") & (res.p_adj < 0.01), "term"])
    ['HALLMARK_INTERFERON_ALPHA_RESPONSE', 'HALLMARK_INTERFERON_GAMMA_RESPONSE']
    """
    _check_sizes(min_size, max_size)
    genes = np.asarray(background).astype(str)
    if len(np.unique(genes)) != genes.size:
        raise ValueError("background has duplicate gene names; pass unique names (e.g. adata.var_names_make_unique()).")
    index = {g: j for j, g in enumerate(genes)}
    programmes, names = [], []
    for name, values in gene_lists.items():
        values = [str(g) for g in values]
        if not values:
            raise ValueError(f"Gene list {name!r} is empty.")
        missing = [g for g in values if g not in index]
        if missing:
            raise ValueError(
                f"Gene list {name!r} has {len(missing)} gene(s) not in background (e.g. {', '.join(missing[:3])}); "
                "the background must hold every gene that could have been chosen."
            )
        factor, direction = str(name), "positive"
        if factor.endswith(("+", "-")) and len(factor) > 1:
            factor, direction = factor[:-1], "positive" if factor.endswith("+") else "negative"
        idx = np.asarray(list(dict.fromkeys(index[g] for g in values)), dtype=np.int64)
        programmes.append((factor, direction, idx, "given list"))
        names.append(factor)
    sets = load_gene_sets(gene_sets, species=species)
    set_names, members = _match_sets(sets, genes, int(min_size), int(max_size))
    table = _ora(programmes, set_names, members, genes)
    return _finish(table, list(dict.fromkeys(names)), ORA_COLUMNS, "ora", library_name(gene_sets))
