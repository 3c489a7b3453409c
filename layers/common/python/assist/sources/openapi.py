"""An OpenAPI 3 description (YAML or JSON) as documents: one per operation — method and path, summary,
description, parameters, request and response bodies with their schemas and examples — and one per
shared schema (`components.schemas`). Local `$ref`s are followed (a cycle stops at its name).
Links: the spec's page (`base_url`, else the spec's own URL) with Redoc's fragments,
`#operation/<operationId>` and `#schema/<Name>`."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import yaml

from assist.index import manifest
from assist.index.chunking import Document, doc_hash, parse_document
from assist.sources.spec import Page, Read, SourceError

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
MAX_DEPTH = 4  # nested schema levels written out; deeper ones are named, not expanded


def parse_spec(text: str, where: str) -> dict[str, Any]:
    """The spec as a mapping, or a SourceError that says why it is not an OpenAPI 3 document."""
    try:
        data = json.loads(text) if text.lstrip().startswith("{") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise SourceError(f"{where}: malformed spec, not YAML or JSON ({str(exc).splitlines()[0]})") from exc
    if not isinstance(data, dict):
        raise SourceError(f"{where}: malformed spec, the document is not a mapping")
    version = str(data.get("openapi", ""))
    if not version.startswith("3."):
        found = f"swagger {data['swagger']}" if "swagger" in data else f"openapi {version or 'missing'}"
        raise SourceError(f"{where}: not an OpenAPI 3 document ({found}); convert a Swagger 2 spec first")
    if not isinstance(data.get("paths"), dict):
        raise SourceError(f"{where}: malformed spec, `paths` is missing or not a mapping")
    return data


def read_spec(spec_doc: dict[str, Any], where: str, url: str, prefix: str) -> Read:
    info = spec_doc.get("info") or {}
    api = str(info.get("title") or "API")
    out = Read(counts={"operations": 0, "schemas": 0})
    resolver = _Resolver(spec_doc)
    for path, item in spec_doc["paths"].items():
        if not isinstance(item, dict):
            raise SourceError(f"{where}: malformed spec, path {path!r} is not a mapping")
        shared = item.get("parameters") or []
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            op_id = str(op.get("operationId") or f"{method}-{path}")
            slug_id = re.sub(r"[^A-Za-z0-9_.-]+", "-", op_id).strip("-")
            text = _operation(api, method, path, op, shared, resolver)
            out.pages.append(_page(f"{prefix}operations/{slug_id}", text, where, f"{url}#operation/{slug_id}"))
            out.counts["operations"] += 1
    for name, schema in ((spec_doc.get("components") or {}).get("schemas") or {}).items():
        text = f"# Schema {name}\n\n{api}: the shared `{name}` schema.\n\n" + "\n".join(
            _schema_lines(resolver.resolve(schema), resolver, 0, {name})
        )
        out.pages.append(_page(f"{prefix}schemas/{name}", text, where, f"{url}#schema/{name}"))
        out.counts["schemas"] += 1
    if not out.pages:
        raise SourceError(f"{where}: the spec has no operations")
    return out


def _page(doc_id: str, text: str, where: str, url: str) -> Page:
    doc: Document = parse_document(doc_id, text, source=where, url=url)
    # a spec's sections have no anchors of their own: every chunk links to the operation
    chunks = [dataclasses.replace(c, url=url) for c in doc.chunks]
    doc = Document(doc.doc_id, doc.title, chunks, {}, doc.headings, where)
    return Page(doc_id, doc_hash(url + "\n" + text), chunks, manifest.entry_for(doc))


def _operation(api: str, method: str, path: str, op: dict[str, Any], shared: list[Any], resolver: _Resolver) -> str:
    summary = str(op.get("summary") or "").strip()
    lines = [f"# {summary or method.upper() + ' ' + path}", "", f"`{method.upper()} {path}` — {api}."]
    if summary:
        lines.append(summary + ("" if summary.endswith(".") else "."))
    if op.get("description"):
        lines += ["", str(op["description"]).strip()]
    if op.get("tags"):
        lines += ["", "Tags: " + ", ".join(map(str, op["tags"]))]
    if op.get("deprecated"):
        lines += ["", "Deprecated."]
    params = [resolver.resolve(p) for p in [*shared, *(op.get("parameters") or [])]]
    if params:
        lines += ["", "## Parameters", ""]
        for p in params:
            if not isinstance(p, dict):
                continue
            kind = _type(resolver.resolve(p.get("schema") or {}))
            need = "required" if p.get("required") else "optional"
            desc = str(p.get("description") or "").strip()
            lines.append(f"- `{p.get('name')}` ({p.get('in')}, {kind}, {need}){': ' + desc if desc else ''}")
    body = resolver.resolve(op.get("requestBody") or {})
    if isinstance(body, dict) and body.get("content"):
        lines += ["", "## Request body", ""]
        if body.get("description"):
            lines.append(str(body["description"]).strip())
        lines += _content(body["content"], resolver)
    responses = op.get("responses") or {}
    if responses:
        lines += ["", "## Responses", ""]
        for code, resp in responses.items():
            resp = resolver.resolve(resp)
            if not isinstance(resp, dict):
                continue
            lines.append(f"- `{code}`: {str(resp.get('description') or '').strip()}")
            lines += _content(resp.get("content") or {}, resolver)
    return "\n".join(lines)


def _content(content: dict[str, Any], resolver: _Resolver) -> list[str]:
    lines: list[str] = []
    for media, item in content.items():
        if not isinstance(item, dict):
            continue
        lines.append(f"  `{media}`:")
        schema = resolver.resolve(item.get("schema") or {})
        lines += ["  " + line for line in _schema_lines(schema, resolver, 1, set())]
        examples = [item["example"]] if "example" in item else []
        examples += [
            resolver.resolve(e).get("value") for e in (item.get("examples") or {}).values() if isinstance(e, dict)
        ]
        for example in examples[:2]:
            if example is not None:
                lines += ["", "```json", json.dumps(example, indent=2, default=str)[:1500], "```"]
    return lines


def _type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    kind = schema.get("type") or ("object" if "properties" in schema else "any")
    if kind == "array":
        return f"array of {_type(schema.get('items') or {})}"
    if schema.get("enum"):
        return f"{kind}: one of " + ", ".join(map(str, schema["enum"][:12]))
    return str(kind) + (f" ({schema['format']})" if schema.get("format") else "")


def _schema_lines(schema: Any, resolver: _Resolver, depth: int, seen: set[str]) -> list[str]:
    if not isinstance(schema, dict):
        return []
    lines = []
    if schema.get("description") and depth == 0:
        lines.append(str(schema["description"]).strip())
    for key in ("allOf", "oneOf", "anyOf"):
        for part in schema.get(key) or []:
            name = part.get("$ref", "").rsplit("/", 1)[-1] if isinstance(part, dict) else ""
            if name and name in seen:
                lines.append(f"- ({key}) {name}")
                continue
            lines += _schema_lines(resolver.resolve(part), resolver, depth, seen | ({name} if name else set()))
    required = set(schema.get("required") or [])
    for prop, sub in (schema.get("properties") or {}).items():
        name = sub.get("$ref", "").rsplit("/", 1)[-1] if isinstance(sub, dict) else ""
        resolved = resolver.resolve(sub)
        desc = str(resolved.get("description") or "").strip() if isinstance(resolved, dict) else ""
        need = ", required" if prop in required else ""
        lines.append(
            "  " * depth + f"- `{prop}` ({_type(sub if name else resolved)}{need}){': ' + desc if desc else ''}"
        )
        if depth < MAX_DEPTH and name not in seen:
            lines += _schema_lines(resolved, resolver, depth + 1, seen | ({name} if name else set()))
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict) and depth < MAX_DEPTH:
        items = schema["items"]
        name = items.get("$ref", "").rsplit("/", 1)[-1]
        if name not in seen:
            lines += _schema_lines(resolver.resolve(items), resolver, depth + 1, seen | ({name} if name else set()))
    return lines


class _Resolver:
    """Local `$ref`s (`#/components/...`); an external or broken one is a SourceError naming it."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc

    def resolve(self, node: Any) -> Any:
        hops = 0
        while isinstance(node, dict) and "$ref" in node:
            ref = str(node["$ref"])
            if not ref.startswith("#/"):
                raise SourceError(f"malformed spec: only local $refs are followed, not {ref!r}")
            target: Any = self.doc
            for part in ref[2:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                if not isinstance(target, dict) or part not in target:
                    raise SourceError(f"malformed spec: $ref {ref!r} points at nothing")
                target = target[part]
            node = target
            hops += 1
            if hops > 20:
                raise SourceError(f"malformed spec: $ref {ref!r} loops")
        return node
