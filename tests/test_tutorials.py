"""Every notebook in tutorials/ runs top to bottom (with ``SCSPARSE_TUTORIAL_QUICK=1``: small settings).

Notebooks read ``SCSPARSE_TUTORIAL_QUICK`` and, when it is set, train for a few epochs on a subset of the cells,
so the whole notebook runs in well under a minute. The kernel is the interpreter running the tests (its
``python3`` kernel spec), started in a temporary folder so nothing is written into the repository.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TUTORIALS = Path(__file__).resolve().parents[1] / "tutorials"
NOTEBOOKS = sorted(TUTORIALS.glob("*.ipynb"))
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
TIMEOUT_PER_CELL = 300


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")

    monkeypatch.setenv("SCSPARSE_TUTORIAL_QUICK", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYTHONWARNINGS", "ignore")
    if "SCSPARSE_DATA_DIR" not in os.environ and SHARED_DATA.is_dir():
        monkeypatch.setenv("SCSPARSE_DATA_DIR", str(SHARED_DATA))
    monkeypatch.setenv("SCSPARSE_OFFLINE", os.environ.get("SCSPARSE_OFFLINE", "1"))
    # Run the kernel with the interpreter of the tests (the package's environment).
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))

    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=TIMEOUT_PER_CELL,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    errors = [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert not errors, errors


def test_tutorials_exist() -> None:
    assert NOTEBOOKS, f"no notebooks in {TUTORIALS}"
