"""Facts of the package's size and words: no module over 800 lines, and no hardware timing in the product's
docstrings and comments (measurements live in ``docs/benchmarks/``, with the hardware they ran on)."""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "scsparse"

#: The most lines a module of the package may have.
MAX_LINES = 800

#: Where the benchmarks write their records, which name the hardware they ran on by design.
RECORDS = PACKAGE / "generic" / "benchmarks"

#: Words of a timing on named hardware: a duration "on" something, CPU and GPU names, virtual-CPU counts.
HARDWARE_TIMING = re.compile(
    r"\b\d+(?:\.\d+)?\s?(?:ms|µs|us|ns|s)\s+(?:on|against)\b"
    r"|\b(?:Intel|Xeon|EPYC|Ryzen|Threadripper|Apple M\d|H100|H200|A100|V100|RTX\s?\d+|vCPUs?)\b",
    re.IGNORECASE,
)


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _product_modules() -> list[Path]:
    return [path for path in _modules() if RECORDS not in path.parents]


def _docstrings_and_comments(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every docstring (module, class, function) and comment of ``source``."""
    texts = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                texts.append((node.body[0].lineno, doc))
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            texts.append((token.start[0], token.string))
    return texts


def hardware_timings(source: str) -> list[str]:
    """The hardware timings in the docstrings and comments of ``source``, as ``line: words``."""
    return [
        f"{line}: {match.group(0)}"
        for line, text in _docstrings_and_comments(source)
        for match in HARDWARE_TIMING.finditer(text)
    ]


def long_modules(paths: list[Path]) -> dict[str, int]:
    """The modules among ``paths`` over :data:`MAX_LINES` lines, as path (from the repository) -> lines."""
    return {
        str(path.relative_to(PACKAGE.parent)): n
        for path in paths
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }


def test_no_module_is_over_800_lines():
    """Every file of the package, the benchmarks' folders included, is at most :data:`MAX_LINES` lines."""
    assert long_modules(_modules()) == {}, (
        f"split these modules into pieces of one job each (at most {MAX_LINES} lines)"
    )


def test_the_size_rule_sees_a_long_module(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "scsparse")
    folder = tmp_path / "scsparse" / "generic" / "benchmarks" / "_speed"
    folder.mkdir(parents=True)
    (folder / "_run.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (folder / "_timing.py").write_text("x = 1\n" * MAX_LINES)
    assert long_modules(sorted(folder.glob("*.py"))) == {"scsparse/generic/benchmarks/_speed/_run.py": MAX_LINES + 1}


def test_the_timing_rule_finds_timings_in_docstrings_and_comments_only():
    source = (
        '"""A softmax: 0.86 ms against 0.10 ms on an Intel Xeon."""\n\n'
        "def f():\n"
        '    """Fast on a 2-vCPU machine."""\n'
        "    # 20 ms on one H100\n"
        '    return "Xeon in a string is data, not prose"\n'
    )
    found = hardware_timings(source)
    assert [entry.split(":")[0] for entry in found] == ["1", "1", "1", "1", "4", "5", "5"]
    assert hardware_timings('"""Measured in :doc:`/benchmarks/speed`; 8 MB per thread."""\n') == []


def test_no_hardware_timing_in_the_products_docstrings_or_comments():
    found = {
        str(path.relative_to(PACKAGE.parent)): timings
        for path in _product_modules()
        if (timings := hardware_timings(path.read_text()))
    }
    assert found == {}, "point to the record (:doc:`/benchmarks/speed`) and give the reason in words instead"
