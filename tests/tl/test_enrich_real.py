"""Must-show checks of issue 4 on real data (slow: each fits a sparse VAE; run with ``pytest -m slow``).

- Zeisel subset (mouse cortex/hippocampus, 3 classes) with the mouse PanglaoDB markers: at least one factor is
  enriched for a marker set of its cell classes with adjusted p < 1e-4, in the direction the factor's activity
  takes in that class.
- Embedded Kang PBMCs with the demo's settings and the Hallmark sets: interferon alpha response at adjusted
  p < 1e-6 for at least one factor, and the table survives ``write_h5ad`` / ``read_h5ad``.
"""

from __future__ import annotations

import anndata as ad
import pandas as pd
import pytest

import scsparse

#: PanglaoDB cell types that mark each Zeisel class.
ZEISEL_MARKER_TERMS = {
    "endothelial-mural": {"Endothelial cells", "Pericytes", "Smooth muscle cells", "Mesangial cells"},
    "interneurons": {"Interneurons", "Neurons", "GABAergic neurons"},
    "pyramidal CA1": {"Pyramidal cells", "Neurons", "Glutaminergic neurons"},
}


def _fit(adata, n_latent: int, max_epochs: int) -> None:
    from scsparse._demo import DEFAULT_LR, DEFAULT_N_HIDDEN

    scsparse.tl.sparse_vae(
        adata,
        layer="counts",
        n_latent=n_latent,
        max_epochs=max_epochs,
        seed=0,
        model_kwargs={"n_hidden": DEFAULT_N_HIDDEN},
        train_kwargs={"batch_size": 128, "lr": DEFAULT_LR, "enable_progress_bar": False},
    )


@pytest.mark.slow
def test_zeisel_factor_enriched_for_its_cell_class_markers(shared_data_module):
    adata = scsparse.data.zeisel_subset()
    adata.layers["counts"] = adata.X.copy()
    _fit(adata, n_latent=10, max_epochs=60)
    scsparse.tl.enrich(adata, "panglaodb_mouse")
    table = adata.uns["sparsevae_enrichment"]
    scsparse.tl.factor_association(adata, "cell_type")
    assoc = adata.uns["sparsevae_association_cell_type"]
    hits = []
    for row in table[table["p_adj"] < 1e-4].itertuples():
        for cls, terms in ZEISEL_MARKER_TERMS.items():
            if row.term not in terms:
                continue
            d = assoc[(assoc.factor == row.factor) & (assoc.group == cls)]["cohens_d"].iloc[0]
            # positive: marker genes go up with the factor, which is higher in that class (and vice versa)
            if (d > 0.5 and row.direction == "positive") or (d < -0.5 and row.direction == "negative"):
                hits.append((row.factor, row.direction, row.term, cls, row.p_adj, d))
    assert hits, table.sort_values("p_adj").head(10).to_string()


@pytest.mark.slow
def test_kang_interferon_alpha_with_demo_settings(shared_data_module, tmp_path):
    from scsparse._demo import DEFAULT_MAX_EPOCHS

    adata = scsparse.data.kang_pbmc()
    _fit(adata, n_latent=20, max_epochs=DEFAULT_MAX_EPOCHS)
    scsparse.tl.enrich(adata, "hallmark_human")
    table = adata.uns["sparsevae_enrichment"]
    ifn = table[(table.term == "HALLMARK_INTERFERON_ALPHA_RESPONSE") & (table.p_adj < 1e-6)]
    assert len(ifn), table.sort_values("p_adj").head(10).to_string()
    adata.write_h5ad(tmp_path / "kang.h5ad")
    back = ad.read_h5ad(tmp_path / "kang.h5ad").uns["sparsevae_enrichment"]
    pd.testing.assert_frame_equal(
        back.reset_index(drop=True), table.reset_index(drop=True), check_dtype=False, check_index_type=False
    )
