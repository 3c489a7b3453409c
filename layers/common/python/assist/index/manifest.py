"""The corpus manifest (ADR 0042): one compact entry per indexed document — id, path, title, type, key
front-matter fields, identifiers, headings — so questions about the corpus itself ("how many ADRs?",
"does ADR.50 exist?") and named documents can be answered from what exists, not from top-k chunks.

Stored as a second, tiny LanceDB table beside the chunk table (`<INDEX_TABLE>_manifest`, same
database: a local directory or s3:// alike), written in the same `sync` run and under the same
writer lease, one row per document: `doc_id`, `doc_hash`, `entry` (the entry as JSON).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import msgspec

from assist.contracts import Scope
from assist.index import frontmatter, lance
from assist.index.identifiers import document_identifiers, mentions, normalize
from assist.index.scope import contains, key
from assist.language import fold

if TYPE_CHECKING:
    from assist.index.chunking import DocChunk, Document

#: front-matter fields an entry keeps (first spelling found wins), under the name it shows them by
FIELDS = {
    "status": ("status", "isVersionOf", "state"),
    "date": ("date", "issued", "created"),
    "updated": ("updated", "modified", "last_modified"),
    "version": ("version", "versionInfo"),
    "owner": ("owner", "owners", "author", "authors", "driver", "creator"),
    "approvers": ("approvers", "approved_by", "deciders"),
}
MAX_HEADINGS = 12  # a manifest line names a document's parts, it does not copy its outline
MAX_HEADING_CHARS = 60


class Entry(msgspec.Struct, omit_defaults=True):
    id: str
    title: str
    path: str = ""
    type: str = ""
    label: str = ""  # how the document cites itself (`ADR.12`, `PCP-0017`), when it does
    fields: dict[str, str] = msgspec.field(default_factory=dict)
    identifiers: list[str] = msgspec.field(default_factory=list)
    headings: list[str] = msgspec.field(default_factory=list)
    #: share of the corpus's other documents this one references (index/links.py); 0 for most
    hub: float = 0.0
    #: its scope (ADR 0121); None for a document in every scope
    scope: Scope | None = None


def scope_counts(scopes: dict[str, Scope], documents: int) -> dict[str, int]:
    """Documents per scope (`cli/2.1`; `*/*` those in every scope): how many pages v2 has."""
    counts = Counter(key(s) for s in scopes.values() if s)
    return dict(sorted(counts.items())) | ({"*/*": documents - counts.total()} if counts else {})


def in_scope(entries: list[Entry], asked: Scope | None) -> list[Entry]:
    """The entries a question in `asked` may see (every one when no scope is asked)."""
    return [e for e in entries if contains(asked, e.scope or Scope())] if asked else entries


def table_name(index_table: str) -> str:
    return f"{index_table}_manifest"


def entry_for(doc: Document, root: str = "") -> Entry:
    meta = doc.meta
    fields = {}
    for name, spellings in FIELDS.items():
        if value := next((v for s in spellings if (v := frontmatter.text_field(meta, s))), ""):
            fields[name] = value[:120]
    kind = next((v for k in ("type", "category", "parent") if (v := frontmatter.text_field(meta, k))), "")
    folder = doc.doc_id.rsplit("/", 1)[0] if "/" in doc.doc_id else ""
    path = doc.source[len(root) :].lstrip("/") if root and doc.source.startswith(root) else doc.source
    label = next((v for k in ("id", "nav_order") if (v := frontmatter.text_field(meta, k))), "")
    first = doc.headings[0] if doc.headings else ""
    return Entry(
        id=doc.doc_id,
        title=doc.title,
        path=path,
        type=(kind or folder).lower(),
        label=label,
        fields=fields,
        identifiers=document_identifiers(doc.doc_id, doc.source, meta, first),
        headings=[h[:MAX_HEADING_CHARS] for h in doc.headings[:MAX_HEADINGS]],
    )


def entry_from_chunks(doc_id: str, chunks: list[DocChunk]) -> Entry:
    """An entry for a document known only by its chunks (a BEIR corpus: id and title, no front matter)."""
    title = chunks[0].title if chunks else doc_id
    headings = list(dict.fromkeys(c.heading for c in chunks if c.heading))[:MAX_HEADINGS]
    folder = doc_id.rsplit("/", 1)[0] if "/" in doc_id else ""
    return Entry(
        id=doc_id,
        title=title,
        type=folder.lower(),
        identifiers=document_identifiers(doc_id, "", {}, title),
        headings=headings,
    )


def write(db: Any, index_table: str, entries: dict[str, Entry], hashes: dict[str, str]) -> int:
    """Bring the manifest table in line with these entries ({doc_id: entry}, hashes by doc_id): changed
    and new rows replaced, missing ones deleted. Returns the number of rows written or deleted."""
    pa = lance.arrow()
    name = table_name(index_table)
    table = db.open_table(name) if name in db.table_names() else None
    existing: dict[str, str] = {}
    if table is not None:
        rows = table.search().select(["doc_id", "entry"]).limit(None).to_arrow().to_pylist()
        existing = {r["doc_id"]: r["entry"] for r in rows}
    # by the entry itself, not the document's hash: an unchanged document's hub share follows the corpus
    encoded = {d: msgspec.json.encode(e).decode() for d, e in entries.items()}
    changed = [d for d in entries if existing.get(d) != encoded[d]]
    removed = [d for d in existing if d not in entries]
    if not changed and not removed and table is not None:
        return 0
    rows = [{"doc_id": d, "doc_hash": hashes.get(d, ""), "entry": encoded[d]} for d in changed]
    schema = pa.schema([("doc_id", pa.string()), ("doc_hash", pa.string()), ("entry", pa.string())])
    if table is None:
        db.create_table(name, data=rows, schema=schema)
        return len(rows)
    stale = changed + removed
    for i in range(0, len(stale), 500):
        table.delete(lance.doc_ids_in(stale[i : i + 500]))
    if rows:
        table.add(rows)
    return len(stale)


def read(db: Any, index_table: str) -> list[Entry] | None:
    """Every entry, by document id; None when the index has no manifest (built before it existed)."""
    name = table_name(index_table)
    if name not in db.table_names():
        return None
    column = db.open_table(name).to_arrow().column("entry").to_pylist()
    decoder = msgspec.json.Decoder(Entry)
    return sorted((decoder.decode(e) for e in column), key=lambda e: e.id)


def line(e: Entry) -> str:
    """One manifest entry as one prompt line: what it is called, what it is, where it is."""
    facts = [f"{k}: {v}" for k, v in e.fields.items()]
    path = e.path or e.id
    if e.type and not path.lower().startswith(f"{e.type}/"):  # a folder named in the path is not said twice
        facts.append(f"type: {e.type}")
    facts += [f"path: {path}"]
    return f"- {name(e)} ({'; '.join(facts)})"


def name(e: Entry) -> str:
    """What a document is called, its label said once: 'ADR.12 — Use CIM', but 'ADR 0003 — template.yaml
    is …' alone when the title already opens with (or holds) its label."""
    if not e.label:
        return e.title
    key = normalize(e.label)
    said = key in mentions(e.title) if key else fold(e.label) in fold(e.title)
    return e.title if said else f"{e.label} — {e.title}"
