"""tl.top_genes, tl.factor_gene_correlation, tl.factor_association and tl.stability on constructed cases."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import anndata as ad
import numpy as np
import pandas as pd
import pytest

import scsparse
from scsparse.pl import MissingResultsError

_spec = importlib.util.spec_from_file_location("_planted_enrich", Path(__file__).with_name("test_enrich.py"))
planted = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(planted)
KEY = planted.KEY


def test_factor_gene_correlation_matches_numpy():
    adata = planted.planted_adata()
    r = scsparse.tl.factor_gene_correlation(adata, key=KEY)
    assert r.shape == (adata.n_vars, 2) and list(r.columns) == ["factor_0", "factor_1"]
    counts = adata.layers["counts"].toarray().astype(np.float64)
    expr = np.log1p(counts / counts.sum(1, keepdims=True) * 1e4)
    z = adata.obsm[f"X_{KEY}"]
    for j in (0, 15, 25, 70):
        for k in (0, 1):
            assert r.iloc[j, k] == pytest.approx(np.corrcoef(expr[:, j], z[:, k])[0, 1], abs=1e-9)
    assert (r.iloc[:10, 0] > 0.3).all() and (r.iloc[10:20, 0] < -0.3).all()
    # data that are not counts are used as stored (here: X holds the log-normalised values, no layer recorded)
    adata.X = expr
    del adata.uns[KEY]["setup_args"]
    r2 = scsparse.tl.factor_gene_correlation(adata, key=KEY)
    np.testing.assert_allclose(r2.to_numpy(), r.to_numpy(), atol=1e-9)
    with pytest.raises(KeyError, match="missing_layer"):
        scsparse.tl.factor_gene_correlation(adata, key=KEY, layer="missing_layer")


def test_top_genes_table():
    adata = planted.planted_adata()
    tg = scsparse.tl.top_genes(adata, key=KEY, n_top=12)
    f0 = tg[tg.factor == "factor_0"]
    # ranked by |w| among genes with p* > 0.5: UP0 (1.5), DN0 (1.45), UP1, DN1, ...
    assert list(f0.gene[:4]) == ["UP0", "DN0", "UP1", "DN1"]
    assert all(type(g) is str for g in tg.gene)  # plain str, not numpy.str_ (prints as np.str_('UP0') in lists)
    assert list(f0["rank"]) == list(range(1, 13))
    assert (f0.set_index("gene").loc[["UP0", "UP1"], "direction"] == "positive").all()
    assert (f0.set_index("gene").loc[["DN0", "DN1"], "direction"] == "negative").all()
    # the direction is the data's, not the sign of W (planted with the opposite sign)
    assert (f0.set_index("gene").loc[["UP0"], "loading"] < 0).all()
    assert f0.set_index("gene").loc["UP0", "signed_loading"] == pytest.approx(1.5)
    assert f0["anchor"].all() and (f0["pip"] > 0.5).all()
    f1 = tg[tg.factor == "factor_1"]
    assert len(f1) == 10  # only 10 genes pass the threshold
    slim = scsparse.tl.top_genes(adata, key=KEY, n_top=3, factors=["factor_1"], direction=False)
    assert list(slim.columns) == ["factor", "rank", "gene", "loading", "abs_loading", "pip", "anchor"]
    with pytest.raises(MissingResultsError):
        scsparse.tl.top_genes(adata, key="other")


def test_factor_association_values():
    adata = planted.planted_adata()
    scsparse.tl.factor_association(adata, "group", key=KEY)
    table = adata.uns[f"{KEY}_association_group"]
    assert len(table) == 2 * 3 and f"{KEY}_association_group" in adata.uns
    z = adata.obsm[f"X_{KEY}"][:, 0]
    lab = adata.obs["group"].astype(str).to_numpy()
    row = table[(table.factor == "factor_0") & (table.group == "high")].iloc[0]
    a, b = z[lab == "high"], z[lab != "high"]
    pooled = np.sqrt(((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / (a.size + b.size - 2))
    assert row["n_cells"] == a.size
    assert row["mean"] == pytest.approx(a.mean()) and row["mean_rest"] == pytest.approx(b.mean())
    assert row["cohens_d"] == pytest.approx((a.mean() - b.mean()) / pooled)
    assert row["cohens_d"] > 1.5 and row["p_adj"] < 1e-20
    from scipy.stats import kruskal, mannwhitneyu

    assert row["p"] == pytest.approx(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    assert row["kruskal_p"] == pytest.approx(kruskal(*[z[lab == g] for g in ("high", "low", "mid")]).pvalue)
    low = table[(table.factor == "factor_0") & (table.group == "low")].iloc[0]
    assert low["cohens_d"] < -1.5
    # factor_1 is independent of the groups (defined on factor_0)
    f1 = table[table.factor == "factor_1"]
    assert f1["cohens_d"].abs().max() < 0.4 and f1["kruskal_p_adj"].iloc[0] > 0.01
    # sorted by factor, then decreasing effect
    assert list(table[table.factor == "factor_0"].group) == ["high", "mid", "low"]
    with pytest.raises(KeyError, match="nope"):
        scsparse.tl.factor_association(adata, "nope", key=KEY)
    with pytest.raises(KeyError, match=r"'groups' is not a column of adata.obs \(did you mean 'group'\?\)"):
        scsparse.tl.factor_association(adata, "groups", key=KEY)
    adata.obs["one"] = "x"
    with pytest.raises(ValueError, match="at least two"):
        scsparse.tl.factor_association(adata, "one", key=KEY)


def test_tools_that_keep_a_table_follow_scanpy_convention():
    """In place and None, or copy=True returns a copy holding the table; the user's object untouched."""
    adata = planted.planted_adata()
    before = set(adata.uns)
    assert scsparse.tl.factor_association(adata, "group", key=KEY) is None
    assert set(adata.uns) - before == {f"{KEY}_association_group"}
    copied = scsparse.tl.factor_association(adata, "group", key=KEY, key_added="assoc", copy=True)
    assert isinstance(copied, ad.AnnData) and "assoc" not in adata.uns
    pd.testing.assert_frame_equal(copied.uns["assoc"], adata.uns[f"{KEY}_association_group"])

    def factory(seed: int) -> pd.DataFrame:
        return pd.DataFrame(np.random.default_rng(seed).normal(size=(adata.n_vars, 3)), index=adata.var_names)

    table = scsparse.tl.stability(factory, seeds=(0, 1))  # no AnnData to write into: the table is returned
    assert isinstance(table, pd.DataFrame) and len(table) == 3
    assert scsparse.tl.stability(factory, seeds=(0, 1), adata=adata) is None
    pd.testing.assert_frame_equal(adata.uns["sparsevae_stability"], table)
    copied = scsparse.tl.stability(factory, seeds=(0, 1), adata=adata, key_added="stab", copy=True)
    assert "stab" in copied.uns and "stab" not in adata.uns
    calls = []
    with pytest.raises(scsparse.model.InvalidInputError, match="copy=True needs an AnnData"):
        scsparse.tl.stability(lambda s: calls.append(s) or factory(s), seeds=(0, 1), copy=True)
    assert calls == []  # refused before any fit


def test_stability_matches_permuted_factors():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(50, 4))
    genes = [f"g{j}" for j in range(50)]

    def factory(seed: int) -> pd.DataFrame:
        perm = np.random.default_rng(seed).permutation(4)
        noise = np.random.default_rng(100 + seed).normal(scale=0.05, size=base.shape)
        signs = np.where(np.arange(4) % 2 == 0, 1.0, -1.0)  # a factor may flip sign between runs
        return pd.DataFrame((base + noise)[:, perm] * signs, index=genes, columns=[f"factor_{k}" for k in range(4)])

    table = scsparse.tl.stability(factory, seeds=(3, 4, 5))
    assert len(table) == 4 and set(table.factor) == {f"factor_{k}" for k in range(4)}
    assert (table["loadings_corr"] > 0.99).all() and (table["loadings_corr"] <= 1.0).all()
    ref, other = factory(3), factory(4)
    for _, row in table.iterrows():
        matched = other[row["match_seed4"]]
        assert abs(np.corrcoef(ref[row["factor"]], matched)[0, 1]) > 0.99
    assert {"match_seed4", "corr_seed4", "match_seed5", "corr_seed5", "active_fraction", "top_genes"} <= set(table)
    assert "reproducibility" not in table  # that name is the consensus's share of restarts

    # unrelated runs: low loadings_corr
    random = scsparse.tl.stability(lambda s: np.random.default_rng(s).normal(size=(50, 4)), seeds=(0, 1))
    assert (random["loadings_corr"] < 0.6).all()
    with pytest.raises(ValueError, match="at least two seeds"):
        scsparse.tl.stability(factory, seeds=(1,))


def test_stability_fits_tiny_models(counts_factory):
    adata = counts_factory(n_obs=120, n_vars=24)
    train = {"batch_size": 60, "enable_progress_bar": False}

    def factory(seed: int):
        work = adata.copy()
        scsparse.model.SparseVAE.setup_anndata(work, layer="counts")
        model = scsparse.model.SparseVAE(work, n_latent=3, n_hidden=8, seed=seed)
        model.train(max_epochs=2, **train)
        return model

    scsparse.tl.stability(factory, seeds=(0, 1), adata=adata, key="svae")
    table = adata.uns["svae_stability"]
    assert len(table) == 3
    assert table["loadings_corr"].between(0.0, 1.0).all()
    assert table["active_fraction"].between(0.0, 1.0).all()
    assert "svae_stability" in adata.uns

    # the AnnData path fits the models itself and stores the table there
    scsparse.tl.stability(
        adata, seeds=(0, 1), layer="counts", n_latent=3, max_epochs=1, model_kwargs={"n_hidden": 8},
        train_kwargs=train,
    )  # fmt: skip
    table2 = adata.uns["sparsevae_stability"]
    assert len(table2) == 3 and "sparsevae_stability" in adata.uns
    assert table2["loadings_corr"].between(0.0, 1.0).all()
    assert not any(k.startswith("_scvi") for k in adata.uns)
