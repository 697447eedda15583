import numpy as np
import pandas as pd
import pytest

import scsparse
from scsparse.tl import describe_factors, factor_report


@pytest.fixture(scope="module")
def fitted(counts_factory):
    adata = counts_factory(n_obs=240)
    adata.obs["group"] = np.where(np.arange(240) % 2 == 0, "a", "b")
    adata.obs["cluster"] = pd.Categorical(np.asarray(["x", "y", "z"])[np.arange(240) % 3])
    scsparse.tl.sparse_vae(
        adata,
        layer="counts",
        n_latent=4,
        max_epochs=3,
        model_kwargs={"n_hidden": 16, "decoder_kwargs": {"w_init": 1.0}},  # active factors after a few epochs
        train_kwargs={"batch_size": 64, "enable_progress_bar": False},
    )
    assert len(adata.uns["sparsevae"]["active_factors"]), "the fit should leave an active factor"
    return adata


def test_describe_factors_gathers_genes_gene_sets_and_associations(fitted):
    active = [str(f) for f in fitted.uns["sparsevae"]["active_factors"]]
    top = scsparse.tl.top_genes(fitted, n_top=200)
    factor = active[0]
    enrichment = pd.DataFrame(
        {
            "factor": [factor, factor, factor],
            "direction": ["positive", "positive", "negative"],
            "term": ["HALLMARK_INTERFERON_ALPHA_RESPONSE", "HALLMARK_WEAK", "GOBP_DOWN_SET"],
            "overlap": [5, 2, 3],
            "p_adj": [1e-6, 0.5, 0.01],
        }
    )
    table = describe_factors(fitted, groupby=["group", "cluster"], enrichment=enrichment, n_genes=3, max_p_adj=0.05)
    assert list(table.index) == active
    assert table.attrs == {"max_p_adj": 0.05, "groupby": ["group", "cluster"]}
    for f, row in table.iterrows():
        g = top[top.factor == f]
        assert row["genes_up"] == ", ".join(g.loc[g.direction == "positive", "gene"].head(3))
        assert row["genes_down"] == ", ".join(g.loc[g.direction == "negative", "gene"].head(3))
        k = list(fitted.uns["sparsevae"]["factor_names"]).index(f)
        assert row["n_genes"] == int((fitted.varm["sparsevae_pip"][:, k] > 0.5).sum())
    # the most significant gene sets first, names shortened, the one above max_p_adj left out
    assert table.loc[factor, "gene_sets"] == (
        "INTERFERON ALPHA RESPONSE (up, 5 genes, adj. p 1.0e-06); DOWN SET (down, 3 genes, adj. p 0.010)"
    )
    # associations: the same numbers as factor_association; describe_factors itself stores nothing
    assert not any("association" in k for k in fitted.uns)
    scsparse.tl.factor_association(fitted, "cluster", key_added="cluster_assoc")
    assoc = fitted.uns.pop("cluster_assoc")
    for f, row in table.iterrows():
        rows = assoc[(assoc.factor == f) & (assoc.p_adj <= 0.05)]
        assert row["cluster_n_groups"] == 3 and row["group_n_groups"] == 2
        if len(rows):
            best = rows.loc[rows.cohens_d.idxmax()]
            assert (row["cluster_highest"], row["cluster_highest_d"]) == (best.group, best.cohens_d)
        else:
            assert row["cluster_highest"] == "" and np.isnan(row["cluster_highest_d"])


def test_factor_report_says_it_in_words(fitted):
    table = describe_factors(fitted, groupby="group")
    factor = table.index[0]
    row = table.loc[factor].copy()
    row["group_highest"], row["group_highest_d"], row["group_highest_p_adj"] = "b", 1.234, 0.0
    one = table.loc[[factor]].copy()
    one.loc[factor] = row
    one.attrs = table.attrs
    (line,) = factor_report(one)
    assert line.startswith(f"- **{factor}**: genes up with it: ")
    assert line.endswith("Group: higher in b (Cohen's d +1.23, adj. p < 1e-300).")
    assert "Gene sets" not in line  # no enrichment given
    one["group_highest"] = ""
    assert factor_report(one)[0].endswith("Group: no difference at adj. p <= 0.05.")
