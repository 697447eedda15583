"""Sphinx configuration of the scsparse documentation.

Build with ``make docs`` (offline, warnings are errors): the tutorials are executed first into
``docs/tutorials/`` by ``docs/execute_tutorials.py``, then this configuration renders them with their outputs
(``nb_execution_mode = "off"``). No extension here reaches the network: intersphinx is not loaded and MathJax is
served from the built site (``sphinx-mathjax-offline``).
"""

from __future__ import annotations

import ast
import importlib
import inspect
from functools import cache
from pathlib import Path

import scsparse

DOCS = Path(__file__).resolve().parent

# -- Project ------------------------------------------------------------------------------------------------------

project = "scsparse"
author = "scsparse developers"
copyright = "scsparse developers"  # noqa: A001 (Sphinx's name)
release = scsparse.__version__
version = release

# -- Extensions ---------------------------------------------------------------------------------------------------

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx_copybutton",
    "sphinx-mathjax-offline",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
templates_path = ["_templates"]
nitpicky = False

# Markdown (MyST) and notebooks (myst-nb): the notebooks arrive executed, so they are rendered as they are.
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist", "attrs_inline"]
myst_heading_anchors = 3
nb_execution_mode = "off"
nb_output_stderr = "remove"
nb_merge_streams = True
nb_render_markdown_format = "myst"

# API reference: one page per public object, written by autosummary from the lists in docs/api/*.md.
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "groupwise"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented_params"
autodoc_preserve_defaults = True
autoclass_content = "class"
# Annotations that say ``SparseVAE`` mean the scvi-tools model (the array model is ``ArraySparseVAE``).
autodoc_type_aliases = {
    "SparseVAE": "scsparse.model.SparseVAE",
    "MultiStudySparseVAE": "scsparse.model.MultiStudySparseVAE",
}

#: The subpackages whose ``__all__`` the API reference documents (tests/docs/test_api_reference.py checks it).
API_PACKAGES = (
    "scsparse.model",
    "scsparse.tl",
    "scsparse.pl",
    "scsparse.results",
    "scsparse.data",
    "scsparse.module",
    "scsparse.train",
    "scsparse.nn",
    "scsparse.utils",
    "scsparse.generic",
    "scsparse.generic.models",
    "scsparse.generic.nn",
    "scsparse.generic.metrics",
    "scsparse.generic.datasets",
    "scsparse.generic.benchmarks",
)


def _reexported_classes() -> dict[str, str]:
    """``public name -> home name`` of every class a subpackage re-exports from another one.

    A class exported by two subpackages (``scsparse.model.FactorResponse`` is ``scsparse.results.FactorResponse``)
    is documented once, in the subpackage whose module defines it; the other name gets a page that points there.
    """
    exporters: dict[int, list[str]] = {}
    objects: dict[int, type] = {}
    for package in API_PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj):
                exporters.setdefault(id(obj), []).append(f"{package}.{name}")
                objects[id(obj)] = obj
    aliases: dict[str, str] = {}
    for key, names in exporters.items():
        if len(names) < 2:
            continue
        defined_in = objects[key].__module__
        homes = [n for n in names if defined_in.startswith(n.rsplit(".", 1)[0] + ".")] or names[:1]
        home = max(homes, key=len)
        aliases.update({n: home for n in names if n != home})
    return aliases


autosummary_context = {"reexports": _reexported_classes()}

napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_param = True
napoleon_use_ivar = True

# -- HTML -----------------------------------------------------------------------------------------------------------

html_theme = "sphinx_book_theme"
html_title = f"scsparse {release}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_favicon = "_static/favicon.svg"
html_last_updated_fmt = None
html_show_sourcelink = False
toc_object_entries_show_parents = "hide"  # "load()" rather than "SparseVAE.load()" in a page's contents
html_theme_options = {
    "show_toc_level": 2,
    "navbar_persistent": [],  # one search field, in the sidebar
    "navigation_with_keys": False,
    "home_page_in_toc": True,
    "use_download_button": False,
    "use_fullscreen_button": False,
}
# The colour mode of a first visit (the theme otherwise logs an error before it falls back to "auto").
html_context = {"default_mode": "light"}
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True


# -- Constants' documentation ---------------------------------------------------------------------------------------
# A subpackage re-exports constants from its private modules, where their ``#:`` comments are. autodoc looks for
# such a comment only in the module it documents (the subpackage), so the comment is looked up along the chain of
# ``from ... import NAME`` lines down to the module that assigns the constant.


def _reexport_sources(module: str) -> dict[str, str]:
    """``name -> module`` of the ``from X import name`` lines of a module."""
    path = Path(importlib.import_module(module).__file__)
    sources: dict[str, str] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
            base = node.module if node.level == 0 else f"{package}.{node.module}"
            for alias in node.names:
                sources[alias.asname or alias.name] = base
    return sources


@cache
def _attr_doc(module: str, name: str, depth: int = 0) -> str | None:
    """The ``#:`` comment of ``module.name``, followed through re-exports."""
    from sphinx.pycode import ModuleAnalyzer

    lines = ModuleAnalyzer.for_module(module).find_attr_docs().get(("", name))
    if lines:
        return "\n".join(lines).strip()
    source = _reexport_sources(module).get(name)
    return _attr_doc(source, name, depth + 1) if source and depth < 5 else None


def _fill_constant_doc(app, what, name, obj, options, lines) -> None:  # noqa: ANN001 (Sphinx's event signature)
    """Give a re-exported constant the ``#:`` comment written beside its assignment."""
    if what != "data" or not name.startswith("scsparse."):
        return
    module, attr = name.rsplit(".", 1)
    doc = _attr_doc(module, attr)
    if doc:  # replaces the docstring of the value's type (``dict``, ``tuple``) that autodoc falls back to
        lines[:] = [*doc.splitlines(), ""]


# -- Citations in inherited docstrings -------------------------------------------------------------------------------
# scvi-tools' docstrings, which the models' pages show for inherited methods, cite papers with sphinxcontrib-bibtex's
# ``:cite:p:`` and ``:cite:t:`` roles. Without a bibliography here, the key is shown as text in brackets.


def _citation_role(name, rawtext, text, lineno, inliner, options=None, content=None):  # noqa: ANN001, ANN202
    from docutils import nodes

    return [nodes.inline(rawtext, f"[{text}]", classes=["citation-key"])], []


def _citation_domain():  # noqa: ANN202
    from sphinx.domains import Domain

    class CitationDomain(Domain):
        """The ``cite`` roles of sphinxcontrib-bibtex, shown as the citation key."""

        name = "cite"
        label = "citations"
        roles = {"p": _citation_role, "t": _citation_role}

    return CitationDomain


def setup(app) -> None:  # noqa: ANN001
    """Register the hooks of this configuration."""
    app.connect("autodoc-process-docstring", _fill_constant_doc)
    app.add_domain(_citation_domain())
