import math

import numpy as np
import pandas as pd
import pytest

from scsparse.generic.benchmarks import BENCHMARKS, run
from scsparse.generic.benchmarks._common import format_mean_sd, markdown_table
from scsparse.generic.benchmarks._synthetic import RESULT_COLUMNS, split_indices

EXPECTED_COLUMNS = [
    "method",
    "seed",
    "rho",
    "n_active",
    "w_fscore",
    "dci",
    "heldout_nll",
    "heldout_mse",
    "fit_seconds",
]


def test_run_synthetic_quick_writes_outputs(tmp_path):
    df = run("synthetic", out=tmp_path, seeds=1, rho=[0.4], quick=True, max_epochs=3)
    assert list(RESULT_COLUMNS) == EXPECTED_COLUMNS
    csv = pd.read_csv(tmp_path / "results.csv")
    assert list(csv.columns) == EXPECTED_COLUMNS
    assert len(csv) == 1
    row = csv.iloc[0]
    assert row["method"] == "SparseVAE"
    assert row["seed"] == 0 and row["rho"] == pytest.approx(0.4)
    for col in EXPECTED_COLUMNS[3:]:
        assert math.isfinite(float(row[col])), col
    assert 0 <= row["n_active"] <= 5
    assert 0.0 <= row["w_fscore"] <= 1.0 and 0.0 <= row["dci"] <= 1.0
    assert row["heldout_mse"] > 0 and row["fit_seconds"] > 0
    pd.testing.assert_frame_equal(df.reset_index(drop=True), csv, check_dtype=False)

    summary = (tmp_path / "summary.md").read_text()
    assert summary.index("Provenance") < summary.index("What ran") < summary.index("Results")
    for needle in ("scvi-tools", "torch threads", "SparseVAE", "rho", "not assessed", "claims"):
        assert needle in summary
    png = tmp_path / "synthetic.png"
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unknown_benchmark_lists_names(tmp_path):
    with pytest.raises(ValueError, match="synthetic"):
        run("no-such-benchmark", out=tmp_path)
    assert "synthetic" in BENCHMARKS
    assert not any(tmp_path.iterdir())


def test_split_is_fixed_and_disjoint():
    tr, te = split_indices(1000, seed=3)
    tr2, te2 = split_indices(1000, seed=3)
    np.testing.assert_array_equal(te, te2)
    assert len(te) == 200 and len(tr) == 800
    assert np.intersect1d(tr, te).size == 0
    assert not np.array_equal(te, split_indices(1000, seed=4)[1])


def test_markdown_table_mean_sd():
    df = pd.DataFrame({"method": ["A", "A", "B"], "rho": [0.4, 0.4, 0.4], "dci": [0.5, 0.7, 0.9]})
    table = markdown_table(df, ["method", "rho"], ["dci"])
    assert "| A | 0.4 | 0.600 ± 0.141 | 2 |" in table
    assert "| B | 0.4 | 0.900 | 1 |" in table
    assert format_mean_sd([1.0, float("nan")]) == "1.000 (1 nan)"


def test_run_rejects_unknown_option_and_name(tmp_path):
    with pytest.raises(ValueError, match="does not take 'device'"):
        run("synthetic", out=tmp_path, device="cpu")
    with pytest.raises(ValueError, match="Unknown benchmark"):
        run("no_such", out=tmp_path)


def test_run_all_indexes_and_reports_failures(monkeypatch, tmp_path):
    from scsparse.generic import benchmarks

    def ok(out, *, seeds=2, quick=False, max_epochs=None):
        return pd.DataFrame({"seed": range(seeds)})

    def broken(out, *, seeds=2, quick=False, max_epochs=None, rho=(0.4,)):
        raise FloatingPointError("diverged")

    monkeypatch.setattr(benchmarks, "BENCHMARKS", {"ok": ok, "broken": broken})
    with pytest.raises(RuntimeError, match="1 benchmark\\(s\\) failed: broken"):
        benchmarks.run_all(tmp_path, quick=True, rho=[0.1], device="cpu")
    index = pd.read_csv(tmp_path / "index.csv")
    assert list(index["benchmark"]) == ["ok", "broken"]
    assert index.loc[0, "status"] == "ok" and index.loc[0, "rows"] == 2
    assert "FloatingPointError: diverged" in index.loc[1, "status"]
    assert "[broken/summary.md]" in (tmp_path / "summary.md").read_text()
    assert benchmarks.run_all(tmp_path / "again", names=["ok"], seeds=3)["rows"].tolist() == [3]
