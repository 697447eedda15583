"""Bad inputs to the models get our own error naming the argument, the value and the fix, and change nothing.

Every failing call is checked against a snapshot of the AnnData taken just before it: ``X``, ``layers``, ``obs``,
``var``, ``obsm``, ``varm`` and ``uns`` are exactly as they were.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from scsparse.model import InvalidInputError, MultiStudySparseVAE, SparseVAE, ZeroGenesWarning

SMALL = {"n_latent": 4, "n_hidden": 16}


# ---------------------------------------------------------------------------------------------------- helpers
def _dense(matrix) -> np.ndarray:
    return matrix.toarray() if sp.issparse(matrix) else np.asarray(matrix)


def _same_value(a, b) -> bool:
    if isinstance(a, pd.DataFrame | pd.Series):
        return isinstance(b, type(a)) and a.equals(b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    if sp.issparse(a) or isinstance(a, np.ndarray):
        return np.array_equal(_dense(a), _dense(b), equal_nan=np.asarray(_dense(a)).dtype.kind == "f")
    return a == b


class Snapshot:
    """Everything a failed call must leave as it was."""

    def __init__(self, adata):
        self.adata = adata
        self.state = self._take(adata)

    @staticmethod
    def _take(adata) -> dict:
        return {
            "X": None if adata.X is None else _dense(adata.X).copy(),
            "layers": {k: _dense(v).copy() for k, v in adata.layers.items()},
            "obs": adata.obs.copy(),
            "var": adata.var.copy(),
            "obsm": {k: np.array(v, copy=True) for k, v in adata.obsm.items()},
            "varm": {k: np.array(v, copy=True) for k, v in adata.varm.items()},
            "uns": {k: v for k, v in adata.uns.items()},
        }

    def assert_unchanged(self) -> None:
        now = self._take(self.adata)
        for part, before in self.state.items():
            assert _same_value(before, now[part]), f"the failed call changed adata.{part}"


def refused(adata, call, error, match):
    """``call()`` raises ``error`` matching ``match`` and leaves ``adata`` exactly as it was."""
    snapshot = Snapshot(adata)
    with pytest.raises(error, match=match):
        call()
    snapshot.assert_unchanged()


@pytest.fixture
def adata(counts_factory):
    return counts_factory(n_obs=120, n_vars=30)


@pytest.fixture
def registered(adata):
    SparseVAE.setup_anndata(adata, layer="counts", labels_key="batch")
    return adata


@pytest.fixture(scope="module")
def trained(counts_factory):
    adata = counts_factory(n_obs=160, n_vars=30)
    SparseVAE.setup_anndata(adata, layer="counts", batch_key="batch")
    model = SparseVAE(adata, seed=0, **SMALL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.train(max_epochs=3, batch_size=32, enable_progress_bar=False)
    return model


# ---------------------------------------------------------------------------------------------------- constructor
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_latent": 0}, r"n_latent must be a whole number >= 1, got 0.*upper bound"),
        ({"n_latent": -3}, r"n_latent must be a whole number >= 1, got -3"),
        ({"n_latent": 2.5}, r"n_latent must be a whole number >= 1, got 2.5"),
        ({"n_latent": True}, r"n_latent must be a whole number >= 1, got True"),
        ({"n_latent": "5"}, r"n_latent must be a whole number >= 1, got '5'"),
        ({"n_hidden": 0}, r"n_hidden must be a whole number >= 1, got 0.*hidden layers"),
        ({"n_layers": 0}, r"n_layers must be a whole number >= 1, got 0"),
        ({"gene_likelihood": "nbb"}, r"gene_likelihood must be one of 'nb'.*got 'nbb' \(did you mean 'nb'\?\)"),
        ({"lambda0": 0.5}, r"lambda0 must be a number > 1, got 0.5.*exceed the slab"),
        ({"lambda1": 0}, r"lambda1 must be a number > 0, got 0"),
        ({"lambda0": float("nan")}, r"lambda0 must be a number > 1, got nan"),
        ({"a": 0}, r"a must be a number > 0, got 0"),
        ({"b": -1.0}, r"b must be a number > 0, got -1.0.*None sets it"),
        ({"dropout_rate": 1.0}, r"dropout_rate must be a number in \[0, 1\), got 1.0"),
        ({"seed": -1}, r"seed must be a whole number >= 0, got -1"),
        ({"max_prior_cells": 0}, r"max_prior_cells must be a whole number >= 1, got 0.*None weighs the prior"),
        ({"max_prior_cells": 1e4}, r"max_prior_cells must be a whole number >= 1, got 10000.0"),
        ({"latent_prior": "corelated"}, r"latent_prior must be one of.*did you mean 'correlated'"),
        ({"mask_init": "svd"}, r"mask_init must be one of 'nmf', 'constant', got 'svd'"),
    ],
)
def test_constructor_refuses_a_bad_argument(registered, kwargs, match):
    refused(registered, lambda: SparseVAE(registered, **kwargs), InvalidInputError, match)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_latent_shared": -1}, r"n_latent_shared must be a whole number >= 0, got -1"),
        ({"n_latent_specific": 2.5}, r"n_latent_specific must be a whole number >= 0, got 2.5"),
        ({"n_latent_specific": {"a": -2}}, r"n_latent_specific\['a'\] must be a whole number >= 0, got -2"),
        ({"n_latent_specific": {"zz": 2}}, r"n_latent_specific names unknown studies \['zz'\]"),
        ({"n_latent_shared": 0, "n_latent_specific": 0}, r"the model has no factor"),
        ({"gene_likelihood": "poison"}, r"gene_likelihood must be one of.*did you mean 'poisson'"),
        ({"max_prior_cells": -5}, r"max_prior_cells must be a whole number >= 1, got -5"),
    ],
)
def test_multistudy_constructor_refuses_a_bad_argument(adata, kwargs, match):
    MultiStudySparseVAE.setup_anndata(adata, study_key="batch", layer="counts")
    refused(adata, lambda: MultiStudySparseVAE(adata, **kwargs), InvalidInputError, match)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda m: m * 0.5, r"non-integer values.*raw counts layer"),
        (lambda m: -m, r"negative values.*gene_likelihood='normal'"),
        (lambda m: sp.csr_matrix(np.vstack([np.zeros((1, m.shape[1])), _dense(m)[1:]])), r"zero total counts.*cell0"),
    ],
    ids=["non-integer", "negative", "zero-count cell"],
)
def test_counts_a_likelihood_cannot_model_are_refused_and_the_set_up_is_left_as_it_was(adata, change, match):
    """A failed constructor adds nothing: what ``adata`` holds afterwards is exactly what setup_anndata wrote."""
    adata.layers["counts"] = sp.csr_matrix(change(adata.layers["counts"]))
    SparseVAE.setup_anndata(adata, layer="counts", batch_key="batch")
    refused(adata, lambda: SparseVAE(adata), InvalidInputError, match)


# ---------------------------------------------------------------------------------------------------- set-up
def test_missing_batch_labels_get_advice_that_keeps_them_apart(adata):
    adata.obs["batch"] = pd.Categorical(adata.obs["batch"].where(np.arange(adata.n_obs) % 7 != 0))
    match = r"adata.obs\['batch'\] has 18 missing value.*notna\(\).*cat.add_categories\('unknown'\).fillna"
    refused(adata, lambda: SparseVAE.setup_anndata(adata, layer="counts", batch_key="batch"), InvalidInputError, match)
    assert "astype(str)" not in _message(lambda: SparseVAE.setup_anndata(adata, layer="counts", batch_key="batch"))


def test_missing_continuous_covariate_values_get_advice_to_impute_them(adata):
    adata.obs["pct_mt"] = np.where(np.arange(adata.n_obs) % 5 == 0, np.nan, 1.5)
    match = r"adata.obs\['pct_mt'\] has 24 missing value.*fillna\(adata.obs\['pct_mt'\].median\(\)\)"
    call = lambda: SparseVAE.setup_anndata(adata, layer="counts", continuous_covariate_keys=["pct_mt"])  # noqa: E731
    refused(adata, call, InvalidInputError, match)
    assert "'unknown'" not in _message(call)


def _message(call) -> str:
    with pytest.raises(InvalidInputError) as info:
        call()
    return str(info.value)


def test_genes_zero_in_every_cell_are_kept_with_a_warning_that_reads_the_registered_layer(adata):
    dense = _dense(adata.layers["counts"])
    dense[:, [2, 7]] = 0
    adata.layers["counts"] = sp.csr_matrix(dense)
    with pytest.warns(ZeroGenesWarning, match=r"2 gene\(s\) are zero.*gene2.*adata.layers\['counts'\].sum\(axis=0\)"):
        SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, seed=0, **SMALL)
    model.train(max_epochs=2, batch_size=32, enable_progress_bar=False)
    assert np.isfinite(model.get_latent_representation()).all()


# ---------------------------------------------------------------------------------------------------- train
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"batch_size": 1}, r"batch_size must be a whole number >= 2, got 1.*Batch normalisation"),
        ({"batch_size": 64.0}, r"batch_size must be a whole number >= 2, got 64.0"),
        ({"lr": 0}, r"lr must be a number > 0, got 0"),
        ({"lr": -1e-3}, r"lr must be a number > 0, got -0.001"),
        ({"max_epochs": 0}, r"max_epochs must be a whole number >= 1, got 0.*None chooses"),
        ({"train_size": 0}, r"train_size must be a number in \(0, 1\], got 0"),
        ({"train_size": 1.5}, r"train_size must be a number in \(0, 1\], got 1.5"),
        ({"kl_warmup_fraction": 2}, r"kl_warmup_fraction must be a number in \[0, 1\], got 2"),
        ({"seed": -2}, r"seed must be a whole number >= 0, got -2"),
    ],
)
def test_train_refuses_a_bad_argument_before_training(registered, kwargs, match):
    model = SparseVAE(registered, seed=0, **SMALL)
    refused(registered, lambda: model.train(max_epochs=kwargs.pop("max_epochs", 1), **kwargs), InvalidInputError, match)
    assert not model.is_trained_ and model.seed == 0


def test_one_cell_is_refused_with_the_number_of_cells(adata):
    one = adata[:1].copy()
    SparseVAE.setup_anndata(one, layer="counts")
    model = SparseVAE(one, **SMALL)
    refused(one, lambda: model.train(max_epochs=1), InvalidInputError, r"at least 2 cells; the data have 1")


# ---------------------------------------------------------------------------------------------------- new data
def test_genes_in_another_order_are_read_by_name(trained):
    adata = trained.adata
    order = np.random.default_rng(0).permutation(adata.n_vars)
    shuffled = adata[:, order].copy()
    np.testing.assert_allclose(trained.get_latent_representation(shuffled), trained.get_latent_representation())
    expr = trained.get_normalized_expression(shuffled)
    assert list(expr.columns) == list(adata.var_names)
    np.testing.assert_allclose(expr.to_numpy(), trained.get_normalized_expression().to_numpy(), rtol=1e-5)
    assert list(shuffled.var_names) == list(adata.var_names[order])  # the user's object keeps its order


def test_more_genes_than_the_model_are_read_by_name(trained):
    adata = trained.adata
    extra = sp.csr_matrix(np.ones((adata.n_obs, 2), dtype=np.float32))
    wider = ad_with_layer(sp.hstack([extra, adata.layers["counts"]]).tocsr(), adata, ["new0", "new1"])
    np.testing.assert_allclose(trained.get_latent_representation(wider), trained.get_latent_representation())


def ad_with_layer(counts, like, new_genes):
    import anndata as ad

    out = ad.AnnData(counts.copy(), obs=like.obs[["batch"]].copy())
    out.var_names = [*new_genes, *like.var_names]
    out.layers["counts"] = counts.copy()
    return out


@pytest.mark.parametrize("method", ["get_latent_representation", "get_normalized_expression"])
def test_renamed_genes_are_refused_not_read_by_position(trained, method):
    renamed = trained.adata.copy()
    renamed.var_names = [f"other{j}" for j in range(renamed.n_vars)]
    refused(
        renamed,
        lambda: getattr(trained, method)(renamed),
        InvalidInputError,
        r"30 of the model's 30 genes are not in adata.var_names \(e.g. gene0.*prepare_query_anndata",
    )


def test_missing_genes_are_refused(trained):
    subset = trained.adata[:, 3:].copy()
    match = r"3 of the model's 30 genes are not in adata.var_names \(e.g. gene0, gene1, gene2\)"
    refused(subset, lambda: trained.get_latent_representation(subset), InvalidInputError, match)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda m: np.where(np.arange(m.size).reshape(m.shape) == 5, np.nan, m), r"1 NaN or infinite value"),
        (lambda m: -m, r"negative values"),
        (lambda m: m + 0.5, r"non-integer values"),
    ],
    ids=["nan", "negative", "non-integer"],
)
def test_new_cells_get_the_count_checks(trained, change, match):
    new = trained.adata.copy()
    for key in list(new.uns):  # cells never set up with the model
        del new.uns[key]
    new.layers["counts"] = change(_dense(new.layers["counts"]).astype(np.float32))
    refused(new, lambda: trained.get_latent_representation(new), InvalidInputError, match)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"groupby": "bacth", "group1": "a"}, r"groupby='bacth' is not a column of adata.obs \(did you mean 'batch'"),
        ({"groupby": "batch", "group1": "c"}, r"'c' is not a value of adata.obs\['batch'\].*Values: a, b"),
        ({"groupby": "batch", "group1": "a", "group2": "z"}, r"'z' is not a value of adata.obs\['batch'\]"),
        ({"group1": "a"}, r"pass groupby="),
    ],
)
def test_differential_expression_refuses_groups_that_are_not_there(trained, kwargs, match):
    refused(trained.adata, lambda: trained.differential_expression(**kwargs), InvalidInputError, match)


def test_differential_expression_reads_genes_by_name(trained):
    shuffled = trained.adata[:, np.random.default_rng(1).permutation(trained.adata.n_vars)].copy()
    de = trained.differential_expression(shuffled, groupby="batch", group1="a", silent=True, all_stats=False)
    assert set(de.index) == set(trained.adata.var_names)


@pytest.mark.parametrize("key", ["", 3])
def test_an_empty_result_key_is_refused(trained, key):
    refused(
        trained.adata,
        lambda: trained.write_results(trained.adata, key_added=key),
        InvalidInputError,
        r"key_added must be a non-empty string.*None writes under 'sparsevae'",
    )


def test_repeated_cell_names_are_set_up_with_a_warning(adata):
    adata.obs_names = [f"cell{i % 100}" for i in range(adata.n_obs)]
    with pytest.warns(UserWarning, match=r"20 cell name\(s\) occur more than once.*obs_names_make_unique"):
        SparseVAE.setup_anndata(adata, layer="counts")


def test_the_package_lists_its_subpackages_for_tab_completion():
    import scsparse

    assert {"model", "tl", "pl", "data", "results", "generic"} <= set(dir(scsparse))


# ---------------------------------------------------------------------------------------------------- results
@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda m: m.get_top_genes(n_top=0), r"n_top must be a whole number >= 1, got 0"),
        (lambda m: m.get_top_genes(n_top=2.5), r"n_top must be a whole number >= 1, got 2.5"),
        (lambda m: m.active_factors(pip_threshold=2), r"pip_threshold must be a number in \[0, 1\), got 2"),
        (lambda m: m.get_anchor_genes(pip_threshold=-1), r"pip_threshold must be a number in \[0, 1\), got -1"),
        (lambda m: m.active_factors(min_genes=0), r"min_genes must be a whole number >= 1, got 0"),
        (lambda m: m.get_heldout_nll(n_mc_samples=0), r"n_mc_samples must be a whole number >= 1, got 0"),
        (lambda m: m.training_objective(batch_size=0), r"batch_size must be a whole number >= 1, got 0"),
        (lambda m: m.get_normalized_expression(n_samples=0), r"n_samples must be a whole number >= 1, got 0"),
    ],
    ids=["n_top=0", "n_top=2.5", "pip>1", "pip<0", "min_genes=0", "n_mc_samples=0", "objective", "n_samples=0"],
)
def test_result_methods_refuse_a_bad_argument(trained, call, match):
    refused(trained.adata, lambda: call(trained), InvalidInputError, match)


def test_tools_refuse_a_pip_threshold_outside_0_1(trained):
    import scsparse

    adata = trained.adata.copy()
    trained.write_results(adata, overwrite=True)
    match = r"pip_threshold must be a number in \[0, 1\), got 1.5"
    call = lambda: scsparse.tl.programme_genes(adata, factors=[0], pip_threshold=1.5)  # noqa: E731
    refused(adata, call, InvalidInputError, match)
    refused(adata, lambda: scsparse.tl.top_genes(adata, factors=[0], pip_threshold=1.5), InvalidInputError, match)
