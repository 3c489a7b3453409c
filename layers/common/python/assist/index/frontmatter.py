"""YAML front matter (`---` … `---` at the top of a Markdown file): kept as the document's metadata,
never indexed as body text, never fatal — a block that does not parse as a mapping stays body text."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

_BLOCK = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)(?:\r?\n)?^---[ \t]*(?:\r?\n|\Z)", re.S | re.M)


def split(text: str) -> tuple[dict[str, Any], str]:
    """(metadata, body). Metadata values are JSON-safe: dates become ISO strings, nested mappings stay nested."""
    m = _BLOCK.match(text)
    if not m:
        return {}, text
    # deferred, ADR 0104: pyyaml, 0.01 s, which every function that reads the manifest would pay
    import yaml  # only documents with front matter pay for the import

    try:
        data = yaml.safe_load(m.group(1))
    except yaml.YAMLError:
        return {}, text
    if not isinstance(data, dict):
        return {}, text
    return {str(k): _plain(v) for k, v in data.items()}, text[m.end() :]


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def field(meta: dict[str, Any], name: str) -> Any:
    """A front-matter field by name, also when written as a Dublin Core term: `name`, `dct:name`, or
    `name` inside a `dct:` mapping (the layout of Just-the-Docs ADR sites)."""
    for key in (name, f"dct:{name}", f"dct.{name}"):
        if meta.get(key) not in (None, ""):
            return meta[key]
    nested = meta.get("dct")
    if isinstance(nested, dict) and nested.get(name) not in (None, ""):
        return nested[name]
    return None


def text_field(meta: dict[str, Any], name: str) -> str:
    """A scalar field as a one-line string ('' when absent or not a scalar)."""
    value = field(meta, name)
    if isinstance(value, list):
        value = ", ".join(str(v) for v in value if isinstance(v, str | int | float))
    if isinstance(value, dict) or value is None:
        return ""
    return " ".join(str(value).split())
