"""Facts of the defaults: the prior's numeric defaults are named once, in :mod:`scsparse._options`, and every
layer's signature refers to that name instead of spelling the number."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "scsparse"

#: Parameter -> the name its default is written as (``None``, "not given" or "every cell", is also allowed).
NAMED_DEFAULTS = {
    "lambda0": "DEFAULT_LAMBDA0",
    "lambda1": "DEFAULT_LAMBDA1",
    "max_prior_cells": "DEFAULT_MAX_PRIOR_CELLS",
}


def _spelt_defaults(source: str, where: str) -> list[str]:
    """``where:line function(parameter=default)`` for every default of :data:`NAMED_DEFAULTS` written otherwise
    than as its name or ``None``. Only functions taking both ``lambda0`` and ``lambda1`` count for the two rates:
    another model's ``lambda0`` alone (a threshold rate) is another parameter."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        args = [*node.args.posonlyargs, *node.args.args]
        pairs = list(zip(args[len(args) - len(node.args.defaults) :], node.args.defaults, strict=True))
        pairs += [(a, d) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True) if d is not None]
        names = {a.arg for a in [*args, *node.args.kwonlyargs]}
        for arg, default in pairs:
            if arg.arg not in NAMED_DEFAULTS or (arg.arg.startswith("lambda") and not {"lambda0", "lambda1"} <= names):
                continue
            named = isinstance(default, ast.Name) and default.id == NAMED_DEFAULTS[arg.arg]
            if not named and not (isinstance(default, ast.Constant) and default.value is None):
                found.append(f"{where}:{node.lineno} {node.name}({arg.arg}={ast.unparse(default)})")
    return found


def test_the_priors_defaults_are_named_once():
    """``lambda0``, ``lambda1`` and ``max_prior_cells`` take their defaults from :mod:`scsparse._options` in every
    signature (the prior, both modules, both models, the array model): a changed default changes everywhere."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += _spelt_defaults(path.read_text(), str(path.relative_to(PACKAGE.parent)))
    assert found == []


def test_the_defaults_rule_sees_a_spelt_number():
    source = (
        "def prior(n, lambda0: float = 10.0, lambda1=DEFAULT_LAMBDA1, *, max_prior_cells=10_000): ...\n"
        "def module(lambda0=DEFAULT_LAMBDA0, lambda1=DEFAULT_LAMBDA1, max_prior_cells=None): ...\n"
        "def tvsc(lambda0: float = 0.52): ...\n"
    )
    assert _spelt_defaults(source, "x.py") == [
        "x.py:1 prior(lambda0=10.0)",
        "x.py:1 prior(max_prior_cells=10000)",
    ]


def test_every_layer_of_the_sparse_vae_has_the_same_rates_and_the_modules_do_not_temper():
    """The rates are one pair of values through the layers; ``max_prior_cells`` is the models' (named) default,
    while the modules weigh the prior against every cell unless told (``None``) and the array model has none."""
    from scsparse._options import DEFAULT_LAMBDA0, DEFAULT_LAMBDA1, DEFAULT_MAX_PRIOR_CELLS
    from scsparse.generic.models import ArraySparseVAE, SparseVAEArrayModule
    from scsparse.model import MultiStudySparseVAE, SparseVAE
    from scsparse.module import MultiStudySparseVAEModule, SparseVAEModule
    from scsparse.nn import SpikeSlabLasso

    layers = [SpikeSlabLasso, SparseVAEModule, MultiStudySparseVAEModule, SparseVAE, MultiStudySparseVAE]
    layers += [ArraySparseVAE, SparseVAEArrayModule]
    for layer in layers:
        parameters = inspect.signature(layer).parameters
        if "lambda0" not in parameters:  # a subclass passing its options on to its parent's signature
            parameters = inspect.signature(layer.__mro__[1]).parameters
        assert (parameters["lambda0"].default, parameters["lambda1"].default) == (DEFAULT_LAMBDA0, DEFAULT_LAMBDA1)
    for model in (SparseVAE, MultiStudySparseVAE):
        assert inspect.signature(model).parameters["max_prior_cells"].default == DEFAULT_MAX_PRIOR_CELLS
    assert inspect.signature(SparseVAEModule).parameters["max_prior_cells"].default is None
    assert "max_prior_cells" not in inspect.signature(ArraySparseVAE).parameters
