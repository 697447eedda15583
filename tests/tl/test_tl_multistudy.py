"""tl.enrich, tl.top_genes, tl.factor_gene_correlation and tl.factor_association on multi-study results.

``planted_multistudy`` is a hand-written MultiStudySparseVAE result (no training) whose study-specific programme
goes *up* with its factor within its own study but would look *down* over all cells (the factor is zero in the
other study, where the genes are high): the tests fail if a specific factor's direction were computed over all
cells. The last tests use a tiny trained MultiStudySparseVAE for the layout ``write_results`` really writes.
"""

from __future__ import annotations

import anndata as ad
import matplotlib
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import scsparse

matplotlib.use("Agg")

KEY = "ms"
SHARED = [f"SH{i}" for i in range(10)]
STIM = [f"ST{i}" for i in range(10)]
NOISE = [f"NZ{i}" for i in range(40)]
GENES = SHARED + STIM + NOISE


def planted_multistudy(n_per_study: int = 200, seed: int = 0) -> ad.AnnData:
    """Studies ``ctrl`` and ``stim lab`` (varm key ``stim_lab``): one shared and one specific programme."""
    rng = np.random.default_rng(seed)
    n = 2 * n_per_study
    study = np.repeat(["ctrl", "stim lab"], n_per_study)
    in_b = study == "stim lab"
    shared = rng.normal(size=n)
    spec_b = np.where(in_b, rng.normal(2.0, 1.0, size=n), 0.0)
    log_rate = np.full((n, len(GENES)), 1.5)
    log_rate[:, :10] += 0.9 * shared[:, None]
    # ST genes: high in ctrl (where the specific factor is 0), in 'stim lab' low but rising with its factor
    log_rate[:, 10:20] = np.where(in_b[:, None], 0.3 + 0.9 * (spec_b[:, None] - 2.0), 3.0)
    counts = rng.poisson(np.exp(log_rate)).astype(np.float32)
    adata = ad.AnnData(sp.csr_matrix(counts))
    adata.obs_names = [f"c{i}" for i in range(n)]
    adata.var_names = GENES
    adata.layers["counts"] = adata.X.copy()
    adata.obs["study"] = pd.Categorical(study)
    adata.obs["group"] = pd.Categorical(np.where(rng.random(n) < 0.5, "g1", "g2"))
    adata.obs.loc[in_b & (spec_b > 2.0), "group"] = "g1"  # in 'stim lab' the specific factor is higher in g1

    G = len(GENES)
    w_shared = np.full((G, 1), 0.01)
    w_shared[:10, 0] = np.linspace(1.4, 1.0, 10)
    w_ctrl = np.full((G, 1), 0.01)  # inactive
    w_stim = np.full((G, 1), 0.01)
    w_stim[10:20, 0] = -np.linspace(1.3, 0.9, 10)  # sign opposite to the direction, on purpose
    pip = [np.where(np.abs(w) > 0.5, 0.99, 0.01) for w in (w_shared, w_ctrl, w_stim)]
    adata.obsm[f"X_{KEY}_shared"] = shared[:, None]
    adata.obsm[f"X_{KEY}_specific"] = np.column_stack([np.zeros(n), spec_b])
    for name, w, p in zip(("shared", "ctrl", "stim_lab"), (w_shared, w_ctrl, w_stim), pip, strict=True):
        adata.varm[f"{KEY}_W_{name}"] = w
        adata.varm[f"{KEY}_pip_{name}"] = p
    names = ["shared_0", "ctrl_0", "stim lab_0"]
    adata.uns[KEY] = {
        "studies": np.asarray(["ctrl", "stim lab"], dtype=object),
        "study_keys": {"ctrl": "ctrl", "stim lab": "stim_lab"},
        "factor_names": np.asarray(names, dtype=object),
        "shared_factors": np.asarray(names[:1], dtype=object),
        "specific_factors": np.asarray(names[1:], dtype=object),
        "active": np.asarray([True, False, True]),
        "active_factors": np.asarray(["shared_0", "stim lab_0"], dtype=object),
        "eta": np.asarray([0.2, 0.01, 0.2]),
        "pip_threshold": 0.5,
        "top_genes": {
            "shared_0": np.asarray(SHARED[:5], dtype=object),
            "stim lab_0": np.asarray(STIM[:5], dtype=object),
        },
        "anchor_genes": {"shared_0": np.asarray(SHARED, dtype=object), "stim lab_0": np.asarray(STIM, dtype=object)},
        "setup_args": {"layer": "counts", "study_key": "study"},
    }
    return adata


def _sets() -> dict[str, list[str]]:
    return {"SHARED_SET": SHARED, "STIM_SET": [g.lower() for g in STIM], "NOISE_SET": NOISE[:10]}


def _expr(adata: ad.AnnData) -> np.ndarray:
    counts = adata.layers["counts"].toarray().astype(np.float64)
    return np.log1p(counts / counts.sum(1, keepdims=True) * 1e4)


def test_specific_direction_is_computed_within_the_study():
    adata = planted_multistudy()
    r = scsparse.tl.factor_gene_correlation(adata, key=KEY)
    assert list(r.columns) == ["shared_0", "ctrl_0", "stim lab_0"]
    expr, in_b = _expr(adata), (adata.obs["study"] == "stim lab").to_numpy()
    z_b = adata.obsm[f"X_{KEY}_specific"][:, 1]
    for j in (10, 15):
        assert r.iloc[j, 2] == pytest.approx(np.corrcoef(expr[in_b, j], z_b[in_b])[0, 1], abs=1e-9)
        assert r.iloc[j, 2] > 0.3 and np.corrcoef(expr[:, j], z_b)[0, 1] < -0.3  # all cells would say "down"
    z_s = adata.obsm[f"X_{KEY}_shared"][:, 0]
    assert r.iloc[0, 0] == pytest.approx(np.corrcoef(expr[:, 0], z_s)[0, 1], abs=1e-9)
    assert (r["ctrl_0"] == 0).all()  # constant (zero) factor in its study: no direction
    # the study column gone: study membership comes from the non-zero specific blocks (here only 'stim lab')
    del adata.obs["study"]
    np.testing.assert_allclose(scsparse.tl.factor_gene_correlation(adata, key=KEY)["stim lab_0"], r["stim lab_0"])


def test_enrich_tests_shared_and_specific_factors(tmp_path):
    adata = planted_multistudy()
    scsparse.tl.enrich(adata, _sets(), key=KEY, min_size=3)
    table = adata.uns[f"{KEY}_enrichment"]
    assert set(table.factor) == {"shared_0", "stim lab_0"}  # the active factors, named as in the factor table
    hit = table[(table.factor == "stim lab_0") & (table.term == "STIM_SET")]
    assert list(hit.direction) == ["positive"] and hit.iloc[0]["p_adj"] < 1e-6 and hit.iloc[0]["overlap"] == 10
    shared = table[(table.factor == "shared_0") & (table.term == "SHARED_SET")]
    assert list(shared.direction) == ["positive"] and shared.iloc[0]["p_adj"] < 1e-6
    assert "STIM_SET" not in set(table.loc[table.factor == "shared_0", "term"])
    adata.write_h5ad(tmp_path / "ms.h5ad")
    back = ad.read_h5ad(tmp_path / "ms.h5ad")
    assert len(back.uns[f"{KEY}_enrichment"]) == len(table)
    scsparse.tl.enrich(back, _sets(), key=KEY, min_size=3, factors=["stim lab_0"])
    again = back.uns[f"{KEY}_enrichment"]
    assert again.iloc[0]["term"] == "STIM_SET"


def test_top_genes_and_association_use_the_study_cells():
    adata = planted_multistudy()
    tg = scsparse.tl.top_genes(adata, key=KEY, n_top=3)
    spec = tg[tg.factor == "stim lab_0"]
    assert list(spec.gene) == ["ST0", "ST1", "ST2"] and (spec.direction == "positive").all()
    assert (spec.loading < 0).all()  # the direction is the data's, not the sign of W

    with pytest.warns(UserWarning, match="stim lab_0 not tested"):
        scsparse.tl.factor_association(adata, "study", key=KEY, factors=["shared_0", "stim lab_0"])
        by_study = adata.uns[f"{KEY}_association_study"]
    assert set(by_study.factor) == {"shared_0"}
    scsparse.tl.factor_association(adata, "group", key=KEY)
    assoc = adata.uns[f"{KEY}_association_group"]
    row = assoc[(assoc.factor == "stim lab_0") & (assoc.group == "g1")].iloc[0]
    in_b = (adata.obs["study"] == "stim lab").to_numpy()
    assert row["cells"] == "study stim lab" and row["n_cells"] == int((in_b & (adata.obs.group == "g1")).sum())
    assert row["cohens_d"] > 0.5 and row["p_adj"] < 1e-6
    assert set(assoc.loc[assoc.factor == "shared_0", "cells"]) == {"all"}
    with pytest.raises(ValueError, match="single group"):
        scsparse.tl.factor_association(adata, "study", key=KEY, factors=["stim lab_0"])


def test_fit_report_describes_shared_and_specific_factors():
    adata = planted_multistudy()
    scsparse.tl.enrich(adata, _sets(), key=KEY, min_size=3)
    table = adata.uns[f"{KEY}_enrichment"]
    report = scsparse.tl.fit_report(adata, key=KEY, groupby="group", enrichment=table)
    assert "- active factors: 2 of" in report
    lines = [line for line in report.splitlines() if line.startswith("- **")]
    assert [line.split("**")[1] for line in lines] == ["shared_0", "stim lab_0"]
    assert "genes up with it: ST0, ST1" in lines[1] and "STIM SET (up, 10 genes" in lines[1]
    assert "| stim lab_0 |" in report and "`group_highest` / `group_lowest`" in report


def test_plots_read_multistudy_results(tmp_path):
    import matplotlib.pyplot as plt

    adata = planted_multistudy()
    scsparse.tl.enrich(adata, _sets(), key=KEY, min_size=3)
    ax = scsparse.pl.loadings_heatmap(adata, key=KEY, show=False)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["shared_0", "stim lab_0"]
    directed = scsparse.pl.loadings_heatmap(adata, key=KEY, use="directed", show=False).images[0].get_array()
    undirected = ax.images[0].get_array()
    np.testing.assert_allclose(np.abs(directed), np.abs(undirected))  # same |W|, signed by direction
    plt.close("all")
    axes = scsparse.pl.factor_activity(adata, "group", key=KEY, show=False)
    assert len(axes) == 2
    scsparse.pl.enrichment_dotplot(adata, key=KEY, show=False, save=tmp_path / "dot.png")
    assert (tmp_path / "dot.png").stat().st_size > 0
    plt.close("all")


@pytest.fixture(scope="module")
def trained_mssvae():
    from scsparse.model import MultiStudySparseVAE

    rng = np.random.default_rng(0)
    n, G = 240, 30
    z = rng.normal(size=(n, 3))
    owner = np.arange(G) % 3
    counts = rng.poisson(np.exp(1.0 + 0.8 * z[:, owner])).astype(np.float32)
    adata = ad.AnnData(sp.csr_matrix(counts))
    adata.obs_names = [f"cell{i}" for i in range(n)]
    adata.var_names = [f"gene{j}" for j in range(G)]
    adata.layers["counts"] = adata.X.copy()
    adata.obs["study"] = np.where(np.arange(n) % 2 == 0, "lab A", "lab-B")
    adata.obs["cell_type"] = np.where(z[:, 0] > 0, "t1", "t2")
    MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts")
    model = MultiStudySparseVAE(adata, n_hidden=16, n_latent_shared=3, n_latent_specific=2, seed=0)
    model.train(max_epochs=3, batch_size=64, enable_progress_bar=False)
    model.write_results(adata, key_added="mssvae")
    return adata, model


def test_trained_model_layout(trained_mssvae, tmp_path):
    adata, model = trained_mssvae
    table = model.factor_table()
    names = list(table.factor)
    r = scsparse.tl.factor_gene_correlation(adata, key="mssvae")
    assert list(r.columns) == names
    # a specific factor of 'lab A' is correlated within 'lab A' cells only
    in_a = (adata.obs["study"] == "lab A").to_numpy()
    k = names.index("lab A_0")
    z = adata.obsm["X_mssvae_specific"][:, 0]
    expr = _expr(adata)
    assert r.iloc[3, k] == pytest.approx(np.corrcoef(expr[in_a, 3], z[in_a])[0, 1], abs=1e-9)

    # enrichment of every factor (shared and specific): each factor's 5 genes with largest |w| going up with it
    # (p* > 0: an inactive column can have p* that underflows to 0)
    W, P = model.get_loadings(), model.get_inclusion_probabilities()  # every factor, shared and specific
    assert list(W.columns) == names == list(P.columns)
    sets = {}
    for f in names:
        w = W[f].abs()[(r[f] > 0) & (P[f] > 0)].sort_values(ascending=False, kind="stable")
        if len(w) >= 5:
            sets[f"SET_{f}"] = list(w.index[:5])
    tested = [t.removeprefix("SET_") for t in sets]
    assert {"shared_0", "lab A_0", "lab-B_0"} <= set(tested)
    scsparse.tl.enrich(
        adata, sets, key="mssvae", factors=tested, min_size=3, direction="positive", pip_threshold=0.0, n_top=5
    )
    res = adata.uns["mssvae_enrichment"]
    assert set(res.factor) == set(tested)
    for f in tested:
        row = res[(res.factor == f) & (res.term == f"SET_{f}")].iloc[0]
        assert row["overlap"] == 5 and row["programme_size"] == 5 and row["genes"] == ";".join(sets[f"SET_{f}"])
    tg = scsparse.tl.top_genes(adata, key="mssvae", factors=names, n_top=3)
    assert set(tg.factor) <= set(names)
    adata.write_h5ad(tmp_path / "t.h5ad")
    assert "mssvae_enrichment" in ad.read_h5ad(tmp_path / "t.h5ad").uns


def test_stability_of_a_multistudy_model_covers_specific_factors(trained_mssvae):
    adata, model = trained_mssvae

    class Shifted:
        """The trained model with noise on its loadings: a stand-in for another seed (same API)."""

        def __init__(self, seed):
            self.rng = np.random.default_rng(seed)

        def get_loadings(self, study=None):
            W = model.get_loadings(study)
            return W + (0.0 if self.seed0 else 0.01) * self.rng.normal(size=W.shape)

        def active_factors(self):
            return model.active_factors()

    def factory(seed):
        fitted = Shifted(seed)
        fitted.seed0 = seed == 0
        return fitted

    table = scsparse.tl.stability(factory, seeds=(0, 1))
    assert set(table.factor) == set(model.factor_names)  # shared and every study's specific factors
    assert (table["match_seed1"] == table["factor"]).all() and (table["loadings_corr"] > 0.9).all()
