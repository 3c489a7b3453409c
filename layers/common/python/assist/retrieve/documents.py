"""A whole document, read back from the chunk table in document order (a lookup, not a search)."""

from __future__ import annotations

from typing import Any

from assist.contracts import Chunk

WHOLE_DOCUMENT = "whole_document"
_COLUMNS = ["id", "doc_id", "title", "heading", "text", "ordinal"]


def whole_document(table: Any, doc_id: str, budget_chars: int, found_by: tuple[str, ...] = ()) -> list[Chunk]:
    """The document's chunks in order (`ordinal`), as many as fit in `budget_chars` of text (always
    the first one). Overlapping windows of a long section repeat a little text; that is kept, so each
    chunk reads as it was indexed. Empty when the document is not in the table."""
    where = "doc_id = '" + doc_id.replace("'", "''") + "'"
    rows = table.search().where(where).select(_COLUMNS).limit(None).to_list()
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
            )
        )
    return out
