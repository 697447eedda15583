"""Execute the tutorial notebooks into ``docs/tutorials/`` for the documentation site (``make docs``).

Each notebook of ``tutorials/`` runs top to bottom in a fresh kernel of the running interpreter, inside a
temporary folder, with the settings of a real analysis (``--quick``: ``SCSPARSE_TUTORIAL_QUICK=1``, a few epochs
on a subset of the cells, for a fast look at the layout). The executed copy records what produced it: hashes of
the notebook and of the package's source, and the settings. A copy whose record matches is kept; the others are
executed again, two at a time by default. A cell that raises fails the run.

Usage: ``python docs/execute_tutorials.py [--quick] [--force] [--jobs N]``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "tutorials"
TARGET = Path(__file__).resolve().parent / "tutorials"
TIMEOUT_PER_CELL = 1800
RECORD_KEY = "scsparse_docs"


def package_hash() -> str:
    """SHA-256 over the package's Python sources (names and contents), so a code change re-executes."""
    digest = hashlib.sha256()
    for path in sorted((REPO / "scsparse").rglob("*.py")):
        digest.update(str(path.relative_to(REPO)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def record_for(source: Path, quick: bool, code_hash: str) -> dict[str, object]:
    """What an executed copy of ``source`` must record to be current."""
    return {
        "notebook_sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
        "package_sha256": code_hash,
        "quick": quick,
    }


def is_current(target: Path, record: dict[str, object]) -> bool:
    """Whether ``target`` exists and was executed from the same notebook, package source and settings."""
    import nbformat

    if not target.is_file():
        return False
    try:
        stored = nbformat.read(target, as_version=4).metadata.get(RECORD_KEY, {})
    except Exception:  # noqa: BLE001 (an unreadable copy is simply made again)
        return False
    return dict(stored) == record


def kernel_environment(quick: bool) -> dict[str, str]:
    """Environment of the kernels: this interpreter first on PATH, inline figures, offline data."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("MPLBACKEND", None)  # the kernel's inline backend stores the figures in the notebook
    env["PYTHONWARNINGS"] = "ignore"
    env.setdefault("SCSPARSE_OFFLINE", "1")
    if quick:
        env["SCSPARSE_TUTORIAL_QUICK"] = "1"
    else:
        env.pop("SCSPARSE_TUTORIAL_QUICK", None)
    return env


def execute(source: Path, target: Path, record: dict[str, object], quick: bool) -> float:
    """Run ``source`` in a fresh kernel and write it, outputs and record included, to ``target``."""
    import nbclient
    import nbformat

    os.environ.clear()
    os.environ.update(kernel_environment(quick))
    notebook = nbformat.read(source, as_version=4)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"scsparse-docs-{source.stem}-") as workdir:
        client = nbclient.NotebookClient(
            notebook, timeout=TIMEOUT_PER_CELL, kernel_name="python3", resources={"metadata": {"path": workdir}}
        )
        client.execute()
    notebook.metadata[RECORD_KEY] = record
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    """Execute the notebooks whose copy is missing or out of date; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small settings (SCSPARSE_TUTORIAL_QUICK=1)")
    parser.add_argument("--force", action="store_true", help="execute every notebook, current or not")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks executed at a time (default 2)")
    args = parser.parse_args(argv)

    sources = sorted(SOURCE.glob("*.ipynb"))
    if not sources:
        print(f"no notebooks in {SOURCE}", file=sys.stderr)
        return 1
    code_hash = package_hash()
    todo = []
    for source in sources:
        target = TARGET / source.name
        record = record_for(source, args.quick, code_hash)
        if args.force or not is_current(target, record):
            todo.append((source, target, record))
        else:
            print(f"{source.name}: current, kept")
    for stale in set(TARGET.glob("*.ipynb")) - {TARGET / s.name for s in sources}:
        stale.unlink()  # a tutorial that no longer exists
    if not todo:
        return 0

    mode = "quick settings" if args.quick else "full settings"
    print(f"executing {len(todo)} notebook(s) with {mode}, {max(1, args.jobs)} at a time ...", flush=True)
    start = time.perf_counter()
    failed = 0
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(execute, s, t, r, args.quick): s for s, t, r in todo}
        for future, source in futures.items():
            try:
                print(f"{source.name}: executed in {future.result():.0f} s", flush=True)
            except Exception as exc:  # noqa: BLE001 (report every failing notebook, then fail)
                failed += 1
                print(f"{source.name}: FAILED\n{exc}", file=sys.stderr, flush=True)
    print(f"tutorials: {time.perf_counter() - start:.0f} s in all", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
