"""The traversal's direction on real data (slow: fits a sparse VAE; run with ``pytest -m slow``).

On the embedded Kang PBMCs with the demo's settings, the sign of each top gene's traversal effect
(``model.get_factor_response().effects()``) matches the data-defined direction (the correlation, across cells, of
the gene's normalised expression with the factor) for nearly every top gene, while the sign of ``w_jk`` does not
(README: 273 of 273 genes against 49%).
"""

from __future__ import annotations

import numpy as np
import pytest

import scsparse


@pytest.mark.slow
def test_traversal_direction_matches_the_data_on_kang():
    from scsparse._demo import DEFAULT_LR, DEFAULT_N_HIDDEN

    adata = scsparse.data.kang_pbmc()
    model = scsparse.tl.sparse_vae(
        adata, layer="counts", n_latent=20, max_epochs=60, seed=0, model_kwargs={"n_hidden": DEFAULT_N_HIDDEN},
        train_kwargs={"batch_size": 128, "lr": DEFAULT_LR, "enable_progress_bar": False},
    )  # fmt: skip
    active = list(adata.uns["sparsevae"]["active_factors"])
    assert len(active) >= 5
    top = scsparse.tl.top_genes(adata, n_top=50, factors=active)
    effects = model.get_factor_response(factors=active).effects()
    effect = np.array([effects.at[g, f] for g, f in zip(top["gene"], top["factor"], strict=True)])
    traversal_agrees = np.mean(np.sign(effect) == np.sign(top["correlation"].to_numpy()))
    loading_agrees = np.mean(np.sign(top["loading"].to_numpy()) == np.sign(top["correlation"].to_numpy()))
    assert traversal_agrees >= 0.95, traversal_agrees
    assert loading_agrees < traversal_agrees
