"""The bars benchmark (oi-VAE Fig. 2): data, influence matrices, ownership, the runner; OIVAE's paper options."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from scsparse.generic.benchmarks import run
from scsparse.generic.benchmarks._bars._run import (
    RESULT_COLUMNS,
    gaussian_reference_ll,
    jacobian_group_influence,
    make_bars,
    ownership,
    run_bars,
)
from scsparse.generic.models import OIVAE
from scsparse.generic.nn._group_lasso import group_lasso_prox


def test_make_bars_lights_exactly_one_row_with_the_papers_values() -> None:
    X, lit = make_bars(400, seed=3, noise_sd=0.0)
    imgs = X.reshape(400, 8, 8)
    assert X.dtype == np.float32 and X.shape == (400, 64)
    assert np.allclose(imgs[np.arange(400), lit], 0.5)
    assert np.allclose(imgs.sum(axis=(1, 2)), 4.0)  # nothing else lit
    assert set(lit.tolist()) == set(range(8))
    noisy, lit2 = make_bars(400, seed=3)
    assert np.array_equal(lit, lit2)
    assert abs(float((noisy - X).std()) - 0.05) < 0.005
    with pytest.raises(ValueError, match="noise_sd"):
        make_bars(3, seed=0, noise_sd=-1.0)


def test_ownership_counts_one_to_one_rows_and_switched_off_factors() -> None:
    L = np.zeros((8, 16))
    L[np.arange(8), np.arange(8)[::-1]] = 0.5  # a permutation: every row owned
    L[0, 9] = 0.001  # below 1% of the largest: factor 9 is off
    o = ownership(L)
    assert o["rows_owned"] == 8 and o["n_active"] == 8 and o["n_off"] == 8 and o["n_exact_zero"] == 7
    assert o["owner"].tolist() == list(range(8))[::-1]
    L[1, 7] = 0.2  # factor 7 (owner of row 0) now also touches row 1: rows 0 and 1 are no longer owned
    o = ownership(L)
    assert o["rows_owned"] == 6 and o["owner"][0] == -1 and o["owner"][1] == -1
    L[1, 7] = 0.04  # below 10% of row 1's largest: ignored again
    assert ownership(L)["rows_owned"] == 8
    with pytest.raises(ValueError, match="n_groups, K"):
        ownership(np.zeros(3))


def test_jacobian_influence_finds_the_group_a_factor_drives() -> None:
    groups = np.repeat(np.arange(3), 2)  # 3 groups of 2 features

    def mean_fn(z: torch.Tensor) -> torch.Tensor:  # factor 0 -> group 2 (nonlinear), factor 1 -> group 0
        return torch.stack([z[:, 1], 2 * z[:, 1], 0 * z[:, 0], 0 * z[:, 0], torch.tanh(z[:, 0]), z[:, 0] ** 2], 1)

    z = np.random.default_rng(0).normal(size=(300, 3))
    L = jacobian_group_influence(mean_fn, z, groups)
    assert L.shape == (3, 3)
    assert np.allclose(L[0], [0.0, np.sqrt(5.0), 0.0])
    assert np.allclose(L[1], 0.0) and np.allclose(L[:, 2], 0.0)
    expected = np.sqrt(np.mean((1 - np.tanh(z[:, 0]) ** 2) ** 2 + (2 * z[:, 0]) ** 2))
    assert L[2, 0] == pytest.approx(expected, rel=1e-5)


def test_gaussian_reference_is_the_gaussian_log_likelihood() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(20_000, 3)) * [1.0, 2.0, 0.5]
    expected = -0.5 * (3 * np.log(2 * np.pi * np.e) + 2 * np.log(1.0 * 2.0 * 0.5))
    assert gaussian_reference_ll(X, X) == pytest.approx(expected, abs=0.02)


def test_oivae_w_lr_is_a_plain_proximal_gradient_step_on_w() -> None:
    X, _ = make_bars(64, seed=0)
    model = OIVAE(np.repeat(np.arange(8), 8), n_latent=4, p=2, n_layers=0, w_lr=0.05, lambda_=1.0)
    module = model.build(64, torch.as_tensor(X))
    before = module.W.detach().clone()
    grad = torch.randn_like(before)
    grad[0, :, 0] = 0.0  # column (0, 0): no data pull, so only the shrinkage acts
    module.W.grad = grad
    with torch.no_grad():
        module.W.add_(1.0)  # what Adam did to W in the same step: must be discarded
        model._hooks()["after_step"](module, None)
    expected = group_lasso_prox(before - 0.05 * grad, 0.05 * 1.0)
    assert torch.allclose(module.W, expected)
    assert torch.allclose(module.w_prox_state, expected)
    norm0 = torch.linalg.vector_norm(before[0, :, 0])
    assert float(torch.linalg.vector_norm(module.W.detach()[0, :, 0])) == pytest.approx(
        max(float(norm0) - 0.05, 0.0), abs=1e-6
    )
    with pytest.raises(ValueError, match="w_lr"):
        OIVAE(np.zeros(4), w_lr=0.0)


def test_oivae_theta_prior_weight_scales_the_generator_prior() -> None:
    X = torch.as_tensor(make_bars(32, seed=0)[0])
    losses = {}
    for weight in (None, 1.0):
        model = OIVAE(np.repeat(np.arange(8), 8), n_latent=3, n_layers=0, lambda_=0.0, theta_prior_weight=weight)
        torch.manual_seed(0)
        module = model.build(64, X)
        torch.manual_seed(1)
        losses[weight] = float(module.loss(X, n_obs=100).detach())
        prior = float(module.weight_prior().detach())
    assert losses[1.0] - losses[None] == pytest.approx(prior * (1.0 - 1.0 / 100), rel=1e-4)
    with pytest.raises(ValueError, match="theta_prior_weight"):
        OIVAE(np.zeros(4), theta_prior_weight=-1.0)


def test_run_bars_quick_writes_results_summary_and_figure(tmp_path) -> None:
    df = run("bars", out=tmp_path, quick=True)
    assert list(df.columns) == list(RESULT_COLUMNS)
    assert sorted(df["method"].unique()) == ["VAE", "oi-VAE"] and sorted(df["K"].unique()) == [8, 16]
    assert (df["rows_owned"].between(0, 8)).all() and np.isfinite(df["test_ll"]).all()
    saved = pd.read_csv(tmp_path / "results.csv")
    assert len(saved) == len(df) == 4
    text = (tmp_path / "summary.md").read_text()
    for needle in ("## Provenance", "Must show", "Table 3", "Reduced setting", "99.93", "best of 4 fits per seed"):
        assert needle in text
    assert (tmp_path / "bars.png").stat().st_size > 10_000


def test_run_bars_rejects_bad_options(tmp_path) -> None:
    with pytest.raises(ValueError, match="unknown methods"):
        run_bars(tmp_path, methods=["PCA"], quick=True)
    with pytest.raises(ValueError, match="seeds"):
        run_bars(tmp_path, seeds=0)
    with pytest.raises(ValueError, match="n_jobs"):
        run_bars(tmp_path, n_jobs=0)
    with pytest.raises(ValueError, match="w_lr"):
        run_bars(tmp_path, w_lr=-1.0, quick=True)
