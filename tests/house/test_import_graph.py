"""Facts of the package's import graph: no circle, imports flow one way, light subpackages stay light."""

from __future__ import annotations

import ast
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "scsparse"

#: The floors of the house, lowest first: a module may import its own floor and those below, never above.
FLOORS: list[tuple[str, ...]] = [
    (
        "scsparse._checks",
        "scsparse._io",
        "scsparse._matrix",
        "scsparse._options",
        "scsparse._provenance",
        "scsparse._text",
        "scsparse._threads",
        "scsparse.utils",
    ),
    ("scsparse.nn", "scsparse.results", "scsparse.data", "scsparse.generic.datasets", "scsparse.generic.nn"),
    ("scsparse.module", "scsparse.train", "scsparse.generic.models", "scsparse.generic.metrics"),
    ("scsparse.model",),
    ("scsparse.tl", "scsparse.pl"),
    ("scsparse.generic.benchmarks",),
    ("scsparse._demo", "scsparse.cli", "scsparse.generic"),
]


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _resolve(name: str) -> str | None:
    """The scsparse module that ``name`` (a module or a name inside one) lives in."""
    modules = _modules()
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


@cache
def _imports() -> dict[str, set[str]]:
    """Module -> the scsparse modules it imports (anywhere in the file: module level, functions, TYPE_CHECKING)."""
    graph: dict[str, set[str]] = {}
    for module, path in _modules().items():
        is_package = path.name == "__init__.py"
        base = module if is_package else module.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    anchor = base.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    origin = ".".join(anchor + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                names = [f"{origin}.{a.name}" for a in node.names]
            else:
                continue
            targets |= {t for t in map(_resolve, names) if t and t.startswith("scsparse")}
        graph[module] = targets - {module}
    return graph


def _floor(module: str) -> int | None:
    """The floor of the longest prefix in :data:`FLOORS` that names ``module`` or a package holding it."""
    matches = [
        (len(prefix), i)
        for i, floor in enumerate(FLOORS)
        for prefix in floor
        if module == prefix or module.startswith(prefix + ".")
    ]
    return max(matches)[1] if matches else None


def test_every_module_has_a_floor():
    assert [m for m in _modules() if m != "scsparse" and _floor(m) is None] == []


def test_no_import_runs_up_a_floor():
    upward = [
        f"{m} -> {t}"
        for m, targets in _imports().items()
        for t in sorted(targets)
        if m != "scsparse" and t != "scsparse" and _floor(t) > _floor(m)
    ]
    assert upward == []


def test_no_import_circle():
    graph = _imports()
    circles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                circles.append(path[path.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    assert circles == []


def test_models_do_not_import_the_analysis_layers():
    offending = [
        f"{m} -> {t}"
        for m, targets in _imports().items()
        if m.startswith("scsparse.model")
        for t in targets
        if t.startswith(("scsparse.tl", "scsparse.pl"))
    ]
    assert offending == []


@pytest.mark.parametrize("modules", ["scsparse.tl, scsparse.pl", "scsparse.results"])
def test_reading_results_does_not_import_torch_or_scvi(modules):
    code = f"import {modules}, sys; print(sorted(m for m in ('torch', 'scvi', 'lightning') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"


def test_public_names_are_imported_from_their_package():
    """``from scsparse.nn._mlp import MLP`` where ``scsparse.nn`` exports ``MLP``: import it from the package."""
    import importlib

    offending = []
    for module, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if not (
                isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("scsparse.")
            ):
                continue
            parts = node.module.split(".")
            private = [i for i, part in enumerate(parts) if part.startswith("_")]
            if not private:
                continue
            package = ".".join(parts[: private[0]])
            if module == package or module.startswith(package + "."):
                continue  # inside the package its private modules are the way in
            public = set(getattr(importlib.import_module(package), "__all__", ()))
            served = [a.name for a in node.names if a.name in public]
            if served:
                offending.append(f"{module}: from {node.module} import {', '.join(served)}")
    assert offending == []


def test_only_the_generic_subpackage_imports_it():
    """The core (models, tools, plots) never reaches into :mod:`scsparse.generic`: the baselines' blocks, models,
    metrics and benchmarks are built on the core, not the other way round. The command line runs benchmarks."""
    offending = [
        f"{m} -> {t}"
        for m, targets in _imports().items()
        if not m.startswith("scsparse.generic") and m not in ("scsparse.cli", "scsparse._demo")
        for t in sorted(targets)
        if t.startswith("scsparse.generic")
    ]
    assert offending == []


@cache
def _core_references() -> dict[str, set[str]]:
    """Name -> the core modules (outside :mod:`scsparse.generic` and the package files) whose code uses it."""
    used: dict[str, set[str]] = {}
    for module, path in _modules().items():
        if module.startswith("scsparse.generic") or path.name == "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Name):
                used.setdefault(node.id, set()).add(module)
            elif isinstance(node, ast.Attribute):
                used.setdefault(node.attr, set()).add(module)
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    used.setdefault(alias.name, set()).add(module)
    return used


def test_nn_exports_only_what_the_models_build_on():
    """Every name :mod:`scsparse.nn` exports is used by the core's code (the models, or a block they are built
    from); what only the baselines use belongs in :mod:`scsparse.generic.nn`."""
    import scsparse.nn

    unused = [name for name in scsparse.nn.__all__ if not _core_references().get(name)]
    assert unused == []


def test_array_models_do_not_share_a_name_with_the_scvi_tools_models():
    """A reader tells ``scsparse.model.SparseVAE`` from the array model by name (``ArraySparseVAE``)."""
    import scsparse.generic.models
    import scsparse.model

    assert set(scsparse.generic.models.__all__) & set(scsparse.model.__all__) == set()


def test_the_former_array_model_name_still_works_with_a_warning():
    import scsparse.generic.models

    with pytest.warns(FutureWarning, match="ArraySparseVAE"):
        assert scsparse.generic.models.SparseVAE is scsparse.generic.models.ArraySparseVAE


def test_no_module_reaches_into_another_modules_private_names():
    """What two modules share is named without a leading underscore (their modules are private already); an
    underscore name is its own module's business. Importing a private *module* (``from . import _report``) is fine."""
    modules = _modules()
    offending = []
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        base = module if is_package else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                anchor = base.split(".")
                origin = ".".join(anchor[: len(anchor) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            if not origin.startswith("scsparse"):
                continue
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and f"{origin}.{alias.name}" not in modules:
                    offending.append(f"{module}: from {origin} import {alias.name}")
    assert offending == []


def _benchmark_of(module: str, names: list[str]) -> str | None:
    """The registered benchmark whose modules include ``module`` (``_NAME`` and ``_NAME_*``), else ``None``."""
    stem = module.rpartition(".")[2]
    owners = [n for n in names if stem == f"_{n}" or stem.startswith(f"_{n}_")]
    return max(owners, key=len) if owners else None


def test_a_benchmark_imports_no_other_benchmark():
    """A benchmark's modules import their own and the shared floor (fits, scores, reports), never another
    benchmark's; the shared modules import no benchmark's."""
    from scsparse.generic.benchmarks import BENCHMARKS

    names = list(BENCHMARKS)
    prefix = "scsparse.generic.benchmarks."
    crossings = set()
    for module, targets in _imports().items():
        if not module.startswith(prefix):
            continue
        mine = _benchmark_of(module, names)
        for target in targets:
            theirs = _benchmark_of(target, names) if target.startswith(prefix) else None
            if theirs is not None and theirs != mine:
                crossings.add((mine or module, theirs))
    assert crossings == set()
