"""Build the embedded demo dataset ``kang_pbmc_counts.h5ad`` from the Kang et al. (2018) registry file.

Run once by the maintainers (needs the ``kang2018`` registry file and ``scikit-misc`` for scanpy's
``seurat_v3`` flavour)::

    python -m scsparse.data._build_embedded
"""

from __future__ import annotations

import argparse
from pathlib import Path

import anndata as ad
import numpy as np
import scipy.sparse as sp

from ._embedded import CITATION, EMBEDDED_FILE

__all__ = ["FORCED_GENES", "build_kang_subset"]

#: Interferon-response and cell-type marker genes always kept in the embedded subset (when present).
FORCED_GENES: tuple[str, ...] = (
    "ISG15", "IFI6", "IFIT1", "IFIT2", "IFIT3", "MX1", "OAS1", "IFI44L", "ISG20", "LY6E", "RSAD2",
    "CD3D", "CD3E", "CD4", "CD8A", "MS4A1", "CD79A", "CD14", "LYZ", "FCGR3A", "NKG7", "GNLY", "HLA-DRA",
    "FCER1A",
)  # fmt: skip


def build_kang_subset(out_path: str | Path, n_top_genes: int = 2000) -> Path:
    """Write the compact Kang et al. (2018) counts subset used by :func:`scsparse.data.kang_pbmc`.

    Procedure (deterministic): load :func:`scsparse.data.kang2018` (1975 cells x 6998 genes, exact counts);
    select ``n_top_genes`` genes with :func:`scanpy.pp.highly_variable_genes` (``flavor="seurat_v3"`` on the
    raw counts, no batch key, ``span=0.3``); add the :data:`FORCED_GENES` present in the data; keep the genes
    in source order. The counts are stored once, as a CSR ``int32`` matrix in ``X`` (gzip), with ``obs``
    ``condition`` and ``cell_type`` and ``uns["dataset"]``.

    Genes with a single count in one cell share exactly the same normalised variance, and such a tie straddles
    the ``n_top_genes`` boundary: which of the tied genes take the last places follows scanpy's sort, whose
    tie-breaking can differ between numpy builds and CPUs. Everything else is determined.

    Parameters
    ----------
    out_path
        Output ``.h5ad`` path (the package copy is ``scsparse/data/kang_pbmc_counts.h5ad``).
    n_top_genes
        Number of highly variable genes before the forced genes are added.

    Returns
    -------
    pathlib.Path
        ``out_path``.

    Examples
    --------
    >>> from scsparse.data._build_embedded import build_kang_subset
    >>> build_kang_subset("/tmp/kang_pbmc_counts.h5ad")  # doctest: +SKIP
    PosixPath('/tmp/kang_pbmc_counts.h5ad')
    """
    import scanpy as sc

    from ._loaders import kang2018

    out_path = Path(out_path)
    full = kang2018()
    hvg = sc.pp.highly_variable_genes(
        full, layer="counts", flavor="seurat_v3", n_top_genes=n_top_genes, span=0.3, inplace=False
    )
    is_hvg = hvg["highly_variable"].to_numpy(dtype=bool)
    forced = full.var_names.isin(FORCED_GENES)
    keep = is_hvg | forced
    missing = sorted(set(FORCED_GENES) - set(full.var_names))
    counts = sp.csr_matrix(full.layers["counts"][:, keep]).astype(np.int32)
    counts.sort_indices()
    var = full.var.loc[keep].copy()
    var["highly_variable"] = is_hvg[keep]
    var["forced"] = forced[keep] & ~is_hvg[keep]
    obs = full.obs[["condition", "cell_type"]].copy()
    note = (
        f"Made by scsparse.data._build_embedded.build_kang_subset(n_top_genes={n_top_genes}) from the "
        "scGen file valid.h5ad (registry dataset 'kang2018'): exact integer counts recovered as "
        "round(expm1(X) / row-wise smallest non-zero), all 1975 cells, the top highly variable genes "
        "(scanpy seurat_v3 on counts, span=0.3) "
        f"plus {int(var['forced'].sum())} forced interferon-response / marker genes"
        + (f" (absent from the data: {', '.join(missing)})" if missing else "")
        + "."
    )
    adata = ad.AnnData(X=counts, obs=obs, var=var)
    adata.uns["dataset"] = {
        "name": "kang_pbmc",
        "citation": CITATION,
        "license": ("Data: Kang et al. 2018 (GEO GSE96583, public); file derived from the scGen repository (GPL-3.0)"),
        "note": note,
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    adata.write_h5ad(out_path, compression="gzip", compression_opts=9)
    return out_path


def _main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).with_name(EMBEDDED_FILE)
    parser.add_argument("--out", type=Path, default=default, help=f"output path (default: {default})")
    parser.add_argument("--n-top-genes", type=int, default=2000)
    args = parser.parse_args()
    path = build_kang_subset(args.out, n_top_genes=args.n_top_genes)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    _main()
