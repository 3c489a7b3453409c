"""The LanceDB chunk table: open it (local directory or s3://), build it, keep it current.

The table's schema metadata records which embedder built it, so a query with another
embedder is refused instead of returning meaningless neighbours.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assist.embed.base import check_same
from assist.errors import AssistError
from assist.index.chunking import DocChunk, chunk_document, doc_hash, iter_documents
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.embed.base import Embedder
    from assist.settings import Settings

log = get_logger(__name__)
META_EMBEDDER = b"assist.embedder"
META_DIM = b"assist.dim"
FTS_COLUMN = "content"
# Measured on the docs/ relevance set (see docs/adr): stemming + stop words + ASCII folding.
FTS_OPTIONS = {"stem": True, "remove_stop_words": True, "ascii_folding": True, "with_position": True}


class IndexUnavailable(AssistError, RuntimeError):
    """The index is missing, empty, or unusable; the message says which and what to do."""


@dataclass
class IngestStats:
    docs: int
    chunks: int
    added_docs: int
    removed_docs: int
    unchanged_docs: int

    @property
    def changed(self) -> bool:
        return bool(self.added_docs or self.removed_docs)


def connect(uri: str, storage_options: dict[str, str] | None = None) -> Any:
    import lancedb

    if not uri.startswith("s3://"):
        Path(uri).mkdir(parents=True, exist_ok=True)
    return lancedb.connect(uri, storage_options=storage_options or None)


def schema(embedder: Embedder) -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("id", pa.string()),
            pa.field("doc_id", pa.string()),
            pa.field("title", pa.string()),
            pa.field("heading", pa.string()),
            pa.field("source", pa.string()),
            pa.field("ordinal", pa.int32()),
            pa.field("doc_hash", pa.string()),
            pa.field("text", pa.string()),
            pa.field(FTS_COLUMN, pa.string()),
            pa.field("vector", pa.list_(pa.float32(), embedder.dim)),
        ],
        metadata={META_EMBEDDER: embedder.id.encode(), META_DIM: str(embedder.dim).encode()},
    )


def open_table(settings: Settings, embedder: Embedder, db: Any = None) -> Any:
    db = db if db is not None else connect(settings.index_uri, settings.storage_options())
    try:
        table = db.open_table(settings.index_table)
    except (FileNotFoundError, ValueError) as exc:
        raise IndexUnavailable(
            f"no index table {settings.index_table!r} at {settings.index_uri}: "
            f"run `assist index docs --index {settings.index_uri}`"
        ) from exc
    verify_embedder(table, embedder, settings.index_uri)
    return table


def verify_embedder(table: Any, embedder: Embedder, where: str) -> None:
    meta = table.schema.metadata or {}
    built_id = meta.get(META_EMBEDDER, b"?").decode()
    built_dim = int(meta.get(META_DIM, b"0"))
    check_same(built_id, built_dim, embedder, f"the index at {where}")


def ingest(root: str | Path, settings: Settings, embedder: Embedder, progress: bool = True) -> IngestStats:
    """Bring the index in line with the documents under root; only changed documents are re-embedded."""
    root = Path(root)
    if not root.exists():
        raise IndexUnavailable(f"{root} does not exist")
    docs: dict[str, tuple[str, list[DocChunk]]] = {}
    for doc_id, path in iter_documents(root):
        text = path.read_text(encoding="utf-8", errors="replace")
        if chunks := chunk_document(doc_id, text, source=str(path)):  # an empty file has nothing to index
            docs[doc_id] = (doc_hash(text), chunks)
    if not docs:
        raise IndexUnavailable(f"no Markdown or text content under {root}")

    db = connect(settings.index_uri, settings.storage_options())
    table = None
    if settings.index_table in db.table_names():
        table = db.open_table(settings.index_table)
        verify_embedder(table, embedder, settings.index_uri)
        existing = _doc_hashes(table)
    else:
        existing = {}
    changed = [d for d, (h, _) in docs.items() if existing.get(d) != h]
    removed = [d for d in existing if d not in docs]
    stats = IngestStats(
        docs=len(docs),
        chunks=sum(len(c) for _, c in docs.values()),
        added_docs=len(changed),
        removed_docs=len(removed),
        unchanged_docs=len(docs) - len(changed),
    )
    if not stats.changed:
        log.info("index.current", uri=settings.index_uri, docs=stats.docs)
        return stats

    new_chunks = [(docs[d][0], c) for d in changed for c in docs[d][1]]
    rows = _embed_rows(new_chunks, embedder, progress)
    if table is None:
        table = db.create_table(settings.index_table, data=rows, schema=schema(embedder))
    else:
        stale = changed + removed
        table.delete(" OR ".join(f"doc_id = '{_sql_str(d)}'" for d in stale))
        if rows:
            table.add(rows)
    _refresh_indexes(table)
    log.info(
        "index.updated",
        uri=settings.index_uri,
        docs=stats.docs,
        chunks=stats.chunks,
        changed=stats.added_docs,
        removed=stats.removed_docs,
    )
    return stats


def _doc_hashes(table: Any) -> dict[str, str]:
    cols = table.search().select(["doc_id", "doc_hash"]).limit(None).to_arrow().to_pylist()
    return {r["doc_id"]: r["doc_hash"] for r in cols}


def _embed_rows(chunks: list[tuple[str, DocChunk]], embedder: Embedder, progress: bool) -> list[dict[str, Any]]:
    from tqdm import tqdm

    rows: list[dict[str, Any]] = []
    step = 32
    with tqdm(total=len(chunks), desc="embedding", unit="chunk", disable=not progress, file=sys.stderr) as bar:
        for i in range(0, len(chunks), step):
            batch = chunks[i : i + step]
            vecs = embedder.embed([c.content for _, c in batch])
            for (h, c), v in zip(batch, vecs, strict=True):
                rows.append(
                    {
                        "id": c.id,
                        "doc_id": c.doc_id,
                        "title": c.title,
                        "heading": c.heading,
                        "source": c.source,
                        "ordinal": c.ordinal,
                        "doc_hash": h,
                        "text": c.text,
                        FTS_COLUMN: c.content,
                        "vector": v.tolist(),
                    }
                )
            bar.update(len(batch))
    return rows


def _refresh_indexes(table: Any) -> None:
    """An FTS index is built once on a non-empty table, then kept current by optimize()."""
    if table.count_rows() == 0:
        return
    has_fts = any(FTS_COLUMN in (ix.columns or []) for ix in table.list_indices())
    if has_fts:
        table.optimize()
    else:
        table.create_fts_index(FTS_COLUMN, use_tantivy=False, replace=True, **FTS_OPTIONS)


def _sql_str(s: str) -> str:
    return s.replace("'", "''")
