"""Plots of multi-study results with many factors and long study names stay readable (no overlapping labels)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import anndata as ad
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import scsparse

KEY = "mssvae"
STUDIES = ("control", "stimulated")


def _multistudy_result(n_shared: int = 6, n_specific: int = 5, n_genes: int = 120, n_obs: int = 200) -> ad.AnnData:
    """A hand-written MultiStudySparseVAE result: each factor owns 6 genes (long names), every factor active."""
    rng = np.random.default_rng(0)
    study = np.repeat(STUDIES, n_obs // 2)
    counts = rng.poisson(3.0, size=(n_obs, n_genes)).astype(np.float32)
    adata = ad.AnnData(sp.csr_matrix(counts))
    adata.var_names = [f"ENSEMBL-LIKE-LONG-NAME-{j}" for j in range(n_genes)]
    adata.obs_names = [f"c{i}" for i in range(n_obs)]
    adata.layers["counts"] = adata.X.copy()
    adata.obs["condition"] = pd.Categorical(study)
    adata.obs["cell_type"] = pd.Categorical(rng.choice(["CD14 monocytes", "B cells", "NK cells"], n_obs))
    names = [f"shared_{k}" for k in range(n_shared)] + [f"{s}_{k}" for s in STUDIES for k in range(n_specific)]
    K = len(names)
    W = np.full((n_genes, K), 0.01)
    for k in range(K):
        W[(6 * k + np.arange(6)) % n_genes, k] = 1.0 + 0.1 * np.arange(6)
    pip = np.where(W > 0.5, 0.99, 0.01)
    z = rng.normal(size=(n_obs, K))
    for m, s in enumerate(STUDIES):
        cols = slice(n_shared + m * n_specific, n_shared + (m + 1) * n_specific)
        z[study != s, cols] = 0.0
    adata.obsm[f"X_{KEY}_shared"] = z[:, :n_shared]
    adata.obsm[f"X_{KEY}_specific"] = z[:, n_shared:]
    adata.varm[f"{KEY}_W_shared"], adata.varm[f"{KEY}_pip_shared"] = W[:, :n_shared], pip[:, :n_shared]
    for m, s in enumerate(STUDIES):
        cols = slice(n_shared + m * n_specific, n_shared + (m + 1) * n_specific)
        adata.varm[f"{KEY}_W_{s}"], adata.varm[f"{KEY}_pip_{s}"] = W[:, cols], pip[:, cols]
    genes = np.asarray(adata.var_names)
    adata.uns[KEY] = {
        "studies": np.asarray(STUDIES, dtype=object),
        "study_keys": {s: s for s in STUDIES},
        "factor_names": np.asarray(names, dtype=object),
        "shared_factors": np.asarray(names[:n_shared], dtype=object),
        "specific_factors": np.asarray(names[n_shared:], dtype=object),
        "active": np.ones(K, dtype=bool),
        "active_factors": np.asarray(names, dtype=object),
        "eta": np.full(K, 0.05),
        "pip_threshold": 0.5,
        "top_genes": {f: genes[np.argsort(-W[:, k])[:5]].astype(object) for k, f in enumerate(names)},
        "anchor_genes": {},
        "setup_args": {"layer": "counts", "study_key": "condition"},
    }
    return adata


def _overlap(labels) -> bool:
    boxes = [t.get_window_extent() for t in labels if t.get_text()]
    return any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def test_loadings_heatmap_rotates_long_factor_names():
    adata = _multistudy_result()
    ax = scsparse.pl.loadings_heatmap(adata, key=KEY, n_top_genes=3, show=False)
    ax.figure.canvas.draw()
    xlabels = ax.get_xticklabels()
    assert [t.get_text() for t in xlabels][-1] == "stimulated_4"
    assert not _overlap(xlabels) and not _overlap(ax.get_yticklabels())
    assert xlabels[0].get_rotation() == 90
    plt.close("all")


def test_top_genes_activity_and_embedding_on_specific_factors(tmp_path):
    adata = _multistudy_result()
    axes = scsparse.pl.factor_activity(adata, "cell_type", key=KEY, factors=["shared_0", "stimulated_1"], show=False)
    # a specific factor is shown on its study's cells only: 100 stimulated cells in all
    assert len(axes) == 2
    plt.close("all")
    adata.obsm["X_umap"] = np.random.default_rng(1).normal(size=(adata.n_obs, 2))
    axes = scsparse.pl.factor_embedding(adata, key=KEY, factors=["control_0"], show=False)
    # coloured by the factor on the 100 control cells only; the stimulated cells are drawn grey (NaN)
    values = np.concatenate(
        [
            np.ma.filled(np.ma.asarray(c.get_array(), dtype=float), np.nan)
            for c in axes.collections
            if c.get_array() is not None
        ]
    )
    assert np.isfinite(values).sum() == 100
    plt.close("all")
    ax = scsparse.pl.top_genes(adata, key=KEY, factors=["stimulated_0"], n_top=6, show=False)
    ax.figure.canvas.draw()
    assert not _overlap(ax.get_yticklabels())
    plt.close("all")


def test_enrichment_dotplot_of_many_specific_factors():
    adata = _multistudy_result()
    genes = list(adata.var_names)
    sets = {f"SET_{k}_A_RATHER_LONG_GENE_SET_NAME": genes[6 * k : 6 * k + 6] for k in range(16)}
    scsparse.tl.enrich(adata, sets, key=KEY, min_size=3)
    table = adata.uns[f"{KEY}_enrichment"]
    assert {"shared_0", "control_0", "stimulated_4"} <= set(table.factor)
    ax = scsparse.pl.enrichment_dotplot(adata, key=KEY, n_terms=1, show=False)
    ax.figure.canvas.draw()
    assert not _overlap(ax.get_xticklabels()) and not _overlap(ax.get_yticklabels())
    plt.close("all")


@pytest.mark.parametrize("factor", ["control_2", "shared_3"])
def test_association_cells(factor):
    adata = _multistudy_result()
    scsparse.tl.factor_association(adata, "cell_type", key=KEY, factors=[factor])
    table = adata.uns[f"{KEY}_association_cell_type"]
    expected = 200 if factor.startswith("shared") else 100
    assert table["n_cells"].sum() == expected


def test_activity_group_labels_rotate_only_when_needed():
    adata = _multistudy_result()
    axes = scsparse.pl.factor_activity(adata, "condition", key=KEY, factors=["shared_0", "shared_1"], show=False)
    axes[0].figure.canvas.draw()
    labels = axes[0].get_xticklabels()
    assert [t.get_rotation() for t in labels] == [0, 0] and not _overlap(labels)  # "stimulated" fits its slot
    plt.close("all")
    adata.obs["long"] = pd.Categorical([f"a rather long group name {i % 6}" for i in range(adata.n_obs)])
    axes = scsparse.pl.factor_activity(adata, "long", key=KEY, factors=["shared_0", "shared_1"], show=False)
    axes[0].figure.canvas.draw()
    labels = axes[0].get_xticklabels()
    assert all(t.get_rotation() == 90 for t in labels) and not _overlap(labels)
    plt.close("all")
