"""One rule names a factor's genes: p* > t, by decreasing |w|; every report of top genes agrees."""

import numpy as np
import pytest

import scsparse
from scsparse.results import rank_genes, read_results


def test_rank_genes_orders_by_abs_loading_among_included_genes():
    w = np.array([0.2, -0.9, 0.5, 0.9, -0.1])
    p = np.array([0.9, 0.8, 0.3, 0.7, 0.6])
    np.testing.assert_array_equal(rank_genes(w, p), [1, 3, 0, 4])  # tie 1/3: the earlier gene first
    np.testing.assert_array_equal(rank_genes(w, p, pip_threshold=0.75), [1, 0])
    np.testing.assert_array_equal(rank_genes(w, p, n_top=2, among=w < 0), [1, 4])
    assert rank_genes(w, p, n_top=0).size == 0
    assert rank_genes(w, np.zeros(5)).size == 0


def test_rank_genes_rejects_misaligned_input():
    with pytest.raises(ValueError, match="aligned"):
        rank_genes(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="n_top"):
        rank_genes(np.ones(3), np.ones(3), n_top=-1)


def test_model_tl_and_pl_report_the_same_top_genes(counts_factory):
    adata = counts_factory(n_obs=150)
    model = scsparse.tl.sparse_vae(
        adata,
        layer="counts",
        n_latent=4,
        max_epochs=2,
        model_kwargs={"n_hidden": 16, "decoder_kwargs": {"w_init": 1.0}},  # active factors after two epochs
        train_kwargs={"batch_size": 64, "enable_progress_bar": False},
    )
    from_model = model.get_top_genes(n_top=5)
    assert from_model, "the fit should leave an active factor"
    table = scsparse.tl.top_genes(adata, n_top=5, direction=False)
    stored = read_results(adata, "sparsevae")
    for factor, genes in from_model.items():
        assert table.loc[table.factor == factor, "gene"].tolist() == genes
        assert stored.programme_genes(factor, 5) == genes
        assert list(adata.uns["sparsevae"]["top_genes"][factor])[:5] == genes
