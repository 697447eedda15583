"""The shape of a benchmark: its summary in its folder's ``_summary``, every scvi-tools fit through the one helper."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "scsparse"
BENCHMARKS = PACKAGE / "generic" / "benchmarks"

#: The one helper that registers, builds and trains a scvi-tools model (``_fits.scvi_tools_fit``).
FITS = BENCHMARKS / "_fits.py"
FIT_HELPER = "scvi_tools_fit"
#: Calls that write a file: a summary module builds lines, its benchmark's ``_run`` writes them.
WRITERS = frozenset({"write_summary", "write_text"})


def _dotted(node: ast.expr) -> str:
    """``a.b.c`` for a name or an attribute chain, else ``""``."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    return ".".join([node.id, *reversed(parts)])


def _calls(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, dotted name)`` of every call of a name or an attribute chain."""
    return [(n.lineno, _dotted(n.func)) for n in ast.walk(tree) if isinstance(n, ast.Call) and _dotted(n.func)]


def _summary_out_of_place(folders: dict[str, Path]) -> list[str]:
    """What breaks "a benchmark's summary is written by its folder's ``_summary``", for each ``name -> folder``.

    A folder without ``_summary.py``; a ``_summary.py`` that defines no ``summary_lines`` (the lines of
    ``summary.md``, built without writing) or that writes a file itself (``write_summary``, ``write_text``); a
    ``_run.py`` that does not write them through ``write_summary`` (``_report``'s, the one writer); a
    ``summary_head`` call (the opening of every ``summary.md``) in any other module of the folder; a function of
    ``_run.py`` whose name says it writes or builds a summary.
    """
    found = []
    for name, folder in sorted(folders.items()):
        summary = folder / "_summary.py"
        if not summary.is_file():
            found.append(f"{name}: no _summary.py")
        else:
            tree = ast.parse(summary.read_text())
            if not any(isinstance(n, ast.FunctionDef) and n.name == "summary_lines" for n in tree.body):
                found.append(f"{name}/_summary.py defines no summary_lines")
            found += [
                f"{name}/_summary.py:{line} calls {func}"
                for line, func in _calls(tree)
                if func.rpartition(".")[2] in WRITERS
            ]
        run = folder / "_run.py"
        if run.is_file() and not any(
            func.rpartition(".")[2] == "write_summary" for _, func in _calls(ast.parse(run.read_text()))
        ):
            found.append(f"{name}/_run.py does not call write_summary")
        for path in sorted(folder.glob("*.py")):
            if path.name == "_summary.py":
                continue
            tree = ast.parse(path.read_text())
            found += [
                f"{name}/{path.name}:{line} calls {func}"
                for line, func in _calls(tree)
                if func.rpartition(".")[2] == "summary_head"
            ]
            if path.name == "_run.py":
                found += [
                    f"{name}/{path.name}:{n.lineno} defines {n.name}"
                    for n in tree.body
                    if isinstance(n, ast.FunctionDef) and "summary" in n.name
                ]
    return found


def _benchmark_folders() -> dict[str, Path]:
    from scsparse.generic.benchmarks import BENCHMARKS as NAMES

    return {name: BENCHMARKS / f"_{name}" for name in NAMES}


def test_every_benchmark_writes_its_summary_in_its_summary_module():
    """A benchmark is a folder (``_run``, its jobs, ``_summary``); the folder's ``_summary`` builds the lines of
    ``summary.md`` (``summary_lines``, opening with ``_report.summary_head``, which no other module calls) and
    ``_run`` writes them with ``_report.write_summary``; ``_run`` defines no summary writer of its own."""
    assert _summary_out_of_place(_benchmark_folders()) == []


def test_the_house_rule_sees_a_summary_written_in_the_run_module(tmp_path):
    for name in ("bars", "mocap", "text"):
        (tmp_path / f"_{name}").mkdir()
    (tmp_path / "_bars" / "_summary.py").write_text(
        "def write_summary(out, prov):\n    report.write_summary(out, [*summary_head('# Bars', prov)])\n"
    )
    (tmp_path / "_bars" / "_run.py").write_text("def run_bars(out):\n    write_summary(out, [])\n")
    (tmp_path / "_mocap" / "_run.py").write_text(
        "from .. import _report as report\n\n\ndef _write_summary(prov):\n    return report.summary_head('# M', prov)\n"
    )
    (tmp_path / "_text" / "_summary.py").write_text("def summary_lines(prov):\n    return []\n")
    (tmp_path / "_text" / "_run.py").write_text("def run_text(prov):\n    return [*summary_head('# Text', prov)]\n")
    folders = {name: tmp_path / f"_{name}" for name in ("bars", "mocap", "text")}
    assert _summary_out_of_place(folders) == [
        "bars/_summary.py defines no summary_lines",
        "bars/_summary.py:2 calls report.write_summary",
        "mocap: no _summary.py",
        "mocap/_run.py does not call write_summary",
        "mocap/_run.py:5 calls report.summary_head",
        "mocap/_run.py:4 defines _write_summary",
        "text/_run.py does not call write_summary",
        "text/_run.py:2 calls summary_head",
    ]


def _scvi_tools_builds(paths: list[Path], root: Path) -> list[str]:
    """Where a scvi-tools model is registered, built or seeded outside the one helper.

    A call of ``scvi.model.*`` or ``scvi.external.*`` (a model class, its ``setup_anndata``), or of a name imported
    from those packages; an assignment to ``scvi.settings.seed`` (the global seed the helper's ``seeded`` replaces).
    """
    found = []
    for path in paths:
        tree = ast.parse(path.read_text())
        where = path.relative_to(root).as_posix()
        imported = {
            alias.asname or alias.name
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and (n.module or "").startswith(("scvi.model", "scvi.external"))
            for alias in n.names
        }
        for line, func in _calls(tree):
            if func.startswith(("scvi.model.", "scvi.external.")) or func.split(".")[0] in imported:
                found.append(f"{where}:{line} calls {func}")
        for n in ast.walk(tree):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AugAssign) else []
            found += [
                f"{where}:{n.lineno} sets scvi.settings.seed" for t in targets if _dotted(t) == "scvi.settings.seed"
            ]
    return found


def test_no_scvi_tools_model_is_built_outside_the_one_helper():
    """Every scvi-tools peer of the benchmarks and metrics (SCVI, LDVAE, DRVI) is fitted by
    ``_fits.scvi_tools_fit``, which passes the class on; no other module builds, registers or seeds one."""
    paths = [p for p in sorted((PACKAGE / "generic").rglob("*.py")) if p != FITS]
    assert _scvi_tools_builds(paths, PACKAGE) == []


def test_the_house_rule_sees_a_scvi_tools_model_built_by_hand(tmp_path):
    peer = tmp_path / "peer.py"
    peer.write_text(
        "import scvi\n"
        "from scvi.external import DRVI as Drvi\n"
        "from scvi.model import LinearSCVI\n\n"
        "def fit(adata):\n"
        "    scvi.settings.seed = 0\n"
        "    scvi.model.SCVI.setup_anndata(adata)\n"
        "    a = scvi.model.SCVI(adata)\n"
        "    b = LinearSCVI(adata)\n"
        "    return a, b, Drvi, scvi_tools_fit(scvi.model.SCVI, adata, 0), scvi.settings.verbosity\n"
    )
    assert _scvi_tools_builds([peer], tmp_path) == [
        "peer.py:7 calls scvi.model.SCVI.setup_anndata",
        "peer.py:8 calls scvi.model.SCVI",
        "peer.py:9 calls LinearSCVI",
        "peer.py:6 sets scvi.settings.seed",
    ]


def _unseeded_steps(source: str) -> list[str]:
    """The steps of :data:`FIT_HELPER` (``setup_anndata``, the model's construction, ``train`` and the caller's
    block, its ``yield``) that do not run inside its ``with seeded(...)``."""
    helper = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == FIT_HELPER)
    cls = helper.args.args[0].arg
    seeded = [
        n
        for n in ast.walk(helper)
        if isinstance(n, ast.With)
        and any(_dotted(getattr(i.context_expr, "func", i.context_expr)) == "seeded" for i in n.items)
    ]
    inside = {id(m) for w in seeded for s in w.body for m in ast.walk(s)}
    steps = {
        "setup_anndata": lambda n: isinstance(n, ast.Call) and _dotted(n.func) == f"{cls}.setup_anndata",
        "the model": lambda n: isinstance(n, ast.Call) and _dotted(n.func) == cls,
        "train": lambda n: isinstance(n, ast.Call) and _dotted(n.func).endswith(".train"),
        "yield": lambda n: isinstance(n, ast.Yield),
    }
    return [
        step for step, is_step in steps.items() if not any(is_step(n) and id(n) in inside for n in ast.walk(helper))
    ]


def test_the_one_helper_fits_under_seeded():
    """``scvi_tools_fit`` registers, builds and trains the model, and runs the caller's block, inside
    ``scsparse.model.seeded``: the fit follows the seed and leaves the caller's random state as it was."""
    assert _unseeded_steps(FITS.read_text()) == []


def test_the_house_rule_sees_a_step_outside_seeded():
    source = (
        "def scvi_tools_fit(model_class, adata, seed):\n"
        "    model_class.setup_anndata(adata)\n"
        "    with seeded(seed):\n"
        "        fitted = model_class(adata)\n"
        "    fitted.train()\n"
        "    yield fitted\n"
    )
    assert _unseeded_steps(source) == ["setup_anndata", "train", "yield"]
