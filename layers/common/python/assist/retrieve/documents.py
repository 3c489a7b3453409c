"""Whole documents and the list of them, read back from the chunk table (lookups, not searches).

Minimal versions over the chunk table: the corpus manifest (issue 16) lists documents with their
front matter; until it is in the index, a document is what its chunks say (id, title, passages).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from assist.contracts import Chunk

WHOLE_DOCUMENT = "whole_document"
_COLUMNS = ["id", "doc_id", "title", "heading", "text", "ordinal"]


def whole_document(table: Any, doc_id: str, budget_chars: int, found_by: tuple[str, ...] = ()) -> list[Chunk]:
    """The document's chunks in order (`ordinal`), as many as fit in `budget_chars` of text (always
    the first one). Empty when the document is not in the table."""
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


def list_documents(table: Any, contains: str = "") -> list[dict[str, Any]]:
    """Every indexed document (id, title, passages), those whose id or title contains `contains`
    (case-insensitive) when it is given, by id."""
    rows = table.search().select(["doc_id", "title"]).limit(None).to_arrow().to_pylist()
    passages = Counter(r["doc_id"] for r in rows)
    titles = {r["doc_id"]: r["title"] for r in rows}
    needle = contains.lower()
    return [
        {"doc_id": d, "title": t, "passages": passages[d]}
        for d, t in sorted(titles.items())
        if needle in d.lower() or needle in t.lower()
    ]
