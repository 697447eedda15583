"""Gene-set enrichment of programmes (tl.enrich) and gene-set libraries (tl.load_gene_sets and readers).

The planted AnnData (``planted_adata``) is a hand-made result of a sparse VAE, no training: two factors, factor_0
drives genes ``UP0..UP9`` up and ``DN0..DN9`` down, factor_1 drives ``F1G0..F1G9`` up; the other genes are noise.
The signs of ``W`` are deliberately the *opposite* of the planted directions, so the tests fail if the direction
were read from ``W``. Other test files load this module by path for the same data.
"""

from __future__ import annotations

import gzip
import zipfile

import anndata as ad
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import scsparse
from scsparse.pl import MissingResultsError
from scsparse.tl import GeneSetError

UP = [f"UP{i}" for i in range(10)]
DN = [f"DN{i}" for i in range(10)]
F1 = [f"F1G{i}" for i in range(10)]
NOISE = [f"NOISE{i}" for i in range(50)]
GENES = UP + DN + F1 + NOISE
KEY = "sv"


def planted_adata(n_obs: int = 300, seed: int = 0, sparse_w: bool = True) -> ad.AnnData:
    """Counts with planted programmes and a matching (hand-written) sparse VAE result under key ``"sv"``."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n_obs, 2))
    n_genes = len(GENES)
    log_rate = np.full((n_obs, n_genes), 1.5)
    log_rate[:, :10] += 0.9 * z[:, [0]]  # UP: up with factor_0
    log_rate[:, 10:20] -= 0.9 * z[:, [0]]  # DN: down with factor_0
    log_rate[:, 20:30] += 0.9 * z[:, [1]]  # F1G: up with factor_1
    counts = rng.poisson(np.exp(log_rate)).astype(np.float32)
    adata = ad.AnnData(sp.csr_matrix(counts))
    adata.obs_names = [f"cell{i}" for i in range(n_obs)]
    adata.var_names = GENES
    adata.layers["counts"] = adata.X.copy()
    adata.obs["group"] = pd.Categorical(np.where(z[:, 0] > 0.5, "high", np.where(z[:, 0] < -0.5, "low", "mid")))

    W = np.full((n_genes, 2), 0.01)
    W[:10, 0] = -np.linspace(1.5, 1.0, 10)  # negative loadings for genes that go UP
    W[10:20, 0] = np.linspace(1.45, 0.95, 10)  # positive loadings for genes that go DOWN
    W[20:30, 1] = -np.linspace(1.2, 0.8, 10)
    pip = np.where(np.abs(W) > 0.5, 0.99, 0.01) if sparse_w else np.full(W.shape, 0.99)
    adata.obsm[f"X_{KEY}"] = z
    adata.varm[f"{KEY}_W"] = W
    adata.varm[f"{KEY}_pip"] = pip
    adata.uns[KEY] = {
        "factor_names": np.asarray(["factor_0", "factor_1"], dtype=object),
        "active": np.asarray([True, True]),
        "active_factors": np.asarray(["factor_0", "factor_1"], dtype=object),
        "eta": np.asarray([0.25, 0.12]),
        "pip_threshold": 0.5,
        "top_genes": {
            "factor_0": np.asarray(UP[:5], dtype=object),
            "factor_1": np.asarray(F1[:5], dtype=object),
        },
        "anchor_genes": {
            "factor_0": np.asarray(UP + DN, dtype=object),
            "factor_1": np.asarray(F1, dtype=object),
        },
        "setup_args": {"layer": "counts"},
    }
    return adata


def planted_sets() -> dict[str, list[str]]:
    rng = np.random.default_rng(1)
    return {
        "PLANTED_UP": [g.lower() for g in UP] + ["NOT_IN_DATA"],  # case-insensitive matching
        "PLANTED_DOWN": DN,
        "FACTOR1_SET": F1,
        "RANDOM_SET": list(rng.choice(NOISE, 10, replace=False)),
        "TOO_SMALL": UP[:2],
    }


def _row(table: pd.DataFrame, factor: str, direction: str, term: str) -> pd.Series | None:
    hit = table[(table.factor == factor) & (table.direction == direction) & (table.term == term)]
    return hit.iloc[0] if len(hit) else None


def test_ora_finds_planted_sets_by_direction_and_survives_h5ad(tmp_path):
    adata = planted_adata()
    scsparse.tl.enrich(adata, planted_sets(), key=KEY, min_size=3)
    table = adata.uns[f"{KEY}_enrichment"]
    up = _row(table, "factor_0", "positive", "PLANTED_UP")
    down = _row(table, "factor_0", "negative", "PLANTED_DOWN")
    f1 = _row(table, "factor_1", "positive", "FACTOR1_SET")
    assert up is not None and down is not None and f1 is not None
    assert up["overlap"] == 10 and up["set_size"] == 10 and up["programme_size"] == 10
    assert up["p_adj"] < 1e-6 and down["p_adj"] < 1e-6 and f1["p_adj"] < 1e-6
    assert up["genes"].split(";")[0] == "UP0"  # listed by decreasing |w|, in the data's case
    # the direction comes from the data, not from the (opposite) sign of W
    assert _row(table, "factor_0", "negative", "PLANTED_UP") is None
    assert _row(table, "factor_0", "positive", "PLANTED_DOWN") is None
    assert "TOO_SMALL" not in set(table.term)  # 2 genes < min_size
    assert (table["p_adj"] >= table["p"] - 1e-12).all() and (table["p_adj_all"] >= table["p_adj"] - 1e-12).all()
    assert set(table["method"]) == {"ora"} and set(table["library"]) == {"custom"}

    # hypergeometric p-value: 10 of 10 set genes among a 10-gene programme out of 80 genes
    from scipy.stats import hypergeom

    assert up["p"] == pytest.approx(hypergeom.sf(9, len(GENES), 10, 10), rel=1e-9)

    stored = adata.uns[f"{KEY}_enrichment"]
    adata.write_h5ad(tmp_path / "r.h5ad")
    back = ad.read_h5ad(tmp_path / "r.h5ad").uns[f"{KEY}_enrichment"]
    assert isinstance(back, pd.DataFrame)
    pd.testing.assert_frame_equal(
        back.reset_index(drop=True), stored.reset_index(drop=True), check_dtype=False, check_index_type=False
    )


def test_ora_agrees_with_gseapy_enrich():
    gseapy = pytest.importorskip("gseapy")
    adata = planted_adata()
    sets = {"PLANTED_UP": UP[:6] + DN[:2] + NOISE[:4], "OTHER": F1 + NOISE[4:8]}
    scsparse.tl.enrich(adata, sets, key=KEY, factors=["factor_0"], direction="positive", min_size=3)
    table = adata.uns[f"{KEY}_enrichment"]
    ours = table.set_index("term")["p"]
    ref = gseapy.enrich(gene_list=UP, gene_sets=sets, background=GENES, outdir=None, no_plot=True).results
    ref = ref.set_index("Term")["P-value"]
    assert ours["PLANTED_UP"] == pytest.approx(float(ref["PLANTED_UP"]), rel=1e-6)


def test_direction_option_n_top_and_copy():
    adata = planted_adata()
    scsparse.tl.enrich(adata, planted_sets(), key=KEY, direction="positive", min_size=3)
    pos = adata.uns[f"{KEY}_enrichment"]
    assert set(pos.direction) == {"positive"}
    scsparse.tl.enrich(adata, planted_sets(), key=KEY, direction="negative", min_size=3, factors=[0])
    neg = adata.uns[f"{KEY}_enrichment"]
    assert set(neg.direction) == {"negative"} and set(neg.factor) == {"factor_0"}
    assert _row(neg, "factor_0", "negative", "PLANTED_DOWN")["p_adj"] < 1e-6

    scsparse.tl.enrich(adata, planted_sets(), key=KEY, n_top=4, min_size=3, key_added="top4")
    top = adata.uns["top4"]
    assert (top["programme_size"] <= 4).all() and "top4" in adata.uns
    assert _row(top, "factor_0", "positive", "PLANTED_UP")["genes"] == "UP0;UP1;UP2;UP3"

    # scanpy's convention: in place and None, or a copy holding the table
    before = set(adata.uns)
    copied = scsparse.tl.enrich(adata, planted_sets(), key=KEY, min_size=3, key_added="c", copy=True)
    assert isinstance(copied, ad.AnnData) and copied is not adata
    assert len(copied.uns["c"]) and set(adata.uns) == before
    assert scsparse.tl.enrich(adata, planted_sets(), key=KEY, min_size=3, key_added="d") is None
    pd.testing.assert_frame_equal(adata.uns["d"], copied.uns["c"])
    with pytest.raises(scsparse.model.InvalidInputError, match="key_added"):
        scsparse.tl.enrich(adata, planted_sets(), key=KEY, min_size=3, key_added="")


def test_not_sparse_falls_back_to_top_genes():
    # every gene passes the p* threshold (W not sparse yet): the programme is the 50 genes with largest |w|
    adata = planted_adata(sparse_w=False)
    scsparse.tl.enrich(adata, planted_sets(), key=KEY, min_size=3, max_size=40)
    table = adata.uns[f"{KEY}_enrichment"]
    assert table["selection"].str.startswith(f"top {scsparse.tl.DEFAULT_N_TOP} by |w|").all()
    assert (table["programme_size"] <= scsparse.tl.DEFAULT_N_TOP).all()
    # about half of the 80 genes go each way, so the 50 "top" genes are all of them: weaker, still significant
    assert _row(table, "factor_0", "positive", "PLANTED_UP")["overlap"] == 10
    assert _row(table, "factor_0", "positive", "PLANTED_UP")["p_adj"] < 0.05
    assert _row(table, "factor_0", "negative", "PLANTED_DOWN")["p_adj"] < 0.05
    # with max_size above the number of genes, the whole thresholded list is used
    scsparse.tl.enrich(adata, planted_sets(), key=KEY, min_size=3, max_size=500)
    table = adata.uns[f"{KEY}_enrichment"]
    assert set(table["selection"]) == {"p* > 0.5"}


def test_prerank_directions():
    pytest.importorskip("gseapy")
    adata = planted_adata()
    scsparse.tl.enrich(
        adata, planted_sets(), key=KEY, method="prerank", min_size=3, permutation_num=200, factors=["factor_0"]
    )
    table = adata.uns[f"{KEY}_enrichment"]
    up = _row(table, "factor_0", "positive", "PLANTED_UP")
    down = _row(table, "factor_0", "negative", "PLANTED_DOWN")
    assert up is not None and down is not None
    assert up["nes"] > 0 and down["nes"] < 0
    assert up["p_adj"] < 0.05 and down["p_adj"] < 0.05
    assert up["p"] >= 1 / 201  # permutation p-values are floored at 1 / (permutation_num + 1)
    assert {"es", "nes", "fdr_gsea"} <= set(table.columns)


def test_errors(tmp_path):
    adata = planted_adata()
    with pytest.raises(MissingResultsError, match="No sparse VAE results under key='nope'"):
        scsparse.tl.enrich(adata, planted_sets(), key="nope")
    with pytest.raises(KeyError):
        scsparse.tl.enrich(adata, planted_sets(), key="nope")

    with pytest.raises(GeneSetError, match="No gene of any of the 2 gene sets"):
        scsparse.tl.enrich(adata, {"A": ["XX1", "XX2"], "B": ["YY1"]}, key=KEY)

    ens = adata.copy()
    ens.var_names = [f"ENSG{i:011d}" for i in range(ens.n_vars)]
    with pytest.raises(GeneSetError, match="Ensembl"):
        scsparse.tl.enrich(ens, planted_sets(), key=KEY)
    # ... fixed by pointing at a column of symbols
    ens.var["symbol"] = GENES
    scsparse.tl.enrich(ens, planted_sets(), key=KEY, gene_symbols="symbol", min_size=3)
    ok = ens.uns[f"{KEY}_enrichment"]
    assert _row(ok, "factor_0", "positive", "PLANTED_UP") is not None

    bad = tmp_path / "bad.gmt"
    bad.write_text("SET_A\tdesc\tUP0\tUP1\nSET_B\tonly a description\n")
    with pytest.raises(GeneSetError, match=r"line 2: not a GMT record"):
        scsparse.tl.enrich(adata, bad, key=KEY)
    bad.write_text("UP0 UP1 UP2\n")  # spaces instead of tabs
    with pytest.raises(GeneSetError, match="line 1"):
        scsparse.tl.read_gmt(bad)

    with pytest.raises(GeneSetError, match="Unknown gene-set library 'hallmarks_humn'"):
        scsparse.tl.enrich(adata, "hallmarks_humn", key=KEY)
    with pytest.raises(FileNotFoundError, match="missing.gmt"):
        scsparse.tl.enrich(adata, str(tmp_path / "missing.gmt"), key=KEY)
    with pytest.raises(GeneSetError, match="min_size"):
        scsparse.tl.enrich(adata, planted_sets(), key=KEY, min_size=30)
    with pytest.raises(ValueError, match="method"):
        scsparse.tl.enrich(adata, planted_sets(), key=KEY, method="gsea")
    with pytest.raises(ValueError, match="direction"):
        scsparse.tl.enrich(adata, planted_sets(), key=KEY, direction="up")

    inactive = planted_adata()
    inactive.uns[KEY]["active_factors"] = np.asarray([], dtype=object)
    with pytest.raises(ValueError, match="No active factor"):
        scsparse.tl.enrich(inactive, planted_sets(), key=KEY)


def test_read_gmt_formats(tmp_path):
    text = "S1\thttp://x\tA\tB\tB\n\n# a comment\nS2\t\tC\tD\t\nS1\t\tE\n"
    plain = tmp_path / "s.gmt"
    plain.write_text(text)
    expected = {"S1": ["A", "B", "E"], "S2": ["C", "D"]}
    assert scsparse.tl.read_gmt(plain) == expected
    with gzip.open(tmp_path / "s.gmt.gz", "wt") as fh:
        fh.write(text)
    assert scsparse.tl.load_gene_sets(tmp_path / "s.gmt.gz") == expected
    with zipfile.ZipFile(tmp_path / "s.gmt.zip", "w") as zf:
        zf.writestr("inner.gmt", text)
    assert scsparse.tl.load_gene_sets(str(tmp_path / "s.gmt.zip")) == expected
    with pytest.raises(GeneSetError, match="single string"):
        scsparse.tl.load_gene_sets({"A": "UP0"})


def test_marker_tables(tmp_path):
    panglao = tmp_path / "panglao.tsv"
    pd.DataFrame(
        {
            "species": ["Mm Hs", "Mm", "Hs", "Mm Hs"],
            "official gene symbol": ["UP0", "UP1", "UP2", "DN0"],
            "cell type": ["T cells", "T cells", "T cells", "B cells"],
            "canonical marker": ["1", "0", "1", "1"],
            "organ": ["Immune system"] * 4,
        }
    ).to_csv(panglao, sep="\t", index=False)
    assert scsparse.tl.read_panglaodb(panglao) == {"B cells": ["DN0"], "T cells": ["UP0", "UP1", "UP2"]}
    assert scsparse.tl.read_panglaodb(panglao, species="mouse")["T cells"] == ["UP0", "UP1"]
    assert scsparse.tl.load_gene_sets(panglao, species="human")["T cells"] == ["UP0", "UP2"]
    assert scsparse.tl.read_panglaodb(panglao, canonical_only=True)["T cells"] == ["UP0", "UP2"]

    cm = tmp_path / "cellmarker.csv"
    pd.DataFrame({"Tissue": ["Brain", "Blood"], "CT": ["Neuron", "Neuron"], "Gene": ["Up0,Up1", "Up2"]}).to_csv(
        cm, index=False
    )
    assert scsparse.tl.load_gene_sets(cm) == {"Neuron": ["Up0", "Up1", "Up2"]}
    assert set(scsparse.tl.read_cellmarker(cm, by_tissue=True)) == {"Neuron (Brain)", "Neuron (Blood)"}


def test_packaged_hallmark_without_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SCSPARSE_DATA_DIR", str(tmp_path))  # empty: the packaged copy is used, no download
    monkeypatch.setenv("SCSPARSE_OFFLINE", "1")
    sets = scsparse.tl.load_gene_sets("hallmark_human")
    assert len(sets) == 50 and "ISG15" in sets["HALLMARK_INTERFERON_ALPHA_RESPONSE"]
    assert scsparse.tl.load_gene_sets("HALLMARK") == sets  # case-insensitive name, alias
    with pytest.raises(GeneSetError, match="not available"):
        scsparse.tl.load_gene_sets("hallmark_mouse")  # not shipped and not downloadable offline


@pytest.mark.parametrize("name", ["panglaodb_mouse", "go_bp_mouse", "cellmarker_mouse", "hallmark_v7"])
def test_registry_libraries(name):
    from scsparse.data import data_dir

    rel = scsparse.tl.GENE_SET_LIBRARIES[name][1]
    if not (data_dir() / rel).is_file():
        pytest.skip(f"{rel} not in SCSPARSE_DATA_DIR")
    sets = scsparse.tl.load_gene_sets(name)
    assert len(sets) > 10
    if name == "go_bp_mouse":  # upper-case symbols from a zipped GMT: matched case-insensitively
        genes = {g for v in sets.values() for g in v}
        assert "AMPD3" in genes


def _bh_by_definition(p: np.ndarray) -> np.ndarray:
    """``min(1, min_{q >= p_i} q m / rank(q))`` over the non-NaN entries, rank(q) = how many entries are <= q."""
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    values = p[ok]
    ranks = np.array([(values <= q).sum() for q in values])
    terms = values * values.size / ranks
    out[ok] = [min(1.0, terms[values >= q].min()) for q in values]
    return out


@pytest.mark.parametrize(
    "p",
    [
        [0.01, 0.04, 0.03, 0.2, 0.5],
        [0.01, 0.01, 0.02, 0.02, 0.5, 0.5, 1.0],  # ties
        [0.02, np.nan, 0.01, np.nan, 0.9],  # NaN kept and not counted
        [np.nan, np.nan],
        [0.0, 0.0, 1.0, 1.0],
        [0.3],
        [],
    ],
)
def test_bh_adjust_is_benjamini_hochberg_with_nan_left_out(p):
    p = np.asarray(p, dtype=float)
    got = scsparse.tl.bh_adjust(p)
    np.testing.assert_allclose(got, _bh_by_definition(p), rtol=1e-12, equal_nan=True)
    assert np.array_equal(np.isnan(got), np.isnan(p))
    assert np.array_equal(scsparse.tl.bh_adjust(list(p)), got, equal_nan=True)  # any iterable


def test_bh_adjust_clips_values_outside_the_unit_interval_and_keeps_the_shape():
    """Outside [0, 1] (an upper tail rounded above 1) the result is that of the values as given, clipped."""
    p = np.array([-0.1, 1.5, 0.2, np.inf, 0.01])
    np.testing.assert_allclose(scsparse.tl.bh_adjust(p), np.clip(_bh_by_definition(p), 0, 1), rtol=1e-12)
    table = np.array([[0.01, 0.2], [np.nan, 0.03]])  # one family of every entry, in the input's shape
    np.testing.assert_allclose(scsparse.tl.bh_adjust(table), [[0.03, 0.2], [np.nan, 0.045]], rtol=1e-12)
