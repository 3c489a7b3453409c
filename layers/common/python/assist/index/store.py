"""The LanceDB chunk table: open it (local directory or s3://), build it, keep it current.

One declaration of the table's columns, `ChunkRow`: the schema, the rows written and the columns read all
come from it (ADR 0076). The table's schema metadata records which embedder built it, so a query with
another embedder is refused instead of returning meaningless neighbours.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from assist import metrics
from assist.embed.base import check_same
from assist.errors import AssistError
from assist.index import lance, manifest
from assist.index.chunking import DocChunk
from assist.index.links import with_hubs
from assist.index.lock import writer_lease
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.embed.base import Embedder
    from assist.settings import Settings

log = get_logger(__name__)
META_EMBEDDER = b"assist.embedder"
META_DIM = b"assist.dim"
FTS_COLUMN = "content"
#: tokenizer options INDEX_FTS_OPTIONS may switch on (ADR 0020 measures each); positions are always kept,
#: phrase queries need them
FTS_TOKENIZER_OPTIONS = ("stem", "remove_stop_words", "ascii_folding")
DELETE_BATCH = 500


class ChunkRow(msgspec.Struct, frozen=True, kw_only=True):
    """A row of the chunk table; its fields, in this order, are the table's columns."""

    id: str
    doc_id: str
    title: str
    heading: str
    source: str
    ordinal: int
    doc_hash: str
    text: str
    url: str
    content: str  # FTS_COLUMN: what is embedded and full-text indexed (`DocChunk.content`)
    vector: list[float]  # `embedder.dim` float32s

    @classmethod
    def of(cls, chunk: DocChunk, doc_hash: str, vector: list[float]) -> ChunkRow:
        return cls(
            **{c: getattr(chunk, c) for c in CHUNK_COLUMNS}, doc_hash=doc_hash, content=chunk.content, vector=vector
        )

    def row(self) -> dict[str, Any]:
        """The row as LanceDB writes it."""
        return msgspec.structs.asdict(self)


#: the columns a `DocChunk` is read back from
CHUNK_COLUMNS = tuple(f.name for f in fields(DocChunk))


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
    if not uri.startswith("s3://"):
        Path(uri).mkdir(parents=True, exist_ok=True)
    return lance.lancedb().connect(uri, storage_options=storage_options or None)


def schema(embedder: Embedder) -> Any:
    """`ChunkRow` as the table's Arrow schema, with the embedder that fills its vectors."""
    pa = lance.arrow()
    arrow = {str: pa.string(), int: pa.int32()}
    columns = [
        pa.field(f.name, pa.list_(pa.float32(), embedder.dim) if f.name == "vector" else arrow[f.type])
        for f in msgspec.structs.fields(ChunkRow)
    ]
    return pa.schema(columns, metadata={META_EMBEDDER: embedder.id.encode(), META_DIM: str(embedder.dim).encode()})


def open_table(settings: Settings, embedder: Embedder, db: Any = None) -> Any:
    db = db if db is not None else connect(settings.index.uri, settings.storage_options())
    try:
        table = db.open_table(settings.index.table)
    except (FileNotFoundError, ValueError) as exc:
        raise IndexUnavailable(
            f"no index table {settings.index.table!r} at {settings.index.uri}: "
            f"run `assist index docs --index {settings.index.uri}`"
        ) from exc
    verify_embedder(table, embedder, settings.index.uri)
    return table


def verify_embedder(table: Any, embedder: Embedder, where: str) -> None:
    meta = table.schema.metadata or {}
    built_id = meta.get(META_EMBEDDER, b"?").decode()
    built_dim = int(meta.get(META_DIM, b"0"))
    check_same(built_id, built_dim, embedder, f"the index at {where}")


def sync(
    docs: dict[str, tuple[str, list[DocChunk]]],
    settings: Settings,
    embedder: Embedder,
    progress: bool = True,
    s3: Any = None,
    entries: dict[str, manifest.Entry] | None = None,
) -> IngestStats:
    """Make the table hold exactly these documents ({doc_id: (content hash, chunks)}): documents whose
    hash changed are replaced, missing ones deleted, unchanged ones left alone (not re-embedded).
    The corpus manifest follows in the same run (`entries`, or ones made from the chunks: id, title).
    Runs under the index's writer lease (`lock.py`): one writer at a time."""
    with writer_lease(settings.index.uri, s3):
        return write(
            connect(settings.index.uri, settings.storage_options()), docs, settings, embedder, progress, entries
        )


def write(
    db: Any,
    docs: dict[str, tuple[str, list[DocChunk] | None]],
    settings: Settings,
    embedder: Embedder,
    progress: bool = True,
    entries: dict[str, manifest.Entry] | None = None,
) -> IngestStats:
    """`sync` for a caller that holds the writer lease. A document given with chunks None is one its
    source did not fetch again (unchanged since the last sync): it stays as the index has it."""
    kept = [d for d, (_, chunks) in docs.items() if chunks is None]
    stats = _sync(db, docs, settings, embedder, progress)
    full = {d: (h, chunks) for d, (h, chunks) in docs.items() if chunks is not None}
    if kept:
        full |= _read_docs(db.open_table(settings.index.table), kept)
    entries = dict(entries or {})
    old = {e.id: e for e in manifest.read(db, settings.index.table) or []} if kept else {}
    for d, (_, chunks) in full.items():
        if d not in entries:
            entries[d] = old.get(d) or manifest.entry_from_chunks(d, chunks)
    entries = with_hubs(entries, {d: chunks for d, (_, chunks) in full.items()})
    written = manifest.write(db, settings.index.table, entries, {d: h for d, (h, _) in full.items()})
    log.info("index.manifest", entries=len(entries), written=written)
    metrics.indexed(stats.docs)
    return stats


def _read_docs(table: Any, doc_ids: list[str]) -> dict[str, tuple[str, list[DocChunk]]]:
    """Documents as the table holds them ({doc_id: (hash, chunks in order)})."""
    out: dict[str, tuple[str, list[DocChunk]]] = {}
    cols = [*CHUNK_COLUMNS, "doc_hash"]
    for i in range(0, len(doc_ids), DELETE_BATCH):
        rows = table.search().where(lance.doc_ids_in(doc_ids[i : i + DELETE_BATCH])).select(cols).limit(None).to_list()
        for r in sorted(rows, key=lambda r: (r["doc_id"], r["ordinal"])):
            _, chunks = out.setdefault(r["doc_id"], (r["doc_hash"], []))
            chunks.append(DocChunk(**{c: r[c] for c in CHUNK_COLUMNS}))
    return out


def _sync(
    db: Any, docs: dict[str, tuple[str, list[DocChunk]]], settings: Settings, embedder: Embedder, progress: bool
) -> IngestStats:
    table = None
    if settings.index.table in db.table_names():
        table = db.open_table(settings.index.table)
        verify_embedder(table, embedder, settings.index.uri)
        if "url" not in table.schema.names:  # built before documents kept their links: rebuilt whole, once
            log.info("index.rebuilt_for_urls", uri=settings.index.uri)
            db.drop_table(settings.index.table)
            table = None
    existing = doc_hashes(table) if table is not None else {}
    stale = [d for d, (h, chunks) in docs.items() if chunks is None and existing.get(d) != h]
    if stale:  # a source skipped what the index does not hold as it believed: refetch, never guess
        raise IndexUnavailable(f"{len(stale)} documents are not in the index as their source expected: {stale[:3]}")
    changed = [d for d, (h, _) in docs.items() if existing.get(d) != h]
    removed = [d for d in existing if d not in docs]
    stats = IngestStats(
        docs=len(docs),
        chunks=sum(len(c) for _, c in docs.values() if c is not None),
        added_docs=len(changed),
        removed_docs=len(removed),
        unchanged_docs=len(docs) - len(changed),
    )
    if not stats.changed:
        log.info("index.current", uri=settings.index.uri, docs=stats.docs)
        return stats

    new_chunks = [(docs[d][0], c) for d in changed for c in docs[d][1] or []]
    rows = _embed_rows(new_chunks, embedder, progress, _vectors(table, changed))
    if table is None:
        table = db.create_table(settings.index.table, data=rows, schema=schema(embedder))
    else:
        stale = changed + removed
        for i in range(0, len(stale), DELETE_BATCH):  # one predicate per batch: a 5,000-term OR is slow to plan
            table.delete(lance.doc_ids_in(stale[i : i + DELETE_BATCH]))
        if rows:
            table.add(rows)
    refresh_indexes(table, settings)
    log.info(
        "index.updated",
        uri=settings.index.uri,
        docs=stats.docs,
        chunks=stats.chunks,
        changed=stats.added_docs,
        removed=stats.removed_docs,
    )
    return stats


def doc_hashes(table: Any) -> dict[str, str]:
    cols = table.search().select(["doc_id", "doc_hash"]).limit(None).to_arrow().to_pylist()
    return {r["doc_id"]: r["doc_hash"] for r in cols}


def _vectors(table: Any, doc_ids: list[str]) -> dict[str, list[float]]:
    """{content: vector} of the changed documents' current chunks: a section whose text did not change
    (another section of its page did, or only its link) keeps its vector instead of being embedded again."""
    if table is None or not doc_ids:
        return {}
    out: dict[str, list[float]] = {}
    for i in range(0, len(doc_ids), DELETE_BATCH):
        for r in (
            table.search()
            .where(lance.doc_ids_in(doc_ids[i : i + DELETE_BATCH]))
            .select([FTS_COLUMN, "vector"])
            .limit(None)
            .to_list()
        ):
            out[r[FTS_COLUMN]] = r["vector"]
    return out


def _embed_rows(
    chunks: list[tuple[str, DocChunk]], embedder: Embedder, progress: bool, known: dict[str, list[float]]
) -> list[dict[str, Any]]:
    # deferred, ADR 0104: tqdm, 0.015 s, for an index build only
    from tqdm import tqdm

    step = 32
    todo = list(dict.fromkeys(c.content for _, c in chunks if c.content not in known))
    with tqdm(total=len(todo), desc="embedding", unit="chunk", disable=not progress, file=sys.stderr) as bar:
        for i in range(0, len(todo), step):
            batch = todo[i : i + step]
            known |= dict(zip(batch, (v.tolist() for v in embedder.embed(batch)), strict=True))
            bar.update(len(batch))
    log.info("index.embedded", chunks=len(chunks), embedded=len(todo))
    return [ChunkRow.of(c, h, known[c.content]).row() for h, c in chunks]


def fts_options(settings: Settings) -> dict[str, bool]:
    unknown = set(settings.index.fts_options) - {*FTS_TOKENIZER_OPTIONS, "none"}
    if unknown:
        raise IndexUnavailable(
            f"INDEX_FTS_OPTIONS: unknown {sorted(unknown)}; use any of {'|'.join(FTS_TOKENIZER_OPTIONS)}, or none"
        )
    return {o: o in settings.index.fts_options for o in FTS_TOKENIZER_OPTIONS} | {"with_position": True}


def refresh_indexes(table: Any, settings: Settings) -> None:
    """Keep every row searchable through an index after a write.

    The FTS index is built once, on a non-empty table (never on an empty one), with the tokenizer of
    INDEX_FTS_OPTIONS, and kept current by `optimize()`. From INDEX_VECTOR_INDEX_ROWS chunks on, an
    IVF_PQ vector index replaces exhaustive search (ADR 0020 has the measurement); `optimize()`
    folds new rows into it too.
    """
    rows = table.count_rows()
    if rows == 0:
        return
    indexed = {c for ix in table.list_indices() for c in (ix.columns or [])}
    if FTS_COLUMN not in indexed:
        table.create_fts_index(FTS_COLUMN, use_tantivy=False, replace=True, **fts_options(settings))
    if "vector" not in indexed and rows >= settings.index.vector_index_rows:
        start = time.perf_counter()
        table.create_index(
            metric="l2",
            index_type="IVF_PQ",
            num_partitions=max(1, int(rows**0.5)),
            num_sub_vectors=_sub_vectors(table),
            vector_column_name="vector",
        )
        log.info("index.vector_index_built", rows=rows, s=round(time.perf_counter() - start, 1))
    if indexed:  # an index built just now covers every row; one that existed before needs the new rows folded in
        table.optimize()


def _sub_vectors(table: Any) -> int:
    """PQ sub-vectors of 8 dimensions each (384 → 48), a divisor of the dimension as IVF_PQ needs."""
    dim = table.schema.field("vector").type.list_size
    return next(n for n in (dim // 8, dim // 4, dim // 2, 1) if n and dim % n == 0)
