"""The build's first step: read every source, compare with the index, and cut the documents to embed into
shards. The plan (`<build>/plan.json`), the shards (`shards/<key>.json`) and the Map's items
(`<build>/items.json`: one `{"shard": key}` per shard) are written beside the index; nothing in the index
changes. A source that cannot be read stops the build here."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from assist.build import shards as shard_files
from assist.build.files import read_json
from assist.build.shards import ShardDoc, cut
from assist.contracts import Scope
from assist.index import manifest
from assist.index.chunking import DocChunk
from assist.index.pointer import live_uri
from assist.index.scope import ScopeRule
from assist.index.store import IndexUnavailable, connect, current, doc_hashes, doc_scopes, read_docs
from assist.logs import get_logger
from assist.sources import validators
from assist.sources.resolve import resolved
from assist.sources.spec import SourceError, SourceSpec
from assist.sources.sync import read_source
from assist.sources.validators import Validators

if TYPE_CHECKING:
    from assist.build.files import Files
    from assist.settings import Settings

log = get_logger(__name__)


class Plan(msgspec.Struct, kw_only=True):
    build: str
    index: str  # the index the commit writes: the live version of a published index, else the location
    embedder: str
    docs: dict[str, str]  # every document the index will hold: doc_id → content hash
    changed: list[str]  # new or changed documents: their rows are the shards'
    removed: list[str]  # documents no source gives any more
    kept: list[str]  # documents a source found unchanged without fetching them: the index keeps its rows
    entries: dict[str, manifest.Entry]
    validators: Validators
    previous_validators: Validators
    shards: list[str]  # shard keys
    chunks: int  # chunks in the shards
    sources: list[dict[str, str | int | float]]  # what each source gave: location, kind and its counts (the report's)
    scopes: dict[str, Scope] = msgspec.field(default_factory=dict)  # doc_id → its scope, for those that have one

    @property
    def items_key(self) -> str:
        return items_key(self.build)


def plan_key(build: str) -> str:
    return f"{build}/plan.json"


def items_key(build: str) -> str:
    return f"{build}/items.json"


def new_build() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


class Sourced(msgspec.Struct, kw_only=True):
    """What the sources gave: {doc_id: (content hash, chunks, or None for a document its source found
    unchanged)}, their manifest entries and fetch validators, and each source's counts."""

    docs: dict[str, tuple[str, list[DocChunk] | None]]
    entries: dict[str, manifest.Entry] = msgspec.field(default_factory=dict)
    validators: Validators = msgspec.field(default_factory=dict)
    sources: list[dict[str, str | int | float]] = msgspec.field(default_factory=list)
    rules: dict[str, ScopeRule] = msgspec.field(default_factory=dict)  # doc_id → its source's scope rule


def of_specs(specs: list[SourceSpec], settings: Settings) -> Source:
    """The documents these sources give, as a build reads them."""
    if not specs:
        raise SourceError("no sources given")
    return lambda previous, indexed: read_sources(specs, settings, previous, indexed)


def read_sources(specs: list[SourceSpec], settings: Settings, previous: Validators, indexed: dict[str, str]) -> Sourced:
    out = Sourced(docs={})
    for spec in map(resolved, specs):
        read = read_source(spec, settings, previous, indexed)
        for page in read.pages:
            if page.doc_id in out.docs:
                raise SourceError(
                    f"{spec.location}: document id {page.doc_id!r} is also given by another source; "
                    "set a `prefix` on one of them"
                )
            out.docs[page.doc_id] = (page.hash, page.chunks)
            out.rules[page.doc_id] = spec.scope_rule()
            if page.entry is not None:
                out.entries[page.doc_id] = page.entry
        out.validators |= read.validators
        out.sources.append({"location": spec.location, "kind": spec.kind, "documents": len(read.pages)} | read.counts)
    return out


#: what a build indexes: given the validators the last build kept and {doc_id: hash} the index holds, the documents
Source = Callable[[Validators, dict[str, str]], Sourced]


def plan_docs(
    source: Source,
    settings: Settings,
    files: Files,
    embedder_id: str,
    s3: Any = None,
) -> Plan:
    """Plan a build of what `source` gives against the index `settings.index.uri` (its live version); the plan,
    its shards and the Map's items are written to `files`."""
    index = live_uri(settings.index.uri, s3)
    db = connect(index, settings.storage_options())
    table = db.open_table(settings.index.table) if settings.index.table in db.table_names() else None
    table = table if table is not None and current(table) else None
    indexed = doc_hashes(table) if table is not None else {}
    previous = validators.read(db, settings.index.table)
    got = source(previous, indexed)
    if not got.docs:
        raise SourceError("the sources hold no documents to index")
    docs, scopes = with_scopes(got, table)
    stale = [d for d, (h, chunks) in docs.items() if chunks is None and indexed.get(d) != h]
    if stale:  # a source skipped what the index does not hold as it believed: fetch again, never guess
        raise IndexUnavailable(f"{len(stale)} documents are not in the index as their source expected: {stale[:3]}")
    changed = [
        d for d, (h, chunks) in docs.items() if (chunks is not None and indexed.get(d) != h) or d in scopes.moved
    ]
    shards = cut([ShardDoc(d, docs[d][0], docs[d][1] or []) for d in changed], settings.index.shard_chunks, embedder_id)
    for shard in shards:
        shard_files.save(files, shard)
    plan = Plan(
        build=new_build(),
        index=index,
        embedder=embedder_id,
        docs={d: h for d, (h, _) in docs.items()},
        changed=sorted(changed),
        removed=sorted(d for d in indexed if d not in docs),
        kept=sorted(d for d, (_, chunks) in docs.items() if chunks is None),
        scopes={d: sc for d, sc in scopes.of.items() if sc},
        entries=got.entries,
        validators=got.validators,
        previous_validators=previous,
        shards=[s.key for s in shards],
        chunks=sum(s.chunks for s in shards),
        sources=got.sources,
    )
    write(files, plan)
    log.info(
        "build.planned",
        build=plan.build,
        docs=len(plan.docs),
        changed=len(plan.changed),
        removed=len(plan.removed),
        shards=len(shards),
        chunks=plan.chunks,
    )
    return plan


class Scoped(msgspec.Struct):
    of: dict[str, Scope]  # every document's scope
    moved: set[str]  # documents whose scope is not the one the index holds: their rows are written again


def with_scopes(got: Sourced, table: Any) -> tuple[dict[str, tuple[str, list[DocChunk] | None]], Scoped]:
    """Each document's chunks stamped with its scope, by its source's rule on its address (its link, or for a
    document its source found unchanged, the link the index holds). A document whose scope moved is read back
    from the index when its source did not read it again: its rows are rewritten, its vectors reused."""
    held = doc_scopes(table) if table is not None else {}
    out = Scoped(of={}, moved=set())
    docs = dict(got.docs)
    for d, (h, chunks) in got.docs.items():
        address = (chunks[0].url or chunks[0].source) if chunks else held.get(d, ("", Scope()))[0]
        scope = out.of[d] = got.rules[d].of(address or d) if d in got.rules else Scope()
        if chunks is not None:
            docs[d] = (h, [replace(c, product=scope.product, version=scope.version) for c in chunks])
        if d in held and held[d][1] != scope:
            out.moved.add(d)
    if unread := [d for d in out.moved if docs[d][1] is None]:
        for d, (h, chunks) in read_docs(table, unread).items():
            docs[d] = (h, [replace(c, product=out.of[d].product, version=out.of[d].version) for c in chunks])
    return docs, out


def write(files: Files, plan: Plan) -> None:
    files.put(items_key(plan.build), msgspec.json.encode([{"shard": k} for k in plan.shards]))
    files.put(plan_key(plan.build), msgspec.json.encode(plan))


def read(files: Files, build: str) -> Plan:
    return read_json(files, plan_key(build), Plan, f"no build {build!r} (it was committed, or never planned)")
