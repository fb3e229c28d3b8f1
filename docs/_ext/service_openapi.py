"""Sphinx directive ``topokit-openapi``: the service's API reference, from its OpenAPI document.

The document is the one ``topokit serve`` answers at ``/openapi.json`` (built by
:func:`topokit.service.app.create_app`, for a server with a token), so the page
cannot drift from the contract.  The build also writes it beside the pages as
``openapi.json``, for generating clients or reading it in any OpenAPI viewer.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

_DOCUMENT: dict[str, Any] | None = None
_METHODS = ("get", "post", "put", "patch", "delete")
_CONSTRAINTS = (("minimum", ">= {}"), ("exclusiveMinimum", "> {}"), ("maximum", "<= {}"),
                ("exclusiveMaximum", "< {}"), ("minItems", "at least {} items"),
                ("maxItems", "at most {} items"), ("pattern", "matches ``{}``"))


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of a ``topokit serve`` with a token (built once)."""
    global _DOCUMENT
    if _DOCUMENT is None:
        from topokit.service.app import create_app

        with tempfile.TemporaryDirectory() as folder:
            app = create_app(Path(folder) / "jobs.sqlite", token="TOKEN", workers=0)
            _DOCUMENT = app.openapi()
    return _DOCUMENT


def _ref_name(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    return ref.rpartition("/")[2] if ref else None


def _number(value: Any) -> str:
    return "the largest float" if value == 1.7976931348623157e308 else (
        "minus the largest float" if value == -1.7976931348623157e308 else repr(value))


def _type(schema: dict[str, Any]) -> str:
    """A schema in a few words: ``number > 0``, ``Topology or null``, ``one of 'a', 'b'``."""
    name = _ref_name(schema)
    if name:
        return f":ref:`{name} <openapi-{name.lower()}>`"
    if "anyOf" in schema:
        return " or ".join(_type(part) for part in schema["anyOf"])
    if "enum" in schema:
        return "one of " + ", ".join(f"``{json.dumps(v)}``" for v in schema["enum"])
    if "const" in schema:
        return f"``{json.dumps(schema['const'])}``"
    kind = schema.get("type", "any")
    if kind == "array" and "items" in schema:
        kind = f"array of ({_type(schema['items'])})"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        kind = f"object of ({_type(schema['additionalProperties'])})"
    words = [fmt.format(_number(schema[key]) if key != "pattern" else schema[key])
             for key, fmt in _CONSTRAINTS if key in schema
             and not (key in ("minimum", "maximum") and abs(schema[key]) == 1.7976931348623157e308)]
    return " ".join([kind, ", ".join(words)]).strip()


def _rst(text: str) -> str:
    """A description (Markdown, as OpenAPI says) in reStructuredText: `code` as ``code``."""
    return re.sub(r"(?<![`:])`([^`]+)`(?!`)", r"``\1``", text)


def _cell(text: str) -> str:
    return _rst(" ".join(str(text).split())) or " "


def _table(header: list[str], rows: list[list[str]], widths: str) -> list[str]:
    lines = [".. list-table::", "   :header-rows: 1", f"   :widths: {widths}", ""]
    for row in [header, *rows]:
        lines.append(f"   * - {_cell(row[0])}")
        lines.extend(f"     - {_cell(cell)}" for cell in row[1:])
    return [*lines, ""]


def _default(schema: dict[str, Any]) -> str:
    """The default of a field, its own or that of a branch (a nullable field's)."""
    for part in (schema, *schema.get("anyOf", ())):
        if "default" in part:
            return f"``{json.dumps(part['default'])}``"
    return ""


def _schema_lines(name: str, schema: dict[str, Any]) -> list[str]:
    lines = [f".. _openapi-{name.lower()}:", "", name, "~" * len(name), ""]
    if schema.get("description"):
        lines += [_rst(schema["description"]), ""]
    properties = schema.get("properties", {})
    if properties:
        required = set(schema.get("required", ()))
        rows = [[f"``{key}``", _type(value), "yes" if key in required else "",
                 _default(value), value.get("description", "")]
                for key, value in properties.items()]
        lines += _table(["field", "type", "required", "default", "description"], rows,
                        "15 35 8 10 32")
        if schema.get("additionalProperties") is False:
            lines += ["No other field.", ""]
    else:
        lines += [f"{_type(schema)}.", ""]
    return lines


def _operation_lines(path: str, method: str, operation: dict[str, Any]) -> list[str]:
    title = f"{method.upper()} {path}"
    lines = [title, "~" * len(title), ""]
    if operation.get("description"):
        lines += [operation["description"], ""]
    if operation.get("security") == []:
        lines += ["No token needed.", ""]
    body = operation.get("requestBody")
    if body:
        schema = body["content"]["application/json"]["schema"]
        lines += [f"**Body** (``application/json``): {_type(schema)}.", ""]
    for parameter in operation.get("parameters", []):
        lines += [f"**{parameter['in'].title()}** ``{parameter['name']}``"
                  f"{' (required)' if parameter.get('required') else ''}: "
                  f"{_type(parameter.get('schema', {}))}. "
                  f"{_rst(parameter.get('description', ''))}",
                  ""]
    rows = []
    for status, answer in operation["responses"].items():
        content = answer.get("content", {}).get("application/json", {})
        rows.append([status, _type(content["schema"]) if "schema" in content else "",
                     answer.get("description", "")])
    return [*lines, *_table(["status", "body", "when"], rows, "8 20 72")]


def reference_lines(document: dict[str, Any]) -> list[str]:
    """The reStructuredText of every operation, then every schema, of ``document``."""
    lines = ["Operations", "----------", ""]
    for path, item in document["paths"].items():
        for method in _METHODS:
            if method in item:
                lines += _operation_lines(path, method, item[method])
    lines += ["Schemas", "-------", ""]
    for name, schema in document["components"]["schemas"].items():
        lines += _schema_lines(name, schema)
    return lines


class TopokitOpenApiDirective(SphinxDirective):
    """The operations and schemas of the service's OpenAPI document."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        container = nodes.section()
        container.document = self.state.document
        nested_parse_with_titles(self.state, StringList(reference_lines(openapi_document()),
                                                        source="openapi.json"), container)
        return container.children


def _write_document(app: Sphinx, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        target = Path(app.outdir) / "openapi.json"
        target.write_text(json.dumps(openapi_document(), indent=1) + "\n")


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("topokit-openapi", TopokitOpenApiDirective)
    app.connect("build-finished", _write_document)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
