"""training_objective and select_best: label-free choice among fits of one model to one dataset."""

import numpy as np
import pytest
import torch

import scsparse
from scsparse.model import InvalidInputError, select_best


def _fit(adata, seed, epochs=4):
    scsparse.model.SparseVAE.setup_anndata(adata, layer="counts")
    model = scsparse.model.SparseVAE(adata, n_latent=4, n_hidden=16, seed=seed)
    model.train(max_epochs=epochs, batch_size=64, train_size=1.0, enable_progress_bar=False)
    return model


def test_training_objective_is_reproducible_and_falls_with_training(counts_adata):
    short = _fit(counts_adata.copy(), seed=0, epochs=1)
    long = _fit(counts_adata.copy(), seed=0, epochs=30)
    value = long.training_objective()
    assert np.isfinite(value)
    assert value == long.training_objective()  # seeded draws: same value twice
    assert value < short.training_objective()


def test_select_best_returns_the_lowest_objective(counts_adata):
    fits = [_fit(counts_adata.copy(), seed=s) for s in range(3)]
    best, table = select_best(fits)
    assert list(table["seed"]) == [0, 1, 2]
    assert table["selected"].sum() == 1
    i = int(np.argmin(table["objective"].to_numpy()))
    assert best is fits[i] and bool(table["selected"].iloc[i])
    assert table["objective"].iloc[i] == pytest.approx(fits[i].training_objective())
    assert list(table.columns) == ["seed", "objective", "n_active", "n_overlapping", "selected"]

    # n_overlapping counts active factors sharing most of their genes: copy factor 0's p* onto factor 1
    prior = fits[0].module.prior
    p_star = torch.full_like(prior.p_star, 0.01)
    p_star[:20, 0] = p_star[:18, 1] = p_star[20:30, 2] = 0.99  # Jaccard(0, 1) = 0.9, factor 2 disjoint
    prior.p_star.copy_(p_star)
    _, table = select_best(fits)
    assert table["n_overlapping"].iloc[0] == 2 and table["n_active"].iloc[0] == 3


def test_restarts_with_a_held_out_split_share_it_through_the_training_seed(counts_adata):
    def fit(seed, train_seed):
        adata = counts_adata.copy()
        scsparse.model.SparseVAE.setup_anndata(adata, layer="counts")
        model = scsparse.model.SparseVAE(adata, n_latent=4, n_hidden=16, seed=seed)
        model.train(max_epochs=2, batch_size=64, train_size=0.8, seed=train_seed, enable_progress_bar=False)
        return model

    fits = [fit(s, train_seed=0) for s in range(3)]
    _, table = select_best(fits)
    assert list(table["seed"]) == [0, 1, 2]  # the initial weights' seeds, not the shared training seed
    assert len({round(v, 6) for v in table["objective"]}) == 3  # different fits
    with pytest.raises(InvalidInputError, match=r"same train\(seed=\.\.\.\)"):
        select_best([fit(0, train_seed=0), fit(1, train_seed=1)])  # two different held-out splits


def test_select_best_refuses_fits_of_different_data(counts_adata):
    a = _fit(counts_adata.copy(), seed=0, epochs=1)
    b = _fit(counts_adata[:, :30].copy(), seed=1, epochs=1)
    with pytest.raises(InvalidInputError, match="same data"):
        select_best([a, b])
    with pytest.raises(InvalidInputError, match="at least one"):
        select_best([])


def test_training_objective_needs_a_trained_model(counts_adata):
    adata = counts_adata.copy()
    scsparse.model.SparseVAE.setup_anndata(adata, layer="counts")
    with pytest.raises(InvalidInputError, match="not trained"):
        scsparse.model.SparseVAE(adata, n_latent=3, n_hidden=8).training_objective()


def test_best_of_restarts_seeds_and_choice(counts_adata):
    from scsparse.generic.benchmarks._restarts import RESTART_SEED_STEP, best_of_restarts

    adata = counts_adata.copy()
    fits = {}

    def fit(seed):
        fits[seed] = _fit(adata, seed=seed, epochs=2)
        return fits[seed]

    best = best_of_restarts(fit, seed=3, n_restarts=3)
    assert sorted(fits) == [3, 3 + RESTART_SEED_STEP, 3 + 2 * RESTART_SEED_STEP]  # restart 0 is the seed itself
    objectives = {s: m.training_objective() for s, m in fits.items()}
    assert best is fits[min(objectives, key=objectives.get)]
    single = best_of_restarts(fit, seed=5, n_restarts=1)
    assert single is fits[5]
    with pytest.raises(ValueError, match="n_restarts must be a whole number >= 1"):
        best_of_restarts(fit, seed=0, n_restarts=0)


def test_best_of_restarts_with_an_objective_keeps_the_lowest():
    from scsparse.generic.benchmarks._restarts import RESTART_SEED_STEP, best_of_restarts

    values = {0: 3.0, RESTART_SEED_STEP: 1.0, 2 * RESTART_SEED_STEP: 2.0}
    best = best_of_restarts(lambda seed: seed, seed=0, n_restarts=3, objective=lambda fit: values[fit])
    assert best == RESTART_SEED_STEP
    assert best_of_restarts(lambda seed: seed, seed=7, n_restarts=1, objective=lambda fit: 1 / 0) == 7
