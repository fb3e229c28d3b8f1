"""Sphinx configuration of the topokit documentation.

Build with warnings as errors, as CI would::

    pip install -e ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

# Local extensions in _ext/: the CLI page renders every command's ``--help`` from the
# app, and docstrings' plain-text math (|V|, ||w||) is kept literal.
sys.path.insert(0, str(Path(__file__).parent / "_ext"))
import topokit  # noqa: E402

project = "topokit"
author = "topokit developers"
copyright = "2026, topokit developers"
release = topokit.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax from _static/, not a CDN: math reads offline
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "cli_help",
    "plain_math",
    "service_openapi",  # the service's API reference, from its OpenAPI document
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]

# -- API reference --------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"member-order": "bysource"}
# Signatures show the annotations; the numpydoc Parameters sections say the rest.
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
# Aliases appear as written (``ArrayLike``), not expanded into numpy's private protocol
# union; the annotations are strings (``from __future__ import annotations``), which is
# what lets autodoc keep the name.
autodoc_type_aliases = {"ArrayLike": "ArrayLike", "SeedLike": "SeedLike"}

# numpydoc: the class templates list members themselves, so numpydoc does not add a
# second (partial) member table under every class.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# Parameter types are prose ("array-like of shape (n, n)"), not cross-reference targets.
numpydoc_xref_param_type = False
# Docstring validation is the job of a test, not of the site build.
numpydoc_validation_checks: set[str] = set()


def _skip_foreign_members(app, what, name, obj, skip, options):
    """Leave out members topokit does not define.

    A class's own methods are documented; what it inherits from scikit-learn (the
    ``set_*_request`` routers of :class:`~topokit.design.GlobalIteratePredictor`) is
    scikit-learn's API, and a NamedTuple's field accessors only say "Alias for field
    number k" (the class docstring describes the fields).
    """
    module = getattr(obj, "__module__", None) or ""
    if what == "class" and inspect.isroutine(obj) and not module.startswith("topokit"):
        return True
    if (getattr(obj, "__doc__", None) or "").startswith("Alias for field number"):
        return True
    return skip


#: Modules whose every ``__all__`` name must appear somewhere in the API reference.
API_MODULES = (
    "topokit",
    "topokit.design",
    "topokit.network",
    "topokit.design.metrics",
    "topokit.design.predictor",
    "topokit.design.features",
    "topokit.design.time_predictor",
    "topokit.network.examples",
    "topokit.design.baselines",
    "topokit.network.physical",
    "topokit.network.siot",
    "topokit.design.batch",
    "topokit.validation",
    "topokit.validation.stats",
    "topokit.validation.compare",
    "topokit.validation.corpus",
    "topokit.audit",
    "topokit.network.quantities",
    "topokit.validation.probes",
    "topokit.design.workload",
    "topokit.export",
    "topokit.design.result",
    "topokit.design.mixing",
    "topokit.training",
    "topokit.training.plan",
    "topokit.gfl",
    "topokit.learn",
    "topokit.kernels",
    "topokit.dp",
    "topokit.errors",
    "topokit.plotting",
    "topokit.plotting.design",
    "topokit.plotting.gfl",
    "topokit.plotting.learn",
    "topokit.plotting.audit",
)
_NOT_DOCUMENTED = {"topokit.__version__"}  # named in the text of api/topokit.rst


def _check_api_complete(app, env):
    """Warn (an error under -W) about a public name that no API page documents.

    The API pages list names by hand, grouped by topic; this keeps the lists from
    falling behind ``__all__`` when a public function is added.  A name counts as
    documented when the same object is documented under any path (``topokit.Network``
    is documented as ``topokit.design.Network``).
    """
    import importlib

    from sphinx.util import logging

    documented = set()
    for full_name in env.get_domain("py").objects:
        module_name, _, attribute = full_name.rpartition(".")
        try:
            documented.add(id(getattr(importlib.import_module(module_name), attribute)))
        except (ImportError, AttributeError, ValueError):
            continue  # methods, attributes and modules themselves
    logger = logging.getLogger(__name__)
    for module_name in API_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            full_name = f"{module_name}.{name}"
            if full_name not in _NOT_DOCUMENTED and id(getattr(module, name)) not in documented:
                logger.warning(
                    "%s is public (in %s.__all__) but no page of docs/api/ documents it; "
                    "add it to an autosummary list there", full_name, module_name,
                )


def _constant_comments() -> dict[str, list[tuple[object, list[str]]]]:
    """Every module-level ``#:`` comment of topokit: name -> [(value, lines)], read once."""
    import importlib
    import pkgutil

    from sphinx.pycode import ModuleAnalyzer

    found: dict[str, list[tuple[object, list[str]]]] = {}
    for info in pkgutil.walk_packages(topokit.__path__, "topokit."):
        try:
            module = importlib.import_module(info.name)
            docs = ModuleAnalyzer.for_module(info.name).find_attr_docs()
        except Exception:  # noqa: BLE001 (optional service modules; no source)
            continue
        for (scope, name), lines in docs.items():
            if not scope and hasattr(module, name):
                found.setdefault(name, []).append((getattr(module, name), list(lines)))
    return found


_COMMENTS: dict[str, list[tuple[object, list[str]]]] | None = None


def _document_constants(app, what, name, obj, options, lines):
    """A constant documented under a path other than its module's (``topokit.design.PHASES``
    of ``topokit.design.result``) gets the ``#:`` comment where it is defined, not the
    docstring of its type ("Built-in immutable sequence")."""
    global _COMMENTS
    if what not in ("data", "attribute"):
        return
    builtin = inspect.cleandoc(type(obj).__doc__ or "").strip().splitlines()
    # numpydoc has already run: it appends its marker (and blanks some builtin texts).
    text = [line.strip() for line in lines
            if line.strip() not in ("", "..", "!! processed by numpydoc !!")]
    if text and builtin and text[0] != builtin[0].strip():
        return
    if _COMMENTS is None:
        _COMMENTS = _constant_comments()
    for value, comment in _COMMENTS.get(name.rpartition(".")[2], []):
        if value is obj:
            lines[:] = comment
            return
    lines[:] = []


_ALIAS_REPR = re.compile(r"TypeAliasForwardRef\('([^']+)'\)")


def _plain_aliases(app, what, name, obj, options, signature, return_annotation):
    """``ArrayLike | None`` as written: Sphinx 9 keeps an alias in a union as the repr of
    its placeholder, ``TypeAliasForwardRef('ArrayLike')``."""
    def plain(text):
        return _ALIAS_REPR.sub(r"\1", text) if text else text

    signature, return_annotation = plain(signature), plain(return_annotation)
    if "_SupportsArray" in f"{signature}{return_annotation}":  # an alias autodoc expanded
        from sphinx.util import logging

        logging.getLogger(__name__).warning(
            f"{name}: a signature shows numpy's expanded ArrayLike; annotate with the alias "
            "under `from __future__ import annotations` or add it to autodoc_type_aliases")
    return signature, return_annotation


def setup(app):
    app.connect("autodoc-process-signature", _plain_aliases)
    app.connect("autodoc-skip-member", _skip_foreign_members)
    app.connect("autodoc-process-docstring", _document_constants)
    app.connect("env-check-consistency", _check_api_complete)


# -- Markdown (the tutorial pages) ----------------------------------------------------
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

# -- HTML ------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"topokit {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path: list[str] = []
html_show_sourcelink = False
