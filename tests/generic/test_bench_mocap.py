"""The motion-capture benchmark (oi-VAE Tables 1-2): top joints, data preparation, the runner."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scsparse.generic.benchmarks import run
from scsparse.generic.benchmarks._mocap._run import RESULT_COLUMNS, prepare_mocap, run_mocap, top_joints


def test_top_joints_orders_factors_and_joints_by_group_norm() -> None:
    L = np.array([[0.0, 2.0, 0.0], [1.0, 0.5, 0.0], [3.0, 0.0, 0.0], [0.2, 0.1, 0.0]])
    tops = top_joints(L, ["head", "lfemur", "ltibia", "root"], n_top=3)
    assert [t["factor"] for t in tops] == [1, 2, 3]  # totals 4.2, 2.6, 0
    assert tops[0]["joints"] == ["left lower leg", "left upper leg", "root"]
    assert tops[0]["norms"] == [3.0, 1.0, 0.2]
    assert tops[1]["joints"] == ["head", "left upper leg", "root"]
    assert tops[2]["joints"] == [] and tops[2]["total"] == 0.0  # a pruned factor lists no joint


def test_prepare_mocap_scales_by_the_training_pool_and_drops_constant_angles(shared_data: Path) -> None:
    split = prepare_mocap()
    assert split.X_pool.shape[1] == split.X_test.shape[1] == 53
    assert len(set(split.joints)) == 25
    assert split.dropped == [
        "lclavicle_ry",
        "lclavicle_rz",
        "lfingers_rx",
        "rclavicle_ry",
        "rclavicle_rz",
        "rfingers_rx",
    ]
    assert np.allclose(split.X_pool.min(0), 0.0) and np.allclose(split.X_pool.max(0), 1.0)
    assert split.X_test.shape[0] == 315 and 11 not in set(split.trial_pool.tolist())
    assert split.train_rows([1, 2]).shape[0] == 316 + 329
    with pytest.raises(ValueError, match="hold it out"):
        prepare_mocap(train_trials=[1, 11], test_trial=11)


def test_run_mocap_quick_writes_results_summary_and_figure(shared_data: Path, tmp_path: Path) -> None:
    df = run("mocap", out=tmp_path, quick=True)
    assert list(df.columns) == list(RESULT_COLUMNS)
    assert sorted(df["method"].unique()) == ["VAE", "oi-VAE"]
    assert np.isfinite(df["test_ll"]).all()
    assert len(pd.read_csv(tmp_path / "results.csv")) == len(df)
    text = (tmp_path / "summary.md").read_text()
    for needle in ("## Provenance", "trial 11", "Table 2", "Top 3 joints", "Reduced setting", "brisk"):
        assert needle in text
    tops = pd.read_csv(tmp_path / "top_joints.csv")
    assert len(tops) == 16 and tops["total_norm"].is_monotonic_decreasing
    assert (tmp_path / "mocap.png").stat().st_size > 10_000


def test_run_mocap_rejects_bad_options(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="n_trials"):
        run_mocap(tmp_path, n_trials=[10])
    with pytest.raises(ValueError, match="configs"):
        run_mocap(tmp_path, configs=[("PCA", 4)])
    with pytest.raises(ValueError, match="seeds"):
        run_mocap(tmp_path, seeds=0)
    with pytest.raises(ValueError, match="theta_prior"):
        run_mocap(tmp_path, theta_prior="none")
