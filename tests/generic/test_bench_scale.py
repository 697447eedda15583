"""Scaling measurements (scsparse.generic.benchmarks._speed._scale) at tiny sizes."""

from __future__ import annotations

import math

import anndata as ad
import numpy as np
import pytest
import scipy.sparse as sp

from scsparse.generic.benchmarks._speed import _scale as _speed_scale


def test_simulated_h5ad_written_in_chunks_reads_back_backed(tmp_path, monkeypatch):
    monkeypatch.setattr(_speed_scale, "_WRITE_ELEMENTS", 30 * 7)  # 7-row chunks: 15 appends for 100 cells
    info = _speed_scale.write_simulated_h5ad(tmp_path / "a.h5ad", n_cells=100, n_genes=30, seed=3)
    backed = ad.read_h5ad(tmp_path / "a.h5ad", backed="r")
    assert backed.shape == (100, 30) and backed.X.format == "csr"
    counts = backed.X[:]
    assert sp.issparse(counts) and counts.nnz == info["nnz"]
    dense = counts.toarray()
    assert (dense >= 0).all() and np.array_equal(dense, np.round(dense))
    assert (dense.sum(0) > 0).all() and (dense.sum(1) > 0).all()  # usable by the models as they are
    assert 0.3 < dense.mean() < 10 and info["file_mb"] > 0
    _speed_scale.write_simulated_h5ad(tmp_path / "b.h5ad", n_cells=100, n_genes=30, seed=3)
    assert np.array_equal(ad.read_h5ad(tmp_path / "b.h5ad").X.toarray(), dense)  # chunking keeps the seed's data
    # more genes than cells: every gene still has a count
    _speed_scale.write_simulated_h5ad(tmp_path / "c.h5ad", n_cells=5, n_genes=40, seed=0)
    assert (ad.read_h5ad(tmp_path / "c.h5ad").X.toarray().sum(0) > 0).all()


def _in_process(spec, timeout):
    return {**_speed_scale._train_job(spec), "wall_seconds": 0.0}


def test_cell_scaling_tidy_rows_one_epoch_each(monkeypatch, tmp_path):
    monkeypatch.setattr(_speed_scale, "_run_in_subprocess", _in_process)  # same job, without a fresh interpreter
    df = _speed_scale.cell_scaling(
        n_cells=(96, 200), n_genes=30, batch_size=32, n_hidden=16, n_latent=4, workdir=tmp_path
    )
    assert list(df.columns) == _speed_scale.SCALE_COLUMNS
    assert df["experiment"].eq("cells").all() and df["backed"].all() and df["n_genes"].eq(30).all()
    assert df["n_cells"].tolist() == [96, 200]
    assert df["n_steps_per_epoch"].tolist() == [math.ceil(96 / 32), math.ceil(200 / 32)]
    assert df["steps_run"].tolist() == df["n_steps_per_epoch"].tolist() and not df["epoch_extrapolated"].any()
    assert (df["seconds_per_epoch"] > 0).all() and (df["peak_memory_mb"] > 0).all()
    assert df["cuda_peak_memory_mb"].isna().all()
    assert list(tmp_path.iterdir()) == []  # temporary files removed


def test_max_steps_extrapolates_the_epoch(monkeypatch, tmp_path):
    monkeypatch.setattr(_speed_scale, "_run_in_subprocess", _in_process)
    df = _speed_scale.cell_scaling(n_cells=(200,), n_genes=20, batch_size=16, max_steps=8, n_hidden=8, workdir=tmp_path)
    row = df.iloc[0]
    assert row["steps_run"] == 8 and row["n_steps_per_epoch"] == math.ceil(200 / 16) and row["epoch_extrapolated"]
    assert row["seconds_per_epoch"] == pytest.approx(row["seconds_per_step"] * row["n_steps_per_epoch"])


def test_gene_scaling_runs_in_a_fresh_process(tmp_path):
    ballast = np.ones(2**31 // 8)  # 2 GiB resident in this process: the child's peak must not include it
    df = _speed_scale.gene_scaling(n_genes=(50,), n_cells=64, batch_size=32, n_hidden=16, workdir=tmp_path)
    row = df.iloc[0]
    assert row["experiment"] == "genes" and row["n_genes"] == 50 and row["n_cells"] == 64
    assert row["epochs"] == 2 and row["n_steps_per_epoch"] == 2
    assert row["seconds_per_step"] == pytest.approx(row["seconds_per_epoch"] / 2)
    # the child's own peak: at least what torch and scvi-tools take once imported, far below a stray GB
    assert 100 < row["rss_after_import_mb"] <= row["peak_memory_mb"] < 2_000
    del ballast
    assert row["wall_seconds"] > row["setup_seconds"] > 0


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="n_genes"):
        _speed_scale.gene_scaling(n_genes=())
    with pytest.raises(ValueError, match="n_cells"):
        _speed_scale.cell_scaling(n_cells=(0,))
    with pytest.raises(ValueError, match="device"):
        _speed_scale.cell_scaling(n_cells=(10,), device="tpu")
    with pytest.raises(ValueError, match="batch_size"):
        _speed_scale.gene_scaling(n_genes=(10,), batch_size=0)


@pytest.mark.slow
def test_failing_child_reports_its_error(tmp_path):
    spec = {"path": str(tmp_path / "missing.h5ad"), "n_cells": 1, "n_genes": 1, "n_threads": 1}
    with pytest.raises(RuntimeError, match="exit code"):
        _speed_scale._run_in_subprocess(spec, timeout=300)
