"""The fmnist benchmark: held-out ELBO against latent size, VSC vs VAE (Tonolini et al. 2019)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scsparse.generic.benchmarks import BENCHMARKS
from scsparse.generic.benchmarks._fmnist._run import RESULT_COLUMNS, run_fmnist
from scsparse.generic.benchmarks._vae_scores import active_fraction, heldout_elbo
from scsparse.generic.models import VAE, VSC


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    rng = np.random.default_rng(0)
    z = rng.normal(size=(300, 2))
    return (z @ rng.normal(size=(2, 10)) + 0.3 * rng.normal(size=(300, 10))).astype(np.float32)


def test_vae_elbo_is_below_the_importance_weighted_bound(data):
    model = VAE(n_latent=2, n_hidden=16, max_epochs=5, dropout_rate=0.0).fit(data)
    elbo = heldout_elbo(model, data, n_samples=50)
    iw = -model.heldout_nll(data, n_samples=200)
    assert np.isfinite(elbo) and elbo <= iw + 0.05
    assert heldout_elbo(model, data, n_samples=50) == pytest.approx(elbo)  # reproducible (seeded)


def test_vsc_elbo_and_sparsity(data):
    model = VSC(n_latent=4, alpha=0.2, n_pseudo_inputs=3, n_hidden=16, max_epochs=3).fit(data)
    assert heldout_elbo(model, data, n_samples=20) == pytest.approx(-model.heldout_nll(data, n_samples=20), rel=0.05)
    frac = active_fraction(model, data)
    assert 0.0 <= frac <= 1.0
    assert frac == pytest.approx(float((model.spike_probabilities(data) > 0.5).mean()))


def test_run_fmnist_quick(shared_data, tmp_path):
    df = run_fmnist(tmp_path, quick=True, latent_sizes=(3, 6), verbose=False)
    assert list(df.columns) == list(RESULT_COLUMNS)
    assert len(df) == 4 and set(df["n_latent"]) == {3, 6} and set(df["method"]) == {"vsc", "vae"}
    assert np.isfinite(df[["heldout_elbo", "heldout_iwae"]]).all().all()
    assert (df["heldout_iwae"] < 0).all()  # binarised images, Bernoulli likelihood: log p(x) < 0
    vae = df[df.method == "vae"]
    assert (vae["heldout_iwae"] >= vae["heldout_elbo"] - 1.0).all()
    summary = (tmp_path / "summary.md").read_text()
    assert "Reduced setting" in summary and "Sparser codes" in summary
    assert (tmp_path / "fmnist_elbo.png").is_file()
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "results.csv"), df, check_dtype=False)


def test_run_fmnist_rejects_bad_options(tmp_path):
    assert "fmnist" in BENCHMARKS
    with pytest.raises(ValueError, match="latent_sizes"):
        run_fmnist(tmp_path, latent_sizes=(0,), quick=True)
    with pytest.raises(ValueError, match="seeds"):
        run_fmnist(tmp_path, seeds=0, quick=True)
    with pytest.raises(ValueError, match="likelihood"):
        run_fmnist(tmp_path, likelihood="poisson", quick=True)


def test_prepare_binarises_or_scales():
    from scsparse.generic.benchmarks._fmnist._run import _prepare

    images = np.array([[[0, 127], [128, 255]]], dtype=np.uint8)
    np.testing.assert_array_equal(_prepare(images, "bernoulli"), [[0.0, 0.0, 1.0, 1.0]])
    np.testing.assert_allclose(_prepare(images, "normal"), [[0.0, 127 / 255, 128 / 255, 1.0]])
