"""``scsparse fit`` and ``scsparse demo`` check every path and option before any work, never replace a file they
were not told to, and never write a diverged fit.
"""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")

import anndata as ad  # noqa: E402
import h5py  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import scsparse  # noqa: E402
from scsparse.cli import main  # noqa: E402


@pytest.fixture
def input_file(counts_factory, tmp_path):
    path = tmp_path / "in.h5ad"
    adata = counts_factory(n_obs=120, n_vars=30)
    adata.obsm["X_umap"] = np.random.default_rng(0).normal(size=(adata.n_obs, 2))
    adata.write_h5ad(path)
    return path


@pytest.fixture
def no_training(monkeypatch):
    """Fail the test if a fit starts: the errors below must come before it."""

    def refuse(*args, **kwargs):
        raise AssertionError("training started before the paths were checked")

    monkeypatch.setattr(scsparse.tl, "sparse_vae", refuse)


def _fit(input_file, out, *extra) -> int:
    return main(["fit", str(input_file), "--out", str(out), "--layer", "counts", "--max-epochs", "1", *extra])


def test_output_paths_are_checked_before_training(input_file, tmp_path, capsys, no_training):
    notes = tmp_path / "notes.txt"
    notes.write_text("x")
    assert _fit(input_file, tmp_path / "out.h5ad", "--figures", str(notes)) == 2
    assert "--figures" in capsys.readouterr().err and notes.read_text() == "x"
    assert _fit(input_file, notes / "out.h5ad") == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    folder = tmp_path / "somedir"
    folder.mkdir()
    assert _fit(input_file, folder, "--overwrite") == 2
    assert "is a folder" in capsys.readouterr().err
    assert _fit(input_file, tmp_path / "out.h5ad", "--figures", str(notes / "figs")) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


def test_figures_do_not_replace_files_without_overwrite(input_file, tmp_path, capsys, no_training):
    figs = tmp_path / "figs"
    figs.mkdir()
    (figs / "factors.md").write_text("my notes")
    (figs / "other.txt").write_text("unrelated")
    assert _fit(input_file, tmp_path / "out.h5ad", "--figures", str(figs)) == 2
    err = capsys.readouterr().err
    assert "factors.md" in err and "--overwrite" in err
    assert (figs / "factors.md").read_text() == "my notes"


def test_a_hard_link_to_the_input_is_the_input(input_file, tmp_path, capsys, no_training):
    link = tmp_path / "hard.h5ad"
    os.link(input_file, link)
    assert _fit(input_file, link, "--overwrite") == 2
    assert "must differ from the input" in capsys.readouterr().err


def test_a_key_a_file_cannot_hold_is_a_usage_error(input_file, tmp_path, capsys, no_training):
    with pytest.raises(SystemExit) as info:
        _fit(input_file, tmp_path / "out.h5ad", "--key-added", "a/b")
    assert info.value.code == 2 and "contains '/'" in capsys.readouterr().err
    assert not (tmp_path / "out.h5ad").exists()


def test_an_hdf5_file_that_is_not_an_anndata_is_an_input_error(tmp_path, capsys, no_training):
    path = tmp_path / "plain.h5"
    with h5py.File(path, "w") as f:
        f["data"] = np.arange(3)
    assert main(["fit", str(path), "--out", str(tmp_path / "out.h5ad")]) == 2
    err = capsys.readouterr().err
    assert "could not read" in err and "Traceback" not in err


def test_a_diverged_fit_exits_2_with_the_advice_and_writes_nothing(input_file, tmp_path, capsys):
    out = tmp_path / "out.h5ad"
    out.write_bytes(b"an earlier result")
    code = _fit(input_file, out, "--lr", "1000", "--max-epochs", "3", "--n-hidden", "16", "--overwrite", "--quiet")
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "Training diverged in epoch" in err and "lower lr" in err
    assert out.read_bytes() == b"an earlier result"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_the_output_replaces_an_earlier_one_whole(input_file, tmp_path, capsys):
    out = tmp_path / "out.h5ad"
    out.write_bytes(b"an earlier result")
    assert _fit(input_file, out, "--n-hidden", "16", "--overwrite", "--quiet", *RESCUE) in (0, 3)
    assert "sparsevae" in ad.read_h5ad(out).uns
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.h5ad", "out.h5ad"]


RESCUE = ["--batch-size", "16", "--w-init", "1.0"]


def test_demo_checks_its_options_and_folder_before_loading_the_data(monkeypatch, tmp_path, capsys):
    def refuse():
        raise AssertionError("the data were loaded before the options were checked")

    monkeypatch.setattr(scsparse.data, "kang_pbmc", refuse)
    folder = tmp_path / "demo"
    assert main(["demo", "--out", str(folder), "--lr", "-1"]) == 2
    assert "lr must be a number > 0" in capsys.readouterr().err and not folder.exists()
    folder.mkdir()
    (folder / "report.md").write_text("mine")
    (folder / "result.h5ad").write_text("mine too")
    assert main(["demo", "--out", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "report.md" in err and "result.h5ad" in err and "--overwrite" in err
    assert (folder / "report.md").read_text() == "mine"
