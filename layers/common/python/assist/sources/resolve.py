"""What to index, as each source's kind reads it: a location from the command line or a YAML sources file
becomes the spec of its kind (named, or guessed among assist's own kinds from the location)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
import yaml

from assist.sources.kinds.folder import Folder
from assist.sources.kinds.openapi import OpenApi
from assist.sources.kinds.pdf import Pdf
from assist.sources.kinds.repo import Repo
from assist.sources.kinds.site import Site
from assist.sources.registry import Kind, named, names
from assist.sources.spec import SourceError, SourceSpec, is_url


def kind_names() -> list[str]:
    """The kinds a source may name: assist's own (imported here) and the installed plug-ins'."""
    return names()


def kind_of(spec: SourceSpec) -> Kind:
    """The kind that reads a resolved spec."""
    return _named(spec.kind, spec.location)()


def _named(name: str, location: str) -> type[Kind]:
    kind = named(name)
    if kind is None:
        raise SourceError(f"{location}: unknown source kind {name!r}; use one of {'|'.join(names())}")
    return kind


def guess_kind(location: str) -> type[Kind]:
    low = location.lower().split("?", 1)[0].split("#", 1)[0]
    if low.endswith((".yaml", ".yml", ".json")):
        return OpenApi
    if low.endswith(".pdf"):
        return Pdf
    if low.endswith(".git") or low.startswith("git@"):
        return Repo
    if is_url(low):
        return Site
    return Repo if (Path(location) / ".git").exists() else Folder


def resolved(source: SourceSpec | Mapping[str, Any]) -> SourceSpec:
    """A source as the spec of its kind, its `kind` set. A field its kind does not take is a SourceError."""
    fields = msgspec.structs.asdict(source) if isinstance(source, SourceSpec) else dict(source)
    fields = {name: value for name, value in fields.items() if value not in ("", None)}
    location = str(fields.get("location", ""))
    name = fields.get("kind") or guess_kind(location).name
    kind = _named(name, location)
    if isinstance(source, kind.spec) and source.kind == name:
        return source
    try:
        return msgspec.convert(fields | {"kind": name}, kind.spec)
    except msgspec.ValidationError as exc:
        raise SourceError(f"{location or 'a source'}, a {name} source: {exc}") from exc


def load_file(path: str | Path) -> list[SourceSpec]:
    """A sources file: `sources:` a list of locations or mappings (location, kind, prefix, and the fields of
    its kind). Relative paths are read from the file's folder."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SourceError(f"sources file {path}: {exc}") from exc
    return load_text(text, str(path), path.parent)


def load_text(text: str, where: str, base: Path | None = None) -> list[SourceSpec]:
    """The sources of a sources file's text; relative paths resolved against `base` when given."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SourceError(f"sources file {where}: {exc}") from exc
    items = data.get("sources") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise SourceError(f"sources file {where}: expected `sources:` with a list of locations")
    specs = []
    for i, item in enumerate(items):
        fields = {"location": item} if isinstance(item, str) else item
        location = fields.get("location") if isinstance(fields, dict) else None
        if not isinstance(location, str):
            raise SourceError(f"sources file {where}, source {i + 1}: expected a location, or a mapping with one")
        if base is not None:
            fields = fields | {"location": _absolute(location, base)}
        try:
            specs.append(resolved(fields))
        except SourceError as exc:
            raise SourceError(f"sources file {where}, source {i + 1}: {exc}") from exc
    return specs


def anchored(spec: SourceSpec, base: Path) -> SourceSpec:
    """`spec` with a relative path made absolute against `base` (URLs and git remotes as they are): a sources
    file written for another process, in another folder, still names the same files."""
    return msgspec.structs.replace(spec, location=_absolute(spec.location, base))


def _absolute(location: str, base: Path) -> str:
    return location if is_url(location) or location.startswith("git@") else str((base / location).resolve())
