"""The patches benchmark (Fallah & Rozell 2022, Table 1): FISTA, the linear sparse-coding VAE and the runner."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from scsparse.data import registry
from scsparse.generic.benchmarks import BENCHMARKS
from scsparse.generic.benchmarks._patches._run import METHODS, RESULT_COLUMNS, load_patch_data, run_patches
from scsparse.generic.models import (
    SPARSE_CODING_PRIORS,
    LinearSparseCodingVAE,
    dictionary_step,
    fista,
    init_dictionary,
    sparse_coding_objective,
)


def test_fista_matches_the_closed_form_for_an_orthonormal_dictionary():
    torch.manual_seed(0)
    q, _ = torch.linalg.qr(torch.randn(8, 8))
    x = 3.0 * torch.randn(5, 8)
    lam = 2.0
    z = fista(x, q, lam, n_iter=300)
    c = x @ q  # with A^T A = I the minimiser of 0.5 ||x - Az||^2 + lam |z|_1 is soft(A^T x, lam)
    expected = torch.sign(c) * torch.clamp(c.abs() - lam, min=0.0)
    torch.testing.assert_close(z, expected, atol=1e-4, rtol=1e-4)


def test_fista_decreases_the_objective_on_an_overcomplete_dictionary():
    torch.manual_seed(1)
    A = torch.randn(10, 30) / math.sqrt(10)
    x = torch.randn(20, 10)
    z = fista(x, A, 0.5, n_iter=500)
    obj = sparse_coding_objective(x, A, z, 0.5)
    assert (obj <= sparse_coding_objective(x, A, torch.zeros_like(z), 0.5) + 1e-6).all()
    # optimality: |A^T (x - Az)| <= lam everywhere, = lam on the support
    grad = (x - z @ A.T) @ A
    assert float(grad.abs().max()) <= 0.5 + 1e-3
    torch.testing.assert_close(grad[z != 0].abs(), torch.full_like(grad[z != 0], 0.5), atol=2e-3, rtol=0)
    assert (z != 0).any() and (z == 0).any()
    with pytest.raises(ValueError, match="non-negative"):
        fista(x, A, -1.0)


def test_sparse_coding_objective_value():
    x = torch.tensor([[1.0, 2.0]])
    z = torch.tensor([[1.0, -1.0]])
    # Table 1's validation loss: 0.5 ||x - Az||^2 + lam ||z||_1
    assert float(sparse_coding_objective(x, torch.eye(2), z, 3.0)[0]) == pytest.approx(0.5 * (0.0 + 9.0) + 6.0)


@pytest.mark.parametrize("prior", ["gaussian", "laplace", "spike_slab", "thresholded_gaussian", "thresholded_laplace"])
def test_linear_vae_trains_every_prior(prior):
    torch.manual_seed(0)
    m = LinearSparseCodingVAE(16, 12, prior, n_hidden=16, n_layers=1)
    x = torch.randn(32, 16)
    loss, z_sel = m.loss(x, n_samples=3)
    loss.backward()
    assert torch.isfinite(loss) and z_sel.shape == (32, 12) and not z_sel.requires_grad
    assert all(p.grad is not None for p in m.encoder.parameters())
    assert "A" in dict(m.named_buffers())  # learned by dictionary_step, not by the encoder's gradient
    A0 = m.A.clone()
    dictionary_step(m.A, x, z_sel, lr=0.5, kappa=1e-4)
    assert not torch.equal(m.A, A0)
    z, kl = m.codes(x, n_samples=3)
    assert z.shape == (32, 12) and kl.shape == (32, 12) and (kl >= -1e-5).all()
    if prior.startswith("thresholded") or prior == "spike_slab":
        assert (z == 0).any()  # exact zeros at evaluation
    else:
        assert (z != 0).all()


def test_encoder_loss_is_the_per_pixel_mean_error_plus_beta_kl(monkeypatch):
    # With q equal to the prior (KL 0) and J = 1, the loss is the per-pixel mean squared error of the sample:
    # the scaling of the paper's experiments (against the sum over pixels, beta = 0.01 lets the reconstruction
    # shrink every posterior scale below the threshold and all codes become exact zeros).
    torch.manual_seed(0)
    m = LinearSparseCodingVAE(16, 8, "laplace", n_hidden=8, n_layers=1, kl_weight=0.5)
    x = torch.randn(5, 16)
    prior = {"loc": torch.zeros(5, 8), "scale": torch.full((5, 8), m.prior_sd)}
    monkeypatch.setattr(m, "posterior", lambda _x: prior)
    torch.manual_seed(1)
    loss, z = m.loss(x, n_samples=1)
    expected = (x - z @ m.A.T).pow(2).mean(-1).mean()
    assert float(loss) == pytest.approx(float(expected), rel=1e-5)
    # the KL enters with weight beta, summed over the codes
    shifted = {"loc": torch.full((5, 8), 0.3), "scale": torch.full((5, 8), m.prior_sd)}
    monkeypatch.setattr(m, "posterior", lambda _x: shifted)
    torch.manual_seed(1)
    loss2, z2 = m.loss(x, n_samples=1)
    kl = m.kl_per_dim(shifted).sum(-1)
    assert float(loss2) == pytest.approx(float(((x - z2 @ m.A.T).pow(2).mean(-1) + 0.5 * kl).mean()), rel=1e-5)


def test_dictionary_step_is_a_gradient_step_on_the_half_squared_error_and_frobenius():
    torch.manual_seed(0)
    A = init_dictionary(6, 4)
    torch.testing.assert_close(torch.linalg.vector_norm(A, dim=0), torch.ones(4))
    x, z = torch.randn(10, 6), torch.randn(10, 4)
    leaf = A.clone().requires_grad_(True)
    obj = 0.5 * (x - z @ leaf.T).pow(2).sum(-1).mean() + 1e-2 * leaf.pow(2).sum()
    obj.backward()
    dictionary_step(A, x, z, lr=0.1, kappa=1e-2)
    torch.testing.assert_close(A, (leaf - 0.1 * leaf.grad).detach())


def test_warmups_are_fractions_of_the_papers_run():
    from scsparse.generic.benchmarks._patches._run import _PAPER_STEPS, _paper_fraction, _ramp

    assert _PAPER_STEPS == 240_000
    assert _paper_fraction(1500, _PAPER_STEPS) == 1500  # full length: the paper's own steps
    assert _paper_fraction(50, 8000) == pytest.approx(1500)  # a 30x shorter run: 30x earlier
    # the Laplace noise scale: x 0.1 until step 1,500, + 2e-4 per step, 1 from step 6,000
    assert _ramp(1000, 1500, 6000, first=0.1) == pytest.approx(0.1)
    assert _ramp(1500 + 2500, 1500, 6000, first=0.1) == pytest.approx(0.1 + 2e-4 * 2500)
    assert _ramp(7000, 1500, 6000, first=0.1) == 1.0


def test_encoder_schedule_is_one_cycle_for_any_number_of_steps():
    from scsparse.generic.benchmarks._patches._run import _one_cycle

    # 8,000 steps: lr/25 at the start, the peak after 5% (400 steps), lr/25e4 at the end
    assert _one_cycle(0, 8000) == pytest.approx(1 / 25)
    assert _one_cycle(200, 8000) == pytest.approx(1 / 25 + (1 - 1 / 25) / 2)
    assert _one_cycle(400, 8000) == pytest.approx(1.0)
    assert _one_cycle(8000, 8000) == pytest.approx(1 / 25e4)
    for n in (1, 2, 6, 20):  # smoke runs of a few steps: defined, positive, at most the peak
        values = [_one_cycle(t, n) for t in range(n + 1)]
        assert all(0.0 < v <= 1.0 for v in values)


def test_thresholded_prior_gives_about_ten_percent_nonzero():
    torch.manual_seed(0)
    for base in ("gaussian", "laplace"):
        m = LinearSparseCodingVAE(4, 64, f"thresholded_{base}", n_hidden=8, n_layers=1)
        q = {"loc": torch.zeros(2000, 64), "scale": torch.full((2000, 64), m.prior_sd)}  # the prior itself
        nonzero = float((m.sample(q, 1, train=False) != 0).float().mean())
        assert 0.06 < nonzero < 0.12, (base, nonzero)


def test_linear_vae_rejects_unknown_prior():
    with pytest.raises(ValueError, match="prior must be one of"):
        LinearSparseCodingVAE(4, 4, "cauchy")


def test_the_variational_methods_are_the_model_priors():
    assert METHODS == ("fista", *SPARSE_CODING_PRIORS)


def test_patch_data_is_standardised_with_training_statistics():
    rng = np.random.default_rng(0)
    images = rng.normal(2.0, 3.0, size=(3, 40, 40)).astype(np.float32)
    data = load_patch_data(500, 200, patch_size=8, images=images)
    assert data.train.shape == (500, 64) and data.val.shape == (200, 64)
    np.testing.assert_allclose(data.train.mean(0), 0.0, atol=1e-4)
    np.testing.assert_allclose(data.train.std(0), 1.0, atol=1e-3)
    assert abs(float(data.val.std()) - 1.0) < 0.2


def test_run_patches_quick_writes_table_and_claims(tmp_path):
    images = np.random.default_rng(0).normal(size=(2, 64, 64)).astype(np.float32)
    df = run_patches(tmp_path, seeds=2, quick=True, n_train=300, n_val=100, images=images, verbose=False)
    assert list(df.columns) == list(RESULT_COLUMNS)
    assert len(df) == 2 * len(METHODS) and set(df["method"]) == set(METHODS)
    assert np.isfinite(df["val_loss"]).all() and (df["val_loss"] > 0).all()
    assert df.loc[df.method == "fista", "posterior_collapse"].isna().all()
    np.testing.assert_allclose(df["val_loss"], df["val_recon"] + 20.0 * df["val_l1"], rtol=1e-4)
    thr = df[df.method.str.startswith("thresholded")]
    assert (thr["frac_nonzero"] < 0.5).all()  # thresholding gives sparse codes even after 2 epochs
    assert (df.loc[df.method == "gaussian", "frac_nonzero"] == 1.0).all()
    summary = (tmp_path / "summary.md").read_text()
    assert "1.94e+02" in summary or "194" in summary
    assert "Thresholded Laplace within 20% of 1.94e2" in summary and "Ordering" in summary
    assert "Reduced setting" in summary
    assert (tmp_path / "patches.png").stat().st_size > 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "results.csv"), df, check_dtype=False)


def test_long_fits_report_progress_at_every_tenth(tmp_path, capsys):
    images = np.random.default_rng(0).normal(size=(2, 64, 64)).astype(np.float32)
    run_patches(tmp_path, seeds=1, quick=True, max_epochs=50, n_train=200, n_val=50, images=images,
                methods=["fista"], verbose=True)  # fmt: skip
    lines = [line for line in capsys.readouterr().out.splitlines() if "epoch " in line]
    assert [line.split("epoch ")[1].split(",")[0] for line in lines] == [f"{5 * i}/50" for i in range(1, 10)]
    run_patches(tmp_path, seeds=1, quick=True, max_epochs=10, n_train=200, n_val=50, images=images,
                methods=["fista"], verbose=True)  # fmt: skip
    assert "epoch " not in capsys.readouterr().out  # short runs stay quiet


def test_claims_name_missed_targets_and_collapse():
    from scsparse.generic.benchmarks._patches._summary import _claims

    rows = [
        {"method": m, "val_loss": v, "feature_collapse": fc}
        for m, v, fc in [("gaussian", 1300.0, 0.0), ("laplace", 600.0, 0.0), ("spike_slab", 240.0, 0.1),
                         ("thresholded_gaussian", 230.0, 0.0), ("thresholded_laplace", 200.0, 0.0)]
    ]  # fmt: skip
    text = "\n".join(_claims(pd.DataFrame(rows)))
    assert text.count("**met**") == 2 and "Why" not in text
    rows[-1].update(val_loss=900.0, feature_collapse=0.9)
    text = "\n".join(_claims(pd.DataFrame(rows), "reduced training"))
    assert text.count("**not met**") == 2 and "feature collapse: thresholded_laplace 90%" in text
    assert "reduced training" in text
    one = "\n".join(_claims(pd.DataFrame(rows[2:3])))  # a run of one prior has no order to compare
    assert "Ordering of the variational methods by validation loss: **not assessed**" in one


def test_run_patches_rejects_bad_options(tmp_path):
    with pytest.raises(ValueError, match="methods"):
        run_patches(tmp_path, methods=["fista", "nope"], quick=True)
    with pytest.raises(ValueError, match="seeds"):
        run_patches(tmp_path, seeds=0, quick=True)
    with pytest.raises(ValueError, match="n_train"):
        run_patches(tmp_path, n_train=0, quick=True)


def test_registered_and_images_in_registry():
    assert "patches" in BENCHMARKS
    files = {f["path"] for f in registry()["olshausen_images"]["files"]}
    assert {f"olshausen_sparsenet_images/image{i}" for i in range(10)} | {"olshausen_sparsenet_images/header"} <= files
