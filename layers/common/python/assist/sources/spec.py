"""What to index: one source per location (a path or URL), from the command line or a YAML sources file."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import yaml

from assist.contracts import SourceKind
from assist.errors import AssistError

if TYPE_CHECKING:
    from assist.index.chunking import DocChunk
    from assist.index.manifest import Entry


class SourceError(AssistError, ValueError):
    """A source cannot be read as asked (unreachable, not found, malformed, binary, too large, off the
    host); the message names the source and what is wrong. Nothing is written to the index. Over HTTP (the
    sync image's /v1/sync) a 422: the request was understood, the sources it names cannot be read."""

    status = 422
    code = "source_unreadable"


class SourceSpec(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    location: str  # a path or an http(s) URL
    kind: str = ""  # a `SourceKind`; "" → guessed from the location
    #: folder/repo: where the files are published, `{path}` (with suffix) / `{stem}` (without) or a prefix
    base_url: str = ""
    prefix: str = ""  # put before every document id, to keep several sources' ids apart
    ref: str = ""  # repo URL: the branch or tag to clone

    def resolved(self) -> SourceSpec:
        try:
            kind = SourceKind(self.kind) if self.kind else guess_kind(self.location)
        except ValueError:
            kinds = "|".join(SourceKind)
            raise SourceError(f"{self.location}: unknown source kind {self.kind!r}; use one of {kinds}") from None
        return msgspec.structs.replace(self, kind=kind)


@dataclass
class Page:
    """One document read from a source. `chunks` None: its source found it unchanged since the last sync
    (not fetched again), and the index keeps it as it is."""

    doc_id: str
    hash: str
    chunks: list[DocChunk] | None
    entry: Entry | None = None


@dataclass
class Read:
    """What reading one source gave: its documents, HTTP validators to keep for the next sync, counts."""

    pages: list[Page] = field(default_factory=list)
    validators: dict[str, dict[str, Any]] = field(default_factory=dict)  # url → etag, last_modified, …
    counts: dict[str, Any] = field(default_factory=dict)


def is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def guess_kind(location: str) -> SourceKind:
    low = location.lower().split("?", 1)[0].split("#", 1)[0]
    if low.endswith((".yaml", ".yml", ".json")):
        return SourceKind.OPENAPI
    if low.endswith(".pdf"):
        return SourceKind.PDF
    if low.endswith(".git") or low.startswith("git@"):
        return SourceKind.REPO
    if is_url(low):
        return SourceKind.SITE
    return SourceKind.REPO if (Path(location) / ".git").exists() else SourceKind.FOLDER


def load_file(path: str | Path) -> list[SourceSpec]:
    """A sources file: `sources:` a list of locations or mappings (location, kind, base_url, prefix, ref).
    Relative paths are read from the file's folder."""
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
        try:
            spec = msgspec.convert({"location": item} if isinstance(item, str) else item, SourceSpec)
        except msgspec.ValidationError as exc:
            raise SourceError(f"sources file {where}, source {i + 1}: {exc}") from exc
        specs.append((anchored(spec, base) if base is not None else spec).resolved())
    return specs


def anchored(spec: SourceSpec, base: Path) -> SourceSpec:
    """`spec` with a relative path made absolute against `base` (URLs and git remotes as they are): a sources
    file written for another process, in another folder, still names the same files."""
    if is_url(spec.location) or spec.location.startswith("git@"):
        return spec
    return msgspec.structs.replace(spec, location=str((base / spec.location).resolve()))
