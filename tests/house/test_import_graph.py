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
    ("scsparse._demo", "scsparse.cli", "scsparse._cli_output", "scsparse.generic"),
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


GENERIC = "scsparse.generic"


def _in_generic(module: str) -> bool:
    return module == GENERIC or module.startswith(GENERIC + ".")


def _import_sites(module: str) -> list[tuple[ast.stmt, str, str | None, bool]]:
    """Every import in ``module``'s file as ``(node, origin, name, in_function)``: ``from origin import name``, or
    ``import origin`` with ``name`` ``None``; ``in_function`` when it runs only once a function is called."""
    path = _modules()[module]
    base = module if path.name == "__init__.py" else module.rpartition(".")[0]
    sites: list[tuple[ast.stmt, str, str | None, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.Import):
            sites.extend((node, alias.name, None, in_function) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base.split(".")
                origin = ".".join(anchor[: len(anchor) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            sites.extend((node, origin, alias.name, in_function) for alias in node.names)
        inside = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(ast.parse(path.read_text()), False)
    return sites


def _core_imports_of_generic() -> list[str]:
    """Imports of :mod:`scsparse.generic` outside it, but the command line's inside a function (its ``bench``)."""
    offending = []
    for module in _modules():
        if _in_generic(module):
            continue
        for node, origin, name, in_function in _import_sites(module):
            target = _resolve(f"{origin}.{name}" if name else origin)
            if target and _in_generic(target) and not (module == "scsparse.cli" and in_function):
                offending.append(f"{module}:{node.lineno} -> {target}")
    return offending


def test_the_core_never_imports_the_generic_subpackage():
    """The core (models, tools, plots, the demo) never reaches into :mod:`scsparse.generic`: the baselines' blocks,
    models, metrics and benchmarks are a client built on the core, not the other way round. The command line's
    ``bench`` loads the benchmarks when it runs, inside the command, never when the command line is imported."""
    assert _core_imports_of_generic() == []


def test_the_house_rule_sees_an_import_of_the_generic_subpackage(monkeypatch, tmp_path):
    """The rule above fails on a core module that imports :mod:`scsparse.generic`, at module level or lazily."""
    demo = tmp_path / "_demo.py"
    demo.write_text(
        "from scsparse.generic.metrics import match_factors\n\n"
        "def run():\n    from scsparse.generic import benchmarks\n    return benchmarks, match_factors\n"
    )
    modules = {**_modules(), "scsparse._demo": demo}
    monkeypatch.setattr(sys.modules[__name__], "_modules", lambda: modules)
    assert _core_imports_of_generic() == [
        "scsparse._demo:1 -> scsparse.generic.metrics",
        "scsparse._demo:4 -> scsparse.generic.benchmarks",
    ]


def test_importing_the_core_does_not_load_the_generic_subpackage():
    code = (
        "import sys, scsparse, scsparse.cli, scsparse._demo, scsparse.utils, scsparse.data, scsparse.results, "
        "scsparse.tl, scsparse.pl, scsparse.nn, scsparse.module, scsparse.train, scsparse.model; "
        "print(sorted(m for m in sys.modules if m.startswith('scsparse.generic')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def _private_imports_of_generic() -> list[str]:
    """Imports inside :mod:`scsparse.generic` of a private name: a core module or name with a leading underscore
    (``scsparse._io``, ``scsparse.data._simulate``), or a private module of another generic package than the
    importer's own (``scsparse.generic.models._oivae`` from the benchmarks)."""
    offending = []
    for module, path in _modules().items():
        if not _in_generic(module):
            continue
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node, origin, name, _ in _import_sites(module):
            if not origin.startswith("scsparse"):
                continue
            parts = (f"{origin}.{name}" if name else origin).split(".")
            private = [i for i, part in enumerate(parts) if part.startswith("_") and not part.startswith("__")]
            if not private:
                continue
            owner = ".".join(parts[: private[0]])  # the package whose private business it is
            if _in_generic(owner) and (package == owner or package.startswith(owner + ".")):
                continue  # a package's own private modules are its way in
            offending.append(f"{module}:{node.lineno} -> {'.'.join(parts)}")
    return offending


def test_the_generic_subpackage_imports_only_public_names():
    """:mod:`scsparse.generic` uses the core as a user does, through its public names (:mod:`scsparse.utils` for
    the helpers the core is built on), and its own packages through each other's public names."""
    assert _private_imports_of_generic() == []


def test_the_house_rule_sees_a_private_import(monkeypatch, tmp_path):
    bench = tmp_path / "_x.py"
    bench.write_text(
        "from scsparse._io import write_csv\nfrom scsparse import _text\nimport scsparse._threads\n"
        "from scsparse.data._simulate import EQ9_FEATURE_NAMES\nfrom scsparse.model import _seeding\n"
        "from scsparse.generic.models._oivae import OIVAE\nfrom scsparse.tl import top_genes\n"
        "from scsparse.utils import write_text\nfrom . import _report\nfrom ._tables import markdown_table\n"
    )
    modules = {**_modules(), "scsparse.generic.benchmarks._x": bench}
    monkeypatch.setattr(sys.modules[__name__], "_modules", lambda: modules)
    found = [line for line in _private_imports_of_generic() if line.startswith("scsparse.generic.benchmarks._x:")]
    assert found == [
        "scsparse.generic.benchmarks._x:1 -> scsparse._io.write_csv",
        "scsparse.generic.benchmarks._x:2 -> scsparse._text",
        "scsparse.generic.benchmarks._x:3 -> scsparse._threads",
        "scsparse.generic.benchmarks._x:4 -> scsparse.data._simulate.EQ9_FEATURE_NAMES",
        "scsparse.generic.benchmarks._x:5 -> scsparse.model._seeding",
        "scsparse.generic.benchmarks._x:6 -> scsparse.generic.models._oivae.OIVAE",
    ]


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


BENCHMARKS_PACKAGE = "scsparse.generic.benchmarks"


def _benchmark_of(module: str, names: list[str]) -> str | None:
    """The registered benchmark whose folder (``benchmarks._NAME``) holds ``module``, else ``None`` (a shared module
    of the benchmarks, the dispatcher, or a module outside the benchmarks)."""
    if not module.startswith(BENCHMARKS_PACKAGE + "."):
        return None
    top = module.removeprefix(BENCHMARKS_PACKAGE + ".").split(".")[0]
    return top[1:] if top.startswith("_") and top[1:] in names else None


def _benchmarks_not_in_a_folder(modules: dict[str, Path], names: list[str]) -> list[str]:
    """The registered benchmarks that are not a package of their own (``benchmarks/_NAME/__init__.py``)."""
    return sorted(n for n in names if modules.get(f"{BENCHMARKS_PACKAGE}._{n}", Path()).name != "__init__.py")


def test_every_benchmark_is_a_folder():
    """A benchmark is a package, ``benchmarks/_NAME/``: ``_run`` (``run_NAME``), ``_settings`` where the summary
    shares the settings, a module per job (``_methods``, ``_scoring``, ...) and ``_summary``
    (``test_benchmark_shape``); what lies at the top of the benchmarks package is shared."""
    from scsparse.generic.benchmarks import BENCHMARKS

    assert _benchmarks_not_in_a_folder(_modules(), list(BENCHMARKS)) == []


def test_the_house_rule_sees_a_benchmark_that_is_not_a_folder(tmp_path):
    (tmp_path / "_bars").mkdir()
    modules = {
        f"{BENCHMARKS_PACKAGE}._bars": tmp_path / "_bars" / "__init__.py",
        f"{BENCHMARKS_PACKAGE}._bars._run": tmp_path / "_bars" / "_run.py",
        f"{BENCHMARKS_PACKAGE}._mocap": tmp_path / "_mocap.py",
    }
    assert _benchmarks_not_in_a_folder(modules, ["bars", "mocap", "text"]) == ["mocap", "text"]


def _crossings(graph: dict[str, set[str]], names: list[str]) -> set[tuple[str, str]]:
    """``(importer, benchmark)`` for every import of a benchmark's module by another benchmark or by a shared module
    (the importer named by its benchmark, or as the shared module it is)."""
    crossings = set()
    for module, targets in graph.items():
        if not module.startswith(BENCHMARKS_PACKAGE + "."):
            continue
        mine = _benchmark_of(module, names)
        for target in targets:
            theirs = _benchmark_of(target, names)
            if theirs is not None and theirs != mine:
                crossings.add((mine or module, theirs))
    return crossings


def test_a_benchmark_imports_no_other_benchmark():
    """A benchmark's modules import their own folder's and the shared floor (fits, scores, reports), never another
    benchmark's; the shared modules import no benchmark's."""
    from scsparse.generic.benchmarks import BENCHMARKS

    assert _crossings(_imports(), list(BENCHMARKS)) == set()


def test_the_house_rule_sees_a_benchmark_importing_another():
    bench = BENCHMARKS_PACKAGE
    graph = {
        f"{bench}._speed._run": {f"{bench}._speed._timing", f"{bench}._stability._halves", f"{bench}._tables"},
        f"{bench}._tables": {f"{bench}._text._run"},
        f"{bench}._stability._halves": {f"{bench}._tables"},
    }
    assert _crossings(graph, ["speed", "stability", "text"]) == {("speed", "stability"), (f"{bench}._tables", "text")}


def _shared_modules_of_one_benchmark(graph: dict[str, set[str]], names: list[str]) -> list[str]:
    """The benchmarks' modules outside every benchmark's folder that serve fewer than two benchmarks (directly or
    through other such modules; the dispatcher, the package itself, counts as serving them all)."""
    prefix = BENCHMARKS_PACKAGE + "."
    modules = [m for m in graph if m.startswith(prefix)]
    importers = {m: [i for i in [*modules, BENCHMARKS_PACKAGE] if m in graph.get(i, ())] for m in modules}

    def served(module: str) -> set[str]:
        found, todo, seen = set(), [module], {module}
        while todo:
            for importer in importers.get(todo.pop(), []):
                if importer in seen:
                    continue
                seen.add(importer)
                owner = _benchmark_of(importer, names) if importer.startswith(prefix) else "the dispatcher"
                if owner is None:
                    todo.append(importer)
                else:
                    found.add(owner)
        return found

    return sorted(m for m in modules if _benchmark_of(m, names) is None and len(served(m)) < 2)


def test_a_shared_benchmark_module_serves_more_than_one_benchmark():
    """A module at the top of the benchmarks package (outside every benchmark's folder) is shared, so more than one
    benchmark uses it; a helper of one benchmark goes in that benchmark's folder (``_speed/_scale.py``), where the
    crossing rule above sees it as the benchmark's own."""
    from scsparse.generic.benchmarks import BENCHMARKS

    assert _shared_modules_of_one_benchmark(_imports(), list(BENCHMARKS)) == []


def test_the_house_rule_sees_a_helper_of_one_benchmark_outside_its_folder():
    bench = BENCHMARKS_PACKAGE
    graph = {
        f"{bench}._speed": {f"{bench}._speed._run"},
        f"{bench}._speed._run": {f"{bench}._scale", f"{bench}._tables", f"{bench}._speed._timing"},
        f"{bench}._speed._timing": {f"{bench}._tables"},
        f"{bench}._text._run": {f"{bench}._tables"},
        f"{bench}._scale": set(),
        f"{bench}._tables": set(),
    }
    assert _shared_modules_of_one_benchmark(graph, ["speed", "text"]) == [f"{bench}._scale"]
