"""The embedded demo dataset: a compact counts subset of Kang et al. (2018), shipped inside the package."""

from __future__ import annotations

from importlib import resources

import anndata as ad
import numpy as np
import scipy.sparse as sp

__all__ = ["EMBEDDED_FILE", "kang_pbmc"]

EMBEDDED_FILE = "kang_pbmc_counts.h5ad"

CITATION = (
    "Kang H.M. et al. (2018) Multiplexed droplet single-cell RNA-sequencing using natural genetic variation. "
    "Nat Biotechnol 36:89-94 (GEO GSE96583); preprocessing (cell/gene filtering, scGen validation split) by "
    "Lotfollahi M., Wolf F.A., Theis F.J. (2019) scGen predicts single-cell perturbation responses. "
    "Nat Methods 16:715-721."
)


def kang_pbmc() -> ad.AnnData:
    """Kang et al. (2018) IFN-beta stimulated vs control PBMCs: the embedded demo dataset (no download).

    A compact subset of :func:`scsparse.data.kang2018` made by
    :func:`scsparse.data._build_embedded.build_kang_subset`: all 1975 cells, the highly variable genes
    (scanpy ``flavor="seurat_v3"`` on the raw counts) plus interferon-response and cell-type marker genes
    (ISG15, IFI6, IFIT1, IFIT3, CD14, MS4A1, ...). Each call reads the file again and returns a new object, so
    modifying it never affects later calls.

    Returns
    -------
    anndata.AnnData
        1975 cells x the stored genes (gene symbols). ``layers["counts"]``: raw integer counts (CSR float32);
        ``X``: a copy of the counts. ``obs``: ``condition`` (``"control"``/``"stimulated"``), ``cell_type``
        (7 types). ``var["highly_variable"]``, ``var["forced"]`` (marker gene added on purpose).
        ``uns["dataset"]``: name, citation, license and a note on how the subset was made.

    Examples
    --------
    >>> from scsparse.data import kang_pbmc
    >>> adata = kang_pbmc()
    >>> adata.n_obs
    1975
    >>> "ISG15" in adata.var_names
    True
    """
    ref = resources.files("scsparse.data").joinpath(EMBEDDED_FILE)
    with resources.as_file(ref) as path:
        stored = ad.read_h5ad(path)
    counts = sp.csr_matrix(stored.layers["counts"] if "counts" in stored.layers else stored.X).astype(np.float32)
    adata = ad.AnnData(X=counts.copy(), obs=stored.obs.copy(), var=stored.var.copy(), uns=dict(stored.uns))
    adata.layers["counts"] = counts
    return adata
