"""The API reference documents exactly the public names of each subpackage, each with a description.

``docs/api/*.md`` lists every public object in autosummary blocks, from which Sphinx writes one page per object.
These tests compare those lists with each subpackage's ``__all__``, so a name added to the package without a page
(or a page left behind for a removed name) fails here before the documentation is built. ``make docs-check``
then checks that the built site has each page.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from pathlib import Path

import pytest

import scsparse

DOCS = Path(__file__).resolve().parents[2] / "docs"
API_PAGES = sorted((DOCS / "api").glob("*.md"))
DIRECTIVE = re.compile(r"^\.\. (?P<name>[\w:-]+)::\s*(?P<arg>\S*)")


def _conf():
    """``docs/conf.py`` as a module (it lists the documented subpackages)."""
    pytest.importorskip("sphinx")
    sys.path.insert(0, str(DOCS))
    try:
        return importlib.import_module("conf")
    finally:
        sys.path.remove(str(DOCS))


def documented_names(pages: list[Path] = API_PAGES) -> dict[str, list[str]]:
    """``subpackage -> names`` listed in the autosummary blocks of the API pages (in page order)."""
    listed: dict[str, list[str]] = {}
    for page in pages:
        module = None
        in_autosummary = False
        for line in page.read_text().splitlines():
            text = line.strip()
            match = DIRECTIVE.match(text)
            if match:
                in_autosummary = match["name"] == "autosummary"
                if match["name"] in ("currentmodule", "py:currentmodule", "module"):
                    module = match["arg"]
                continue
            if not in_autosummary or not text or text.startswith(":"):
                continue
            if text.startswith("```") or not line.startswith("   "):
                in_autosummary = False
                continue
            assert module is not None, f"{page.name}: autosummary entry {text!r} before any currentmodule"
            listed.setdefault(module, []).append(text)
    return listed


def public_subpackages() -> list[str]:
    """Every subpackage of scsparse with an ``__all__``, private ones left out."""
    names = []
    for info in pkgutil.walk_packages(scsparse.__path__, prefix="scsparse."):
        if info.ispkg and not any(part.startswith("_") for part in info.name.split(".")):
            if hasattr(importlib.import_module(info.name), "__all__"):
                names.append(info.name)
    return names


def test_parser_reads_autosummary_blocks(tmp_path: Path) -> None:
    page = tmp_path / "x.md"
    page.write_text(
        "# x\n\n```{eval-rst}\n.. currentmodule:: scsparse.tl\n\n.. autosummary::\n   :toctree: generated\n\n"
        "   enrich\n   top_genes\n```\n\nText.\n\n```{eval-rst}\n.. currentmodule:: scsparse.pl\n\n"
        ".. autosummary::\n   :nosignatures:\n\n   stability\n```\n"
    )
    assert documented_names([page]) == {"scsparse.tl": ["enrich", "top_genes"], "scsparse.pl": ["stability"]}


def test_every_public_subpackage_is_in_the_reference() -> None:
    conf = _conf()
    documented = set(conf.API_PACKAGES)
    assert set(public_subpackages()) <= documented, "subpackages without an API page"
    assert documented - {"scsparse.generic"} <= set(documented_names()), "API_PACKAGES without autosummary lists"


@pytest.mark.parametrize("package", [p for p in public_subpackages() if p != "scsparse.generic"])
def test_reference_lists_exactly_all(package: str) -> None:
    listed = documented_names().get(package, [])
    exported = list(importlib.import_module(package).__all__)
    twice = sorted({name for name in listed if listed.count(name) > 1})
    assert not twice, f"{package}: listed twice: {twice}"
    missing = sorted(set(exported) - set(listed))
    extra = sorted(set(listed) - set(exported))
    assert not missing, f"{package}: public names without an API page (add them to docs/api/): {missing}"
    assert not extra, f"{package}: API pages for names not in __all__: {extra}"


@pytest.mark.parametrize("package", [p for p in public_subpackages() if p != "scsparse.generic"])
def test_every_public_name_has_a_description(package: str) -> None:
    conf = _conf()
    module = importlib.import_module(package)
    undocumented = []
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismethod(obj):
            doc = inspect.getdoc(obj) or ""
        else:  # a constant: the ``#:`` comment beside its assignment, as the reference shows it
            doc = conf._attr_doc(package, name) or ""
        if not doc.strip():
            undocumented.append(name)
    assert not undocumented, f"{package}: public names without a docstring or #: comment: {undocumented}"


def test_reexported_classes_point_to_one_home() -> None:
    aliases = _conf().autosummary_context["reexports"]
    for alias, home in aliases.items():
        a_module, a_name = alias.rsplit(".", 1)
        h_module, h_name = home.rsplit(".", 1)
        assert getattr(importlib.import_module(a_module), a_name) is getattr(importlib.import_module(h_module), h_name)
        assert home not in aliases
