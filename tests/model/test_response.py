"""Latent traversals: ``model.get_factor_response()`` and ``scsparse.pl.factor_response``."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import scsparse  # noqa: E402
from scsparse.model import FactorResponse, InvalidInputError, MultiStudySparseVAE, SparseVAE  # noqa: E402

SHORT_FIT = pytest.mark.filterwarnings("ignore::scsparse.model.NoActiveFactorWarning")


def fit(adata, epochs=3, plan_kwargs=None, **kwargs):
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, seed=0, **{"n_latent": 4, "n_hidden": 16, **kwargs})
    model.train(max_epochs=epochs, batch_size=64, plan_kwargs=plan_kwargs, enable_progress_bar=False)
    return model


@pytest.fixture(scope="module")
def trained(counts_factory):
    """A model fitted long enough for its programmes to form (3 simulated programmes of 10 genes each)."""
    adata = counts_factory(n_obs=300, n_vars=30)
    model = fit(adata, epochs=60, n_latent=5, decoder_kwargs={"w_init": 1.0}, plan_kwargs={"lr": 1e-2})
    assert len(model.active_factors()) >= 2
    return model, adata


def test_grid_expression_and_effects_agree(trained):
    model, adata = trained
    response = model.get_factor_response(n_steps=5)
    assert isinstance(response, FactorResponse)
    assert repr(response).startswith(f"FactorResponse: {len(response.factors)} factor(s) x 5 steps x 30 genes")
    assert response.factors == model.active_factors()
    k = len(response.factors)
    assert response.expression.shape == (k, 5, adata.n_vars) and np.isfinite(response.expression).all()
    assert (np.diff(response.grid.to_numpy(), axis=1) >= 0).all()  # quantiles, low to high
    Z = model.get_latent_representation()
    for name in response.factors:
        col = model.factor_names.index(name)
        lo, hi = np.quantile(Z[:, col], [0.02, 0.98])
        assert response.grid.loc[name].iloc[0] == pytest.approx(lo, abs=1e-5)
        assert response.grid.loc[name].iloc[-1] == pytest.approx(hi, abs=1e-5)
    assert (response.n_cells == adata.n_obs).all() and response.unit == "counts per 10000"
    assert response.is_counts
    # every step's mean expression is a distribution over genes times the library size
    np.testing.assert_allclose(response.expression.sum(-1), 1e4, rtol=1e-4)
    curve = response.curve(response.factors[0])
    assert curve.shape == (5, adata.n_vars) and list(curve.columns) == list(adata.var_names)
    effects = response.effects()
    expected = np.log2(curve.iloc[-1] + 1e-9) - np.log2(curve.iloc[0] + 1e-9)
    np.testing.assert_allclose(effects[response.factors[0]].to_numpy(), expected.to_numpy(), rtol=1e-6)


def test_oriented_programmes_rise_with_their_factor(trained):
    """After orient_factors (run by train), a programme's own genes go up along its factor's traversal.

    The other genes' normalised expression goes down together (the expression of all genes sums to the library
    size), so each of a programme's genes rises above every gene outside it.
    """
    model, _ = trained
    effects = model.get_factor_response().effects()
    P = model.get_inclusion_probabilities()
    for name, genes in model.get_top_genes(n_top=5).items():
        assert (effects.loc[genes, name] > 0).all(), (name, effects.loc[genes, name])
        outside = P.index[P[name] <= 0.5]
        assert effects.loc[genes, name].min() > effects.loc[outside, name].max()


@SHORT_FIT
def test_genes_outside_a_factor_do_not_see_it(counts_factory):
    """A gene with w_jk = 0 has the same decoder output all along factor k's traversal."""
    adata = counts_factory(n_obs=120, n_vars=20)
    adata.layers["counts"] = adata.layers["counts"].copy()
    model = fit(adata, gene_likelihood="normal")
    with torch.no_grad():
        model.module.decoder.W[:10, 1] = 0.0
    response = model.get_factor_response(factors=[1], n_steps=4)
    effect = response.effects()["factor_1"]
    assert np.abs(effect.iloc[:10]).max() < 1e-5
    assert np.abs(effect.iloc[10:]).max() > 1e-3
    assert response.unit == "decoder mean" and response.gene_likelihood == "normal" and not response.is_counts
    ax = scsparse.pl.factor_response(response, "factor_1", n_genes=3, show=False)  # a decoder mean: linear axis
    assert ax.get_yscale() == "linear" and len(ax.get_lines()) == 3
    plt.close("all")
    # for counts, a single cell's untouched genes all move by the same factor: the softmax's normaliser
    counts_model = fit(counts_factory(n_obs=120, n_vars=20))
    with torch.no_grad():
        counts_model.module.decoder.W[:10, 2] = 0.0
    single = counts_model.get_factor_response(factors="factor_2", indices=[7], n_cells=None).effects()["factor_2"]
    np.testing.assert_allclose(single.iloc[:10], single.iloc[0], atol=1e-4)


def test_top_genes_of_a_traversal(trained):
    model, _ = trained
    response = model.get_factor_response(n_steps=3)
    name = response.factors[0]
    P = model.get_inclusion_probabilities()[name]
    top = response.top_genes(name, n_top=None)
    assert set(top["gene"]) == set(P.index[P > 0.5])
    assert list(top.columns) == ["gene", "effect", "direction", "pip"]
    assert (np.diff(top["effect"].abs().to_numpy()) <= 0).all()
    assert ((top["effect"] >= 0) == (top["direction"] == "up")).all()
    np.testing.assert_allclose(top["pip"], P[top["gene"]].to_numpy())
    every = response.top_genes(0, n_top=5, pip_threshold=None)
    assert len(every) == 5 and every["effect"].abs().iloc[0] == response.effects()[name].abs().max()


def test_programmes_by_effect_size_keep_the_genes_that_change_enough(trained):
    model, _ = trained
    response = model.get_factor_response(n_steps=3)
    effects, pip = response.effects(), response.pip
    cut = float(np.median(effects.abs().to_numpy()[pip.to_numpy() > 0.5]))  # about half of the slab genes
    programmes = response.programmes(min_effect=cut)
    for name in response.factors:
        expected = set(effects.index[(pip[name] > 0.5) & (effects[name].abs() >= cut)])
        assert set(programmes.get(name, [])) == expected
        if name in programmes:
            assert programmes[name] == response.top_genes(name, n_top=None, min_effect=cut)["gene"].tolist()
    assert 0 < sum(map(len, programmes.values())) < int((pip.to_numpy() > 0.5).sum())
    assert response.programmes(min_effect=0.0) == {
        f: response.top_genes(f, n_top=None)["gene"].tolist() for f in response.factors if (pip[f] > 0.5).any()
    }
    with pytest.raises(InvalidInputError, match="min_effect"):
        response.programmes(min_effect=-1.0)


def test_same_seed_same_cells(trained):
    model, _ = trained
    a = model.get_factor_response(n_cells=50, seed=3)
    b = model.get_factor_response(n_cells=50, seed=3)
    c = model.get_factor_response(n_cells=50, seed=4)
    np.testing.assert_array_equal(a.expression, b.expression)
    assert not np.array_equal(a.expression, c.expression)
    assert (a.n_cells == 50).all()


def test_bad_options_are_named(trained, counts_factory):
    model, adata = trained
    with pytest.raises(InvalidInputError, match="n_steps must be an integer >= 2"):
        model.get_factor_response(n_steps=1)
    with pytest.raises(InvalidInputError, match="0 <= low < high <= 1"):
        model.get_factor_response(span=(0.9, 0.1))
    with pytest.raises(InvalidInputError, match="Unknown factor 'factor_9'"):
        model.get_factor_response(factors=["factor_9"])
    with pytest.raises(InvalidInputError, match="positions of cells"):
        model.get_factor_response(indices=[adata.n_obs])
    with pytest.raises(InvalidInputError, match="n_cells must be a positive integer"):
        model.get_factor_response(n_cells=0)
    with pytest.raises(InvalidInputError, match="library_size must be a positive number"):
        model.get_factor_response(library_size=0)
    response = model.get_factor_response(factors=[0, 1], n_steps=3)
    with pytest.raises(InvalidInputError, match="was not traversed"):
        response.curve("factor_4")
    with pytest.raises(InvalidInputError, match="'factor_4' was not traversed"):
        response.curve(4)  # positions are the model's, as for every factors= argument
    assert response.factor_name(1) == "factor_1"
    with pytest.raises(InvalidInputError, match="out of range"):
        response.curve(5)
    untrained_data = counts_factory(n_obs=60, n_vars=10)
    SparseVAE.setup_anndata(untrained_data, layer="counts")
    with pytest.raises(InvalidInputError, match="not trained"):
        SparseVAE(untrained_data, n_latent=2, n_hidden=8).get_factor_response()


@SHORT_FIT
def test_study_specific_factors_average_their_own_study(counts_factory):
    adata = counts_factory(n_obs=240, n_vars=30)
    adata.obs["study"] = np.asarray(["s1", "s2", "s3"])[np.arange(240) % 3]
    MultiStudySparseVAE.setup_anndata(adata, study_key="study", layer="counts")
    model = MultiStudySparseVAE(adata, n_hidden=16, n_latent_shared=2, n_latent_specific={"s1": 1, "s3": 1})
    model.train(max_epochs=2, batch_size=64, enable_progress_bar=False)
    response = model.get_factor_response(factors=["shared_0", "s1_0", "s3_0"], n_cells=None)
    assert response.n_cells.to_dict() == {"shared_0": 240, "s1_0": 80, "s3_0": 80}
    s3_cells = np.flatnonzero(adata.obs["study"].to_numpy() == "s3")
    with pytest.raises(InvalidInputError, match="No cell among those given has factor 's1_0'"):
        model.get_factor_response(factors="s1_0", indices=s3_cells)


def test_plot_draws_the_strongest_genes(trained, tmp_path):
    model, _ = trained
    response = model.get_factor_response(n_steps=4)
    name = response.factors[0]
    ax = scsparse.pl.factor_response(response, name, n_genes=4, show=False)
    labels = [line.get_label() for line in ax.get_lines()]
    effect = response.effects()[name]
    programme = response.pip.index[response.pip[name] > 0.5]
    assert set(labels) == set(effect[programme].abs().nlargest(4).index)  # the programme's genes by default
    ax = scsparse.pl.factor_response(response, name, n_genes=4, pip_threshold=None, show=False)
    assert {line.get_label() for line in ax.get_lines()} == set(effect.abs().nlargest(4).index)
    assert ax.get_yscale() == "log"
    plt.close("all")
    out = tmp_path / "response.png"
    scsparse.pl.factor_response(response, 0, genes=["gene0", "gene1"], save=out)
    assert out.stat().st_size > 0
    with pytest.raises(InvalidInputError, match=r"Gene\(s\) not in the model: \['CD3E'\]"):
        scsparse.pl.factor_response(response, name, genes=["CD3E"], show=False)
    axes = scsparse.pl.factor_response(response, n_genes=3, show=False)  # a panel per traversed factor
    assert [a.get_title().split()[2] for a in axes] == response.factors
    assert all(len(a.get_lines()) == 3 for a in axes)
    with pytest.raises(InvalidInputError, match="ax= draws one factor's panel"):
        scsparse.pl.factor_response(response, ax=axes[0], show=False)
    with pytest.raises(InvalidInputError, match="Expected the FactorResponse"):
        scsparse.pl.factor_response(model, name, show=False)
    plt.close("all")
