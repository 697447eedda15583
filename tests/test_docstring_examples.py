"""The examples in scsparse's docstrings.

An example that shows an output is a promise: it runs here and must print that output. The other examples are
usage sketches that need a trained model or a real data set (minutes each); they are checked statically: each
parses, and every call it makes into scsparse's API passes arguments the callee's signature accepts (so a
renamed parameter or function cannot leave a stale example behind).
"""

from __future__ import annotations

import ast
import copy
import doctest
import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import scsparse
from scsparse.model import MultiStudySparseVAE, SparseVAE

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _docstring_tests() -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests: dict[str, doctest.DocTest] = {}
    for info in pkgutil.walk_packages(scsparse.__path__, "scsparse."):
        module = importlib.import_module(info.name)
        for test in finder.find(module):
            if test.examples:
                tests.setdefault(test.name, test)
    return sorted(tests.values(), key=lambda t: t.name)


def _shows_output(test: doctest.DocTest) -> bool:
    return any(e.want.strip() and not e.options.get(doctest.SKIP, False) for e in test.examples)


TESTS = _docstring_tests()
RUNNABLE = [t for t in TESTS if _shows_output(t)]


def test_the_package_has_examples_of_both_kinds():
    assert len(RUNNABLE) > 150
    assert len(TESTS) - len(RUNNABLE) > 40


@pytest.mark.parametrize("test", RUNNABLE, ids=[t.name for t in RUNNABLE])
def test_example_prints_what_it_shows(test: doctest.DocTest, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that save figures or tables write here
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    run = copy.copy(test)  # the shared DocTest keeps its globals for the sketch check
    run.globs = dict(test.globs)
    try:
        result = runner.run(run, out=report.append, clear_globs=True)
    finally:
        import matplotlib.pyplot as plt

        plt.close("all")
    assert result.failed == 0, "".join(report)


# ------------------------------------------------------------------------------------- usage sketches
#: Names the sketches use for a model without constructing it, and the class they stand for.
_MODEL_NAMES = {"model": SparseVAE, "best": SparseVAE, "reference": MultiStudySparseVAE, "query": MultiStudySparseVAE}


def _attribute_chain(node: ast.expr) -> list[str] | None:
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(names)]


def _set_in_init(cls: type, attr: str) -> bool:
    """Whether an ``__init__`` of ``cls`` or its scsparse bases assigns ``self.<attr>``."""
    for base in inspect.getmro(cls):
        init = base.__dict__.get("__init__")
        if init is None or not base.__module__.startswith("scsparse"):
            continue
        if f"self.{attr} =" in inspect.getsource(init) or f"self.{attr}: " in inspect.getsource(init):
            return True
    return False


class _SketchChecker:
    """Resolves the calls of one docstring's examples to scsparse callables and binds their arguments."""

    def __init__(self, test: doctest.DocTest):
        self.globs = test.globs
        # ``model`` in the array models' examples (scsparse.generic) is theirs, named by an assignment
        if test.name.startswith("scsparse.generic"):
            self.instances: dict[str, type] = {}
        else:
            default = MultiStudySparseVAE if "multistudy" in test.name.lower() else SparseVAE
            self.instances = {**_MODEL_NAMES, "model": default}
        self.checked = 0
        self.errors: list[str] = []

    def _root(self, name: str) -> tuple[Any, bool]:
        """The object a name stands for and whether it is an instance of that class (not the class)."""
        if name == "scsparse":
            return scsparse, False
        if name in self.instances:
            return self.instances[name], True
        obj = self.globs.get(name)
        if obj is not None and getattr(obj, "__module__", "").startswith("scsparse"):
            return obj, False
        return None, False

    def resolve(self, func: ast.expr) -> tuple[Callable[..., Any] | None, bool]:
        chain = _attribute_chain(func)
        if chain is None:
            return None, False
        obj, instance = self._root(chain[0])
        if obj is None:
            return None, False
        for i, attr in enumerate(chain[1:]):
            if instance and i == 0 and _set_in_init(obj, attr):
                return None, False  # an attribute of the instance (a parameter, a fitted table): not followed
            if not hasattr(obj, attr):
                self.errors.append(f"{'.'.join(chain[: i + 2])}: no such attribute")
                return None, False
            raw = inspect.getattr_static(obj, attr) if inspect.isclass(obj) else None
            obj = getattr(obj, attr)
            # a method looked up on the class stands for a call on an instance: ``self`` is bound by the call
            instance = instance and i == len(chain) - 2 and inspect.isfunction(raw)
        return (obj if callable(obj) else None), instance

    def check_call(self, call: ast.Call) -> None:
        func, needs_self = self.resolve(call.func)
        if func is None or any(isinstance(a, ast.Starred) for a in call.args):
            return
        if any(k.arg is None for k in call.keywords):  # ** unpacking: nothing to check
            return
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError):
            return
        args = [None] * (len(call.args) + int(needs_self))
        try:
            signature.bind(*args, **{k.arg: None for k in call.keywords})
        except TypeError as err:
            self.errors.append(f"{ast.unparse(call)}: {err}")
        self.checked += 1

    def note_assignment(self, node: ast.Assign) -> None:
        """``name = Class(...)`` or ``Class.load(...)``: later calls on ``name`` are that scsparse class's."""
        if not (isinstance(node.value, ast.Call) and len(node.targets) == 1):
            return
        target = node.targets[0]
        chain = _attribute_chain(node.value.func)
        if not isinstance(target, ast.Name) or chain is None:
            return
        obj, _ = self._root(chain[0])
        for attr in chain[1:]:
            obj = getattr(obj, attr, None)
        owner = obj if inspect.isclass(obj) else getattr(obj, "__self__", None)
        if inspect.isclass(owner) and owner.__module__.startswith("scsparse"):
            self.instances[target.id] = owner
        else:
            self.instances.pop(target.id, None)  # rebound to something this checker does not follow

    def check(self, source: str) -> None:
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                self.check_call(node)
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                self.note_assignment(node)


def _check_sketches() -> Iterator[tuple[str, _SketchChecker]]:
    for test in TESTS:
        checker = _SketchChecker(test)
        for example in test.examples:
            checker.check(example.source)
        yield test.name, checker


def test_every_example_calls_the_api_with_accepted_arguments():
    checked = 0
    errors: list[str] = []
    for name, checker in _check_sketches():
        checked += checker.checked
        errors += [f"{name}: {e}" for e in checker.errors]
    assert not errors, "\n".join(errors)
    assert checked > 300  # the resolver reaches the package's API (a broken resolver would check nothing)


def test_the_sketch_checker_catches_a_stale_call():
    test = doctest.DocTestParser().get_doctest(
        ">>> m = scsparse.model.SparseVAE(adata, n_latent=3)\n>>> m.active_factors(pip=0.5)\n"
        ">>> scsparse.tl.top_genes(adata, n_tops=5)\n>>> scsparse.tl.nope(adata)\n",
        {},
        "stale",
        None,
        0,
    )
    checker = _SketchChecker(test)
    for example in test.examples:
        checker.check(example.source)
    assert len(checker.errors) == 3, checker.errors
    assert "'pip'" in checker.errors[0] and "'n_tops'" in checker.errors[1] and "nope" in checker.errors[2]
