"""The real data sets of ``bench peers`` and ``bench stability``: cells, genes, labels, batches, gene-set libraries,
known programmes.

Every data set is read from the data registry (offline copy: ``SCSPARSE_DATA_DIR``) and reduced to the same genes
for every method: the embedded Kang PBMCs keep their 2,004 genes, Zeisel its 1,000 named genes, the others their
2,000 most variable genes (:func:`variable_genes`, per batch where there are batches).

Known programmes, the biology each data set is known to hold:

- **Kang**: the interferon-beta response (MSigDB Hallmark interferon alpha and gamma response) in the stimulated
  cells;
- **PBMC 3k, Kang, Zeisel**: each labelled cell type's PanglaoDB markers (types with at least
  :data:`MIN_TYPE_CELLS` cells).

CellBench's genes are Ensembl ids with no symbol table offline, so it has no enrichment; the three 10x PBMC
chemistries have no labels. Each is scored on what it has (see :mod:`._programme_scores`).

The multi-study arm (:mod:`._peers._multistudy`) takes Kang with control and stimulated cells as two studies (the
interferon programme belongs to the stimulated study, the cell types to both) and CellBench with its two
technologies as studies (the cell lines shared, the technologies' differences specific).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache

import numpy as np
from anndata import AnnData

from scsparse.utils import torch_threads

__all__ = [
    "INTERFERON_TERMS",
    "MIN_TYPE_CELLS",
    "REAL_DATASETS",
    "RealDataset",
    "gene_set_library",
    "load_real_dataset",
    "quick_subsample",
    "study_names",
    "variable_genes",
]

#: Hallmark terms of the interferon-beta response (the known programme of the Kang data).
INTERFERON_TERMS: tuple[str, ...] = ("HALLMARK_INTERFERON_ALPHA_RESPONSE", "HALLMARK_INTERFERON_GAMMA_RESPONSE")


#: Labelled cell types with fewer cells are not scored for marker recovery.
MIN_TYPE_CELLS = 10

#: PanglaoDB cell types (organs "Immune system" and "Blood") that mark each PBMC label.
_PBMC_MARKERS: dict[str, tuple[str, ...]] = {
    "Naive CD4 T": ("T cells", "T helper cells"),
    "Memory CD4 T": ("T cells", "T helper cells", "T memory cells"),
    "CD8 T": ("T cells", "T cytotoxic cells"),
    "CD4T": ("T cells", "T helper cells"),
    "CD8T": ("T cells", "T cytotoxic cells"),
    "B": ("B cells", "B cells naive", "B cells memory"),
    "CD14+ Mono": ("Monocytes",),
    "FCGR3A+ Mono": ("Monocytes",),
    "CD14+Mono": ("Monocytes",),
    "FCGR3A+Mono": ("Monocytes",),
    "NK": ("NK cells",),
    "DC": ("Dendritic cells", "Plasmacytoid dendritic cells"),
    "Dendritic": ("Dendritic cells", "Plasmacytoid dendritic cells"),
    "Platelet": ("Platelets", "Megakaryocytes"),
}
#: PanglaoDB cell types (organs "Brain" and "Vasculature") that mark each Zeisel label.
_ZEISEL_MARKERS: dict[str, tuple[str, ...]] = {
    "pyramidal CA1": ("Pyramidal cells",),
    "interneurons": ("Interneurons", "GABAergic neurons"),
    "endothelial-mural": ("Endothelial cells", "Endothelial cells (blood brain barrier)", "Pericytes"),
}


@dataclass(frozen=True)
class RealDataset:
    """One data set of the benchmark and how it is scored.

    Attributes
    ----------
    name, title
        Key (``--datasets``) and the name shown in the summary.
    label_key, batch_key
        ``obs`` columns of the cell labels (held-out accuracy, marker recovery) and the batches (given to the
        methods that model batches, and batch association); ``None`` when the data set has none.
    libraries
        Gene-set libraries for enrichment (names as in :func:`gene_set_library`); empty: no enrichment.
    markers
        Label -> PanglaoDB cell types whose markers that label's programme should be enriched for.
    condition
        ``(obs column, group)`` whose known programme is :data:`INTERFERON_TERMS` (Kang).
    study_key
        ``obs`` column of the studies: set for the data sets of the multi-study arm
        (:mod:`._peers._multistudy`), whose first study (sorted) is the reference of ``transfer_accuracy``.
    """

    name: str
    title: str
    load: Callable[[], AnnData]
    label_key: str | None = None
    batch_key: str | None = None
    libraries: tuple[str, ...] = ()
    markers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    condition: tuple[str, str] | None = None
    study_key: str | None = None


def _kang() -> AnnData:
    from scsparse.data import kang_pbmc

    return kang_pbmc()


def _pbmc3k() -> AnnData:
    from scsparse.data import pbmc3k

    return variable_genes(pbmc3k(), 2000)


def _zeisel() -> AnnData:
    from scsparse.data import zeisel_subset

    return zeisel_subset()


def _cellbench() -> AnnData:
    from scsparse.data import cellbench

    adata = cellbench()
    return variable_genes(adata[adata.obs["demuxlet_cls"] == "SNG"].copy(), 2000, batch_key="technology")


def _pbmc_3batch() -> AnnData:
    from scsparse.data import pbmc_3batch

    return variable_genes(pbmc_3batch(), 2000, batch_key="batch")


_KANG = RealDataset(
    "kang",
    "Kang et al. 2018 PBMCs, control and IFN-beta (embedded, 1,975 cells)",
    _kang,
    label_key="cell_type",
    libraries=("hallmark_human", "panglaodb_blood"),
    markers=_PBMC_MARKERS,
    condition=("condition", "stimulated"),
)
_CELLBENCH = RealDataset(
    "cellbench",
    "CellBench 3 lung cancer cell lines, CEL-seq2 and Drop-seq (singlets)",
    _cellbench,
    label_key="cell_line",
    batch_key="technology",
)

#: Data set key -> definition, in the order they run.
REAL_DATASETS: dict[str, RealDataset] = {
    d.name: d
    for d in (
        _KANG,
        RealDataset(
            "pbmc3k",
            "10x PBMC 3k (first 1,000 cells, Seurat labels)",
            _pbmc3k,
            label_key="cell_type",
            libraries=("hallmark_human", "panglaodb_blood"),
            markers=_PBMC_MARKERS,
        ),
        RealDataset(
            "zeisel",
            "Zeisel et al. 2015 mouse cortex and hippocampus (DESCEND subset, 1,464 cells)",
            _zeisel,
            label_key="cell_type",
            libraries=("hallmark_mouse", "panglaodb_brain", "cellmarker_brain"),
            markers=_ZEISEL_MARKERS,
        ),
        _CELLBENCH,
        RealDataset(
            "pbmc_3batch",
            "10x PBMCs in three chemistries (3' v2, 3' v3, 5')",
            _pbmc_3batch,
            batch_key="batch",
            libraries=("hallmark_human", "panglaodb_blood"),
        ),
        replace(
            _KANG,
            name="kang_studies",
            title=(
                "Multi-study arm: Kang et al. 2018 PBMCs, control and IFN-beta as two studies (embedded, 1,975 cells)"
            ),
            study_key="condition",
        ),
        replace(
            _CELLBENCH,
            name="cellbench_studies",
            title=(
                "Multi-study arm: CellBench 3 lung cancer cell lines, CEL-seq2 and Drop-seq as two studies (singlets)"
            ),
            study_key="technology",
        ),
    )
}


def study_names(adata: AnnData, study_key: str) -> list[str]:
    """The studies of a multi-study data set, sorted; the first is the reference of ``transfer_accuracy``."""
    return sorted(map(str, adata.obs[study_key].astype(str).unique()))


def load_real_dataset(name: str, *, quick: bool = False, seed: int = 0) -> AnnData:
    """The cells and genes of a data set (quick: 300 cells and the 300 most variable genes).

    Raises
    ------
    ValueError
        For an unknown name.
    scsparse.data.DataNotAvailableError
        When the data are not in the local cache and cannot be downloaded.
    """
    if name not in REAL_DATASETS:
        raise ValueError(f"Unknown data set {name!r}; choose from {', '.join(REAL_DATASETS)}.")
    spec = REAL_DATASETS[name]
    adata = spec.load()
    if spec.label_key is not None:
        adata = adata[adata.obs[spec.label_key].notna().to_numpy()].copy()
    return quick_subsample(adata, 300, seed) if quick else adata


@cache
def gene_set_library(name: str) -> dict[str, list[str]]:
    """A gene-set library of the benchmark, set names prefixed with the library (``"PanglaoDB: NK cells"``).

    ``"hallmark_human"``, ``"hallmark_mouse"``: MSigDB Hallmark; ``"panglaodb_blood"``: PanglaoDB human markers of
    the organs "Immune system" and "Blood"; ``"panglaodb_brain"``: PanglaoDB mouse markers of "Brain" and
    "Vasculature"; ``"cellmarker_brain"``: CellMarker 2.0 mouse markers of the brain.
    """
    from scsparse.data import fetch
    from scsparse.tl import load_gene_sets, read_cellmarker, read_panglaodb

    if name in ("hallmark_human", "hallmark_mouse"):
        return {f"Hallmark: {k}": v for k, v in load_gene_sets(name).items()}
    if name in ("panglaodb_blood", "panglaodb_brain"):
        rel = "genesets/PanglaoDB_markers_27_Mar_2020.tsv"
        path = fetch("panglaodb", files=[rel])[rel]
        blood = name == "panglaodb_blood"
        species = "human" if blood else "mouse"
        organs = ["Immune system", "Blood"] if blood else ["Brain", "Vasculature"]
        return {f"PanglaoDB: {k}": v for k, v in read_panglaodb(path, species=species, organ=organs).items()}
    if name == "cellmarker_brain":
        rel = "genesets/CellMarker2_Mouse.csv"
        path = fetch("cellmarker_mouse", files=[rel])[rel]
        return {f"CellMarker: {k}": v for k, v in read_cellmarker(path, tissue="Brain").items()}
    raise ValueError(f"Unknown benchmark gene-set library {name!r}.")


# ---------------------------------------------------------------------------------------------- gene selection
def variable_genes(adata: AnnData, n_genes: int, batch_key: str | None = None) -> AnnData:
    """The ``n_genes`` most variable genes of ``adata`` among genes seen in >= 3 cells, as a new AnnData.

    :func:`scanpy.pp.highly_variable_genes` with ``flavor="seurat_v3"`` on ``layers["counts"]`` (per batch with
    ``batch_key``).
    """
    import scanpy as sc

    adata = adata[:, np.asarray((adata.layers["counts"] > 0).sum(0)).ravel() >= 3].copy()
    with torch_threads(None):  # numba's OpenMP layer resets torch's thread count
        hvg = sc.pp.highly_variable_genes(
            adata, layer="counts", flavor="seurat_v3", n_top_genes=n_genes, batch_key=batch_key, inplace=False
        )
    return adata[:, np.asarray(hvg["highly_variable"], dtype=bool)].copy()


def quick_subsample(adata: AnnData, n_genes: int, seed: int = 0, n_cells: int = 300) -> AnnData:
    """The data of a quick smoke run: ``n_cells`` cells drawn with ``seed``, then their ``n_genes`` most variable
    genes (:func:`variable_genes`, without batches: about 100 cells per batch are too few for per-batch loess).
    """
    rng = np.random.default_rng(seed)
    adata = adata[np.sort(rng.choice(adata.n_obs, size=min(n_cells, adata.n_obs), replace=False))].copy()
    return variable_genes(adata, min(n_genes, adata.n_vars))
