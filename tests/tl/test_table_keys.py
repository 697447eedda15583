"""A table tool never replaces what it did not write (a fit's record, the user's entry) unless told to."""

from __future__ import annotations

import pandas as pd
import pytest

import scsparse
from scsparse.model import InvalidInputError


@pytest.fixture(scope="module")
def fitted(counts_factory):
    adata = counts_factory(n_obs=120, n_vars=30)
    fast = {"n_hidden": 16, "decoder_kwargs": {"w_init": 1.0}}
    scsparse.tl.sparse_vae(
        adata, layer="counts", n_latent=3, max_epochs=2, model_kwargs=fast,
        train_kwargs={"enable_progress_bar": False, "batch_size": 16},
    )  # fmt: skip
    adata.obs["group"] = ["a", "b", "c"] * 40
    return adata


def _sets(adata):
    return {"first": list(adata.var_names[:8]), "second": list(adata.var_names[8:16])}


@pytest.mark.parametrize(
    "call",
    [
        lambda a, **kw: scsparse.tl.enrich(a, _sets(a), min_size=2, **kw),
        lambda a, **kw: scsparse.tl.factor_association(a, "group", **kw),
    ],
    ids=["enrich", "factor_association"],
)
def test_a_table_tool_refuses_the_fits_key_and_the_users_entry(fitted, call):
    adata = fitted.copy()
    record = adata.uns["sparsevae"]
    with pytest.raises(InvalidInputError, match=r"uns\['sparsevae'\] already holds a fit's record.*overwrite=True"):
        call(adata, key_added="sparsevae")
    assert adata.uns["sparsevae"] is record
    adata.uns["mine"] = {"notes": "kept"}
    with pytest.raises(InvalidInputError, match="a dict this tool did not write"):
        call(adata, key_added="mine")
    call(adata, key_added="mine", overwrite=True)
    assert isinstance(adata.uns["mine"], pd.DataFrame)
    call(adata, key_added="again")
    call(adata, key_added="again")  # its own table, replaced
    with pytest.raises(InvalidInputError, match="contains '/'"):
        call(adata, key_added="a/b")


def test_the_tools_own_table_is_replaced_under_its_default_key(fitted):
    adata = fitted.copy()
    scsparse.tl.enrich(adata, _sets(adata), min_size=2)
    scsparse.tl.enrich(adata, _sets(adata), min_size=2, method="prerank", permutation_num=20)
    assert adata.uns["sparsevae_enrichment"]["method"].eq("prerank").all()


def test_stability_refuses_the_fits_key_before_fitting(fitted):
    adata = fitted.copy()
    calls = []

    def factory(seed):
        calls.append(seed)
        raise AssertionError("no fit should start")

    with pytest.raises(InvalidInputError, match="a fit's record"):
        scsparse.tl.stability(factory, seeds=(0, 1), adata=adata, key_added="sparsevae")
    assert calls == []


def test_stability_refuses_float_seeds(fitted):
    with pytest.raises(InvalidInputError, match="seed must be a whole number"):
        scsparse.tl.stability(lambda s: None, seeds=(0.5, 1.7))


def test_the_enrich_docstring_names_the_plot_that_reads_the_table():
    doc = scsparse.tl.enrich.__doc__
    assert ":func:`scsparse.pl.enrichment_dotplot`" in doc
    assert hasattr(scsparse.pl, "enrichment_dotplot") and not hasattr(scsparse.pl, "enrichment")
