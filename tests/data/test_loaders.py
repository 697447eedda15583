from __future__ import annotations

import warnings
from importlib import resources

import anndata as ad
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import scsparse.data as sd
from scsparse.data._build_embedded import FORCED_GENES, build_kang_subset
from scsparse.data._embedded import EMBEDDED_FILE


def _check_counts(adata: ad.AnnData) -> None:
    counts = adata.layers["counts"]
    assert sp.isspmatrix_csr(counts) or isinstance(counts, sp.csr_array)
    assert np.array_equal(counts.data, np.round(counts.data)) and counts.data.min() >= 0
    assert adata.X is not counts
    assert (adata.X != counts).nnz == 0
    assert adata.var_names.is_unique and adata.obs_names.is_unique
    assert {"name", "citation", "license"} <= set(adata.uns["dataset"])


@pytest.fixture(scope="module")
def kang(shared_data_module):
    return sd.kang2018()


@pytest.fixture(scope="module")
def cellbench3(shared_data_module):
    return sd.cellbench()


def test_kang2018(kang, shared_data_module):
    assert kang.shape == (1975, 6998)
    _check_counts(kang)
    assert kang.uns["dataset"]["count_residual"] < 1e-2
    assert list(kang.obs["condition"].cat.categories) == ["control", "stimulated"]
    assert kang.obs["condition"].value_counts().to_dict() == {"stimulated": 1039, "control": 936}
    assert kang.obs["cell_type"].nunique() == 7
    # the recovered counts reproduce the published log-normalised values
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # old anndata layout
        src = ad.read_h5ad(shared_data_module / "multistudy/kang2018_scgen/valid.h5ad")
    scale = kang.uns["dataset"]["normalisation_scale"]
    size = kang.obs["n_counts_unfiltered"].to_numpy(dtype=np.float64)[:, None]
    relog = np.log1p(kang.layers["counts"].toarray() / size * scale)
    assert np.abs(relog - src.X.toarray()).max() < 1e-3
    # interferon response: ISG15 is far higher in stimulated cells
    isg = kang[:, "ISG15"].layers["counts"].toarray().ravel()
    stim = kang.obs["condition"].to_numpy() == "stimulated"
    assert isg[stim].mean() > 5 * isg[~stim].mean()


def test_zeisel_subset(shared_data):
    adata = sd.zeisel_subset()
    assert adata.shape == (1464, 1000)
    _check_counts(adata)
    assert adata.obs["cell_type"].value_counts().to_dict() == {
        "pyramidal CA1": 939,
        "interneurons": 290,
        "endothelial-mural": 235,
    }
    assert adata.obsm["ercc"].shape == (1464, 57)
    assert adata.obs_names[0] == "1772071015_C02"


def test_zeisel_full(shared_data):
    adata = sd.zeisel_full()
    assert adata.shape == (3005, 4000)
    _check_counts(adata)
    assert adata.var_names[0] == "gene_0000" and adata.var_names[-1] == "gene_3999"
    assert adata.obs["level1class"].value_counts().to_dict() == {
        "pyramidal CA1": 939,
        "oligodendrocytes": 820,
        "pyramidal SS": 399,
        "interneurons": 290,
        "endothelial-mural": 235,
        "astrocytes_ependymal": 224,
        "microglia": 98,
    }
    assert adata.obs["level2class"].nunique() == 48
    assert "unnamed" in adata.uns["dataset"]["note"]
    assert adata.var["matched_symbol"].notna().sum() == 28
    assert adata.layers["counts"].max() == 6732


def test_pbmc3k(shared_data):
    adata = sd.pbmc3k()
    assert adata.shape == (1000, 13714)
    _check_counts(adata)
    assert adata.layers["counts"].nnz == 845352
    assert adata.obs["cell_type"].notna().sum() == 983
    assert adata.obs["cell_type"].nunique() == 9
    assert adata.obs_names[0] == "AAACATACAACCAC-1"
    assert (adata.var["gene_ids"].str.startswith("ENSG")).all()
    assert np.array_equal(adata.layers["counts"].sum(axis=1).A1, adata.obs["nCount_RNA"].to_numpy())
    # marker sanity: MS4A1 is a B-cell gene
    ms4a1 = adata[:, "MS4A1"].layers["counts"].toarray().ravel()
    is_b = (adata.obs["cell_type"] == "B").to_numpy()
    assert ms4a1[is_b].mean() > 5 * ms4a1[~is_b].mean()


def test_cellbench_3cl(cellbench3):
    adata = cellbench3
    _check_counts(adata)
    assert adata.n_obs == 274 + 225
    assert adata.obs["technology"].value_counts().to_dict() == {"CEL-seq2": 274, "Drop-seq": 225}
    assert set(adata.obs["cell_line"].cat.categories) == {"H1975", "H2228", "HCC827"}
    assert adata.var_names.str.startswith("ENSG").all()
    assert 10_000 < adata.n_vars < 15_127


def test_cellbench_5cl_via_load(shared_data):
    adata = sd.load("cellbench", design="5cl")
    _check_counts(adata)
    assert adata.obs["batch"].value_counts().to_dict() == {"p2": 307, "p3": 305, "p1": 297}
    assert adata.obs["cell_line"].nunique() == 5
    with pytest.raises(ValueError, match="3cl"):
        sd.cellbench("4cl")


def test_pbmc_3batch(shared_data):
    adata = sd.load("pbmc_3batch")
    _check_counts(adata)
    assert adata.shape == (2860, 11205)
    assert adata.obs["batch"].value_counts().sort_index().to_dict() == {"3p_v2": 954, "3p_v3": 906, "5p": 1000}
    assert list(adata.obs["batch"].cat.categories) == ["3p_v2", "3p_v3", "5p"]
    assert all(type(g) is str for g in adata.var_names[:5])
    assert np.array_equal(adata.layers["counts"].sum(axis=1).A1, adata.obs["n_counts"].to_numpy())
    # against the source triplets: every count of the 5' batch's CD3E cells lands in the right cell and gene
    path = sd.fetch("pbmc_3batch")["multistudy/pbmc_3batch_scWGParis/5prime_PBMC_filt_1kcells.rds"]
    obj = sd._loaders._read_r(path)
    genes = np.asarray(obj.Dimnames[0]).astype(str)
    row = int(np.flatnonzero(genes == "CD3E")[0])
    src = np.zeros(int(obj.Dim[1]))
    take = np.asarray(obj.i) == row
    np.add.at(src, np.asarray(obj.j)[take], np.asarray(obj.x)[take])
    ours = adata[adata.obs["batch"] == "5p", "CD3E"].layers["counts"].toarray().ravel()
    assert src.sum() > 0 and np.array_equal(ours, src)
    # a symbol naming two genes in a batch cannot be matched across batches
    dup = genes[pd.Index(genes).duplicated()]
    assert len(dup) and not set(dup) & set(adata.var_names)


def test_kang_pbmc_embedded():
    a = sd.kang_pbmc()
    b = sd.kang_pbmc()
    assert a is not b and a.layers["counts"] is not b.layers["counts"]
    _check_counts(a)
    assert a.n_obs == 1975 and 1500 <= a.n_vars <= 2100
    assert {"ISG15", "IFI6", "IFIT1"} <= set(a.var_names)
    assert set(a.obs["condition"].cat.categories) == {"control", "stimulated"}
    assert a.obs["cell_type"].nunique() == 7
    assert "Kang" in a.uns["dataset"]["citation"] and "Lotfollahi" in a.uns["dataset"]["citation"]
    a.X.data[:] = 0
    a.obs["condition"] = "mutated"
    c = sd.kang_pbmc()
    assert c.X.sum() > 0 and set(c.obs["condition"]) == {"control", "stimulated"}
    ref = resources.files("scsparse.data").joinpath(EMBEDDED_FILE)
    with resources.as_file(ref) as path:
        assert path.stat().st_size <= 4 * 1024**2
    assert sd.load("kang_pbmc").shape == b.shape


def test_kang_pbmc_matches_kang2018(kang):
    emb = sd.kang_pbmc()
    assert emb.var_names.isin(kang.var_names).all()
    assert list(emb.obs_names) == list(kang.obs_names)
    diff = emb.layers["counts"] - kang[:, emb.var_names].layers["counts"]
    assert diff.nnz == 0 or np.abs(diff.data).max() == 0
    present = [g for g in FORCED_GENES if g in kang.var_names]
    assert set(present) <= set(emb.var_names)


def test_build_kang_subset_reproduces_the_shipped_file(kang, tmp_path, lock_mismatches):
    # seurat_v3 gives many genes with a single count in one cell exactly the same normalised variance, and such a
    # tie straddles the 2,000-gene boundary: which tied genes take the last places is the sort's tie-breaking
    # (numpy build, CPU). The genes above the tie, the forced genes and the counts are determined.
    import scanpy as sc

    out = build_kang_subset(tmp_path / "kang.h5ad")
    built = ad.read_h5ad(out)
    shipped = sd.kang_pbmc()
    assert built.X.dtype == np.int32 and not built.layers
    assert built.n_vars == shipped.n_vars
    assert list(built.obs_names) == list(shipped.obs_names)
    shared = built.var_names.intersection(shipped.var_names)
    assert (built[:, shared].X != shipped[:, shared].layers["counts"]).nnz == 0
    assert set(FORCED_GENES) & set(kang.var_names) <= set(built.var_names)

    unlocked = lock_mismatches("scanpy", "scikit-misc", "numpy", "scipy", "pandas", "anndata")
    if unlocked:  # a newer stack may move genes near the boundary; the procedure must still agree almost fully
        assert len(shared) / built.n_vars >= 0.98, f"{len(shared)} of {built.n_vars} genes shared ({unlocked})"
        return
    hvg = sc.pp.highly_variable_genes(
        kang, layer="counts", flavor="seurat_v3", n_top_genes=2000, span=0.3, inplace=False
    ).set_index(kang.var_names)
    boundary = hvg.loc[built.var_names[built.var["highly_variable"]], "variances_norm"].min()
    tied = hvg.index[np.isclose(hvg["variances_norm"], boundary, rtol=0, atol=1e-12)]
    assert (hvg["variances_norm"] > boundary + 1e-12).sum() < 2000 < (hvg["variances_norm"] >= boundary - 1e-12).sum()
    assert set(built.var_names) ^ set(shipped.var_names) <= set(tied)
    source_order = kang.var_names.get_indexer
    assert np.all(np.diff(source_order(built.var_names)) > 0) and np.all(np.diff(source_order(shipped.var_names)) > 0)
