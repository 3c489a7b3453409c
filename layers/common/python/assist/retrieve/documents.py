"""A whole document, read back from the chunk table in document order (a lookup, not a search)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from assist.contracts import Chunk
from assist.index import lance

if TYPE_CHECKING:
    from assist.index.manifest import Entry

WHOLE_DOCUMENT = "whole_document"
_COLUMNS = ["id", "doc_id", "title", "heading", "text", "ordinal", "url"]


def whole_document(table: Any, doc_id: str, budget_chars: int, found_by: tuple[str, ...] = ()) -> list[Chunk]:
    """The document's chunks in order (`ordinal`), as many as fit in `budget_chars` of text (always
    the first one). Overlapping windows of a long section repeat a little text; that is kept, so each
    chunk reads as it was indexed. Empty when the document is not in the table."""
    rows = table.search().where(lance.doc_id_is(doc_id)).select(_COLUMNS).limit(None).to_list()
    rows.sort(key=lambda r: (r["ordinal"], r["id"]))
    out: list[Chunk] = []
    used = 0
    for r in rows:
        if out and used + len(r["text"]) > budget_chars:
            break
        used += len(r["text"])
        out.append(
            Chunk(
                id=r["id"],
                doc_id=r["doc_id"],
                title=r["title"],
                heading=r["heading"],
                text=r["text"],
                score=1.0,
                found_by=[*found_by, WHOLE_DOCUMENT],
                agreement=1,
                url=r.get("url") or "",
            )
        )
    return out


def list_documents(table: Any, contains: str = "", entries: list[Entry] | None = None) -> list[dict[str, Any]]:
    """Every indexed document, by id; those whose id, title or type contains `contains` (case-insensitive)
    when it is given. From the corpus manifest when the index has one (type, label, key front-matter
    fields), else from the chunk table (id, title, passages)."""
    needle = contains.lower()
    if entries is not None:
        return [
            {"doc_id": e.id, "title": e.title}
            | {k: v for k, v in (("type", e.type), ("label", e.label), ("fields", e.fields)) if v}
            for e in sorted(entries, key=lambda e: e.id)
            if needle in e.id.lower() or needle in e.title.lower() or needle in e.type.lower()
        ]
    rows = table.search().select(["doc_id", "title"]).limit(None).to_arrow().to_pylist()
    passages = Counter(r["doc_id"] for r in rows)
    titles = {r["doc_id"]: r["title"] for r in rows}
    return [
        {"doc_id": d, "title": t, "passages": passages[d]}
        for d, t in sorted(titles.items())
        if needle in d.lower() or needle in t.lower()
    ]
