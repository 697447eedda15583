"""Every writer, killed at random points mid-write, leaves the earlier file intact or the new one complete.

Each run forks a process that writes the target over and over (each write a new, complete version), kills it with
SIGKILL after a random delay, and reads the target back: it must be one of the versions, whole. A kill cannot be
caught, so this is the worst case of an interruption (Ctrl+C and SIGTERM also remove the temporary file).
``SCSPARSE_FAULT_RUNS`` sets the runs per writer (default 8).
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import anndata as ad  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from scsparse import _io  # noqa: E402
from scsparse.pl._figure import finish  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

RUNS = int(os.environ.get("SCSPARSE_FAULT_RUNS", "8"))


def _adata(version: int) -> ad.AnnData:
    rng = np.random.default_rng(version)
    adata = ad.AnnData(rng.poisson(2.0, size=(1500, 60)).astype(np.float32))
    adata.obsm["X_factors"] = rng.normal(size=(1500, 40)).astype(np.float32)
    adata.uns["version"] = version
    return adata


def _text(version: int) -> str:
    return f"# report {version}\n" + "".join(f"- line {i} of version {version}\n" for i in range(20000))


def _table(version: int) -> pd.DataFrame:
    return pd.DataFrame({"version": version, "value": np.arange(40000)})


def _figure(version: int, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot(np.arange(200), np.sin(np.arange(200) / (version + 1)))
    finish(fig, show=False, save=path)  # what every plot of scsparse.pl does with save=
    plt.close(fig)


def _read_h5ad(path: Path) -> int:
    adata = ad.read_h5ad(path)
    assert adata.shape == (1500, 60) and adata.obsm["X_factors"].shape == (1500, 40)
    return int(adata.uns["version"])


def _read_text(path: Path) -> int:
    text = path.read_text()
    version = int(text.split("\n", 1)[0].removeprefix("# report "))
    assert text == _text(version)
    return version


def _read_table(path: Path) -> int:
    table = pd.read_csv(path)
    assert len(table) == 40000 and table["version"].nunique() == 1
    return int(table["version"].iloc[0])


def _read_figure(path: Path) -> int:
    image = plt.imread(path)  # a truncated PNG does not decode
    assert image.ndim == 3 and image.shape[0] > 100
    return 0


WRITERS: dict[str, tuple[str, Callable[[Path, int], object], Callable[[Path], int]]] = {
    "h5ad": ("result.h5ad", lambda path, v: _io.write_h5ad(_adata(v), path), _read_h5ad),
    "report": ("report.md", lambda path, v: _io.write_text(path, _text(v)), _read_text),
    "csv": ("enrichment.csv", lambda path, v: _io.write_csv(_table(v), path, index=False), _read_table),
    "figure": ("loadings.png", lambda path, v: _figure(v, path), _read_figure),
}


def _write_forever(write: Callable[[Path, int], object], path: Path) -> None:
    """The child: write versions 1, 2, 1, 2 ... until killed."""
    try:
        version = 1
        while True:
            write(path, version)
            version = 3 - version
    finally:
        os._exit(0)


def _time_one_write(write: Callable[[Path, int], object], path: Path) -> float:
    start = time.perf_counter()
    write(path, 0)
    return time.perf_counter() - start


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_writer_killed_mid_write_leaves_a_whole_file(writer, tmp_path):
    name, write, read = WRITERS[writer]
    target = tmp_path / name
    duration = _time_one_write(write, target)  # the earlier, good file
    assert read(target) == 0
    rng = random.Random(0)
    seen = set()
    for _ in range(RUNS):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            _write_forever(write, target)
        time.sleep(rng.uniform(0.2, 2.5) * duration)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        seen.add(read(target))  # raises if the file is not whole
        assert target.is_file()
    assert seen, "no run read the target back"
    leftovers = [p.name for p in tmp_path.iterdir() if p != target]
    assert all(p.startswith(f".{name}.") and _io.TEMPORARY_MARK in p for p in leftovers), leftovers


def test_an_interrupted_write_removes_its_temporary_file_and_keeps_the_old(tmp_path):
    target = tmp_path / "report.md"
    target.write_text("old")

    def interrupted(path: Path) -> None:
        path.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        with _io.atomic_path(target) as tmp:
            interrupted(tmp)
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]


def test_a_write_keeps_the_permissions_of_the_file_it_replaces(tmp_path):
    target = tmp_path / "report.md"
    target.write_text("old")
    target.chmod(0o640)
    _io.write_text(target, "new")
    assert target.read_text() == "new" and (target.stat().st_mode & 0o777) == 0o640


def test_a_folder_is_not_a_target(tmp_path):
    from scsparse._checks import InvalidInputError

    with pytest.raises(InvalidInputError, match="is a folder"):
        _io.write_text(tmp_path, "x")
    with pytest.raises(InvalidInputError, match="is not a folder"):
        _io.write_text(tmp_path / "missing" / "x.md", "x")


def test_a_figure_without_a_suffix_gets_the_default_format(tmp_path):
    fig, _ = plt.subplots()
    finish(fig, show=False, save=tmp_path / "plot")
    plt.close(fig)
    assert [p.name for p in tmp_path.iterdir()] == ["plot.png"]


def test_the_reports_and_plots_of_the_package_write_through_the_helper(monkeypatch, tmp_path, counts_factory):
    import scsparse

    replaced = []
    real = os.replace
    monkeypatch.setattr(_io.os, "replace", lambda src, dst: (replaced.append(Path(dst).name), real(src, dst)))
    adata = counts_factory(n_obs=120, n_vars=30)
    scsparse.tl.sparse_vae(
        adata, layer="counts", n_latent=3, max_epochs=1, model_kwargs={"n_hidden": 16},
        train_kwargs={"enable_progress_bar": False},
    )  # fmt: skip
    scsparse.tl.fit_report(adata, path=tmp_path / "factors.md")
    scsparse.pl.loadings_heatmap(adata, show=False, save=tmp_path / "heatmap.png", factors=[0, 1], pip_threshold=0.0)
    assert replaced == ["factors.md", "heatmap.png"]
