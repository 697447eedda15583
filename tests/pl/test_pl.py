from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import anndata as ad  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

import scsparse  # noqa: E402
from scsparse import pl  # noqa: E402


@pytest.fixture
def fitted(counts_factory) -> ad.AnnData:
    adata = counts_factory(n_obs=150)
    adata.obs["group"] = pd.Categorical(np.where(np.arange(adata.n_obs) % 3 == 0, "x", "y"))
    scsparse.tl.sparse_vae(
        adata,
        layer="counts",
        n_latent=4,
        max_epochs=2,
        # W starts deep in the slab so that two epochs leave active factors to plot (the plots, not the
        # prior's selection, are under test here)
        model_kwargs={"n_hidden": 16, "decoder_kwargs": {"w_init": 1.0}},
        train_kwargs={"batch_size": 64, "enable_progress_bar": False},
    )
    # a stand-in 2-d embedding (a real UMAP is not needed to test the plot)
    adata.obsm["X_umap"] = np.asarray(adata.obsm["X_sparsevae"])[:, :2].copy()
    return adata


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.mark.parametrize("use", ["W", "pip", "directed"])
def test_loadings_heatmap(fitted, tmp_path, use):
    adata = fitted
    active = list(adata.uns["sparsevae"]["active_factors"])
    assert active, "the tiny fit should keep at least one factor"
    before = set(adata.uns), set(adata.obsm), adata.obs.copy()
    path = tmp_path / f"heat_{use}.png"
    ax = pl.loadings_heatmap(adata, n_top_genes=3, use=use, show=False, save=path)
    assert isinstance(ax, matplotlib.axes.Axes)
    assert path.stat().st_size > 1000
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert 1 <= len(labels) <= 3 * len(active)
    assert len(set(labels)) == len(labels)
    assert set(labels) <= set(adata.var_names)
    assert [t.get_text() for t in ax.get_xticklabels()] == [f.replace("factor_", "") for f in active]
    # the plot does not modify the AnnData
    assert (set(adata.uns), set(adata.obsm)) == before[:2]
    pd.testing.assert_frame_equal(adata.obs, before[2])


def test_directed_heatmap_signs_each_loading_by_the_gene_direction(fitted):
    active = list(fitted.uns["sparsevae"]["active_factors"])
    ax = pl.loadings_heatmap(fitted, n_top_genes=3, use="directed", show=False)
    shown = ax.images[0].get_array()
    genes = [t.get_text() for t in ax.get_yticklabels()]
    rows, cols = (
        fitted.var_names.get_indexer(genes),
        [list(fitted.uns["sparsevae"]["factor_names"]).index(f) for f in active],
    )
    W = fitted.varm["sparsevae_W"][np.ix_(rows, cols)]
    r = scsparse.tl.factor_gene_correlation(fitted).loc[genes, active].to_numpy()
    np.testing.assert_allclose(np.asarray(shown), np.abs(W) * np.sign(r), rtol=1e-6)
    assert "up with the factor" in ax.get_title()
    plt.close(ax.figure)


def test_loadings_heatmap_factor_selection_and_ax(fitted):
    fig, ax = plt.subplots()
    out = pl.loadings_heatmap(fitted, factors=[0], n_top_genes=2, pip_threshold=0.0, ax=ax, show=False)
    assert out is ax
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0"]
    assert len(ax.get_yticklabels()) == 2
    with pytest.raises(ValueError, match="Unknown factor"):
        pl.loadings_heatmap(fitted, factors=["factor_99"], show=False)
    with pytest.raises(ValueError, match="use"):
        pl.loadings_heatmap(fitted, use="Z", show=False)


def test_factor_embedding(fitted, tmp_path):
    adata = fitted
    n_active = len(adata.uns["sparsevae"]["active_factors"])
    path = tmp_path / "umap.png"
    axes = pl.factor_embedding(adata, color_extra=["group", "gene0"], ncols=2, show=False, save=path)
    assert isinstance(axes, list) and len(axes) == n_active + 2
    assert path.stat().st_size > 1000
    assert axes[0].get_title().startswith(str(adata.uns["sparsevae"]["active_factors"][0]))
    assert "__factor__factor_0" not in adata.obs.columns
    fig, ax = plt.subplots()
    single = pl.factor_embedding(adata, factors=["factor_1"], ax=ax, show=False)
    assert single is ax
    only_extra = pl.factor_embedding(adata, factors=[], color_extra="group", show=False)
    assert isinstance(only_extra, matplotlib.axes.Axes)


def test_clear_errors(fitted, counts_factory):
    bare = counts_factory(n_obs=150)
    with pytest.raises(KeyError, match=r"tl\.sparse_vae"):
        pl.loadings_heatmap(bare, show=False)
    with pytest.raises(KeyError, match="write_results"):
        pl.factor_embedding(bare, show=False)
    with pytest.raises(KeyError, match="key='other'"):
        pl.loadings_heatmap(fitted, key="other", show=False)
    with pytest.raises(KeyError, match=r"sc\.pp\.neighbors\(adata, use_rep='X_sparsevae'\)") as info:
        pl.factor_embedding(fitted, basis="tsne", show=False)
    assert "sc.tl.umap(adata)" in str(info.value)
    with pytest.raises(KeyError, match="neither"):
        pl.factor_embedding(fitted, color_extra=["not_a_column"], show=False)
    with pytest.raises(ValueError, match="single panel"):
        _, ax = plt.subplots()
        pl.factor_embedding(fitted, ax=ax, show=False)
