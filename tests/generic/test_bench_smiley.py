"""The smiley benchmark: latent-attribute correlation of VSC and beta-VAE (Tonolini et al. 2019)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scsparse.generic.benchmarks import BENCHMARKS
from scsparse.generic.benchmarks._smiley._run import RESULT_COLUMNS, attribute_correlation, run_smiley


def test_attribute_correlation_finds_the_best_dimension_whatever_its_sign_and_position():
    rng = np.random.default_rng(0)
    attrs = rng.normal(size=(2000, 3))
    noise = rng.normal(size=2000)
    codes = np.column_stack([noise, -2.0 * attrs[:, 2], attrs[:, 0] + 0.5 * rng.normal(size=2000), np.ones(2000)])
    corr = attribute_correlation(codes, attrs)
    assert corr[2] == pytest.approx(1.0)
    assert corr[0] == pytest.approx(1 / np.sqrt(1.25), abs=0.03)
    assert corr[1] < 0.1  # attribute 1 is in no dimension


def test_attribute_correlation_edge_cases():
    attrs = np.column_stack([np.arange(10.0), np.zeros(10)])
    out = attribute_correlation(np.arange(10.0)[:, None], attrs)
    assert out[0] == pytest.approx(1.0) and np.isnan(out[1])  # a constant attribute has no correlation
    assert attribute_correlation(np.ones((10, 2)), attrs)[0] == 0.0  # constant codes correlate with nothing
    with pytest.raises(ValueError, match="same rows"):
        attribute_correlation(np.zeros((5, 2)), np.zeros((6, 2)))


def test_run_smiley_quick(shared_data, tmp_path):
    df = run_smiley(tmp_path, seeds=1, quick=True, verbose=False)
    assert list(df.columns) == list(RESULT_COLUMNS) and list(df["method"]) == ["vsc", "beta_vae"]
    assert df[["corr_all", "corr_presence", "corr_values"]].apply(lambda c: c.between(0, 1)).all().all()
    vsc, vae = df.set_index("method").loc["vsc"], df.set_index("method").loc["beta_vae"]
    assert vsc["active_fraction"] < vae["active_fraction"]  # spike-and-slab codes are sparser
    assert np.isfinite(df["heldout_elbo"]).all() and (df["heldout_elbo"] < 0).all()  # Bernoulli: log p < 0
    summary = (tmp_path / "summary.md").read_text()
    assert "test split only" in summary and "met" in summary
    assert (tmp_path / "smiley_correlation.png").is_file()
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "results.csv"), df, check_dtype=False)


def test_run_smiley_rejects_bad_options(tmp_path):
    assert "smiley" in BENCHMARKS
    with pytest.raises(ValueError, match="alpha"):
        run_smiley(tmp_path, alpha=1.5, quick=True)
    with pytest.raises(ValueError, match="n_latent"):
        run_smiley(tmp_path, n_latent=0, quick=True)


def test_attribute_correlation_mask_restricts_rows():
    rng = np.random.default_rng(1)
    present = rng.random(1000) < 0.5
    value = rng.normal(size=1000)
    codes = np.where(present, value, 0.0)[:, None]  # the value is visible only where the feature is present
    attrs = value[:, None]
    unmasked = attribute_correlation(codes, attrs)[0]
    masked = attribute_correlation(codes, attrs, present[:, None])[0]
    assert masked == pytest.approx(1.0) and unmasked < 0.8
    with pytest.raises(ValueError, match="mask"):
        attribute_correlation(codes, attrs, np.ones((1000, 2), dtype=bool))
