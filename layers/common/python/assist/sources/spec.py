"""What to index: one source per location (a path or URL), from the command line or a YAML sources file."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec

from assist.errors import AssistError
from assist.index.scope import ScopeRule, rule

if TYPE_CHECKING:
    from assist.index.chunking import DocChunk
    from assist.index.manifest import Entry
    from assist.sources.validators import Validators


class SourceError(AssistError, ValueError):
    """A source cannot be read as asked (unreachable, not found, malformed, binary, too large, off the
    host); the message names the source and what is wrong. Nothing is written to the index. Over HTTP (the
    sync image's /v1/sync) a 422: the request was understood, the sources it names cannot be read."""

    status = 422
    code = "source_unreadable"


class SourceSpec(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """What every source says, whatever its kind. A kind's own spec (`assist.sources.kinds`) adds its fields to
    these; a field every kind shares belongs here."""

    location: str  # a path or an http(s) URL
    kind: str = ""  # a registered kind's name; "" → guessed from the location
    prefix: str = ""  # put before every document id, to keep several sources' ids apart
    #: the product and version its pages belong to (ADR 0121), fixed here or read from each page's address by a
    #: pattern whose first group is the value; a source without any is in every scope
    scope: dict[str, str | int | float] = msgspec.field(default_factory=dict)
    product_from: str = ""
    version_from: str = ""

    def scope_rule(self) -> ScopeRule:
        patterns = {"product": self.product_from, "version": self.version_from}
        try:
            return rule({k: str(v) for k, v in self.scope.items()}, patterns, self.location)
        except ValueError as exc:
            raise SourceError(str(exc)) from None


class PublishedSpec(SourceSpec):
    """A source whose documents are published elsewhere (a folder, a repository, a PDF, an OpenAPI spec)."""

    #: where the documents are published: `{path}` (with suffix) / `{stem}` (without), or a prefix
    base_url: str = ""


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
    validators: Validators = field(default_factory=dict)  # url → what was learnt fetching it
    counts: dict[str, int | float] = field(default_factory=dict)  # what the kind counts: pages, files, seconds, …


def is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))
