"""The LanceDB chunk table: open it (local directory or s3://), build it, keep it current.

One declaration of the table's columns, `ChunkRow`: the schema, the rows written and the columns read all
come from it (ADR 0076). The table's schema metadata records which embedder built it, so a query with
another embedder is refused instead of returning meaningless neighbours.
"""

from __future__ import annotations

import time
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from assist.embed.base import check_same
from assist.errors import AssistError
from assist.index import lance
from assist.index.chunking import DocChunk
from assist.index.scope import KEYS as SCOPE_KEYS
from assist.index.scope import row_scope
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.contracts import Scope
    from assist.embed.base import Embedder
    from assist.settings import Settings

log = get_logger(__name__)
META_EMBEDDER = b"assist.embedder"
META_DIM = b"assist.dim"
FTS_COLUMN = "content"
#: tokenizer options INDEX_FTS_OPTIONS may switch on (ADR 0020 measures each); positions are always kept,
#: phrase queries need them
FTS_TOKENIZER_OPTIONS = ("stem", "remove_stop_words", "ascii_folding")
DELETE_BATCH = 500  # doc ids per filter: a 5,000-term IN is slow to plan


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
    product: str = ""  # the scope columns (index/scope.py): "" is in every scope
    version: str = ""

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


def connect(uri: str, storage_options: dict[str, str] | None = None) -> Any:
    """A LanceDB connection to the index location (a local directory, made if missing, or an S3 prefix)."""
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
    """The index's chunk table, checked against the embedder that will query it; IndexUnavailable when there is
    no table or it was built by another embedder."""
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
    """Refuse a table whose vectors another embedder (or dimension) made: its distances would mean nothing."""
    meta = table.schema.metadata or {}
    built_id = meta.get(META_EMBEDDER, b"?").decode()
    built_dim = int(meta.get(META_DIM, b"0"))
    check_same(built_id, built_dim, embedder, f"the index at {where}")


def replace(db: Any, settings: Settings, embedder: Embedder, docs: list[str], rows: Any) -> Any:
    """Make the table hold `rows` (an Arrow table or record-batch reader of the index's schema) in place of every
    row of the documents `docs` names, in one commit: a reader sees the table before or after, never between
    (LanceDB's merge-insert; a new table is created whole). Returns the table."""
    if settings.index.table not in db.table_names():
        return db.create_table(settings.index.table, data=rows, schema=schema(embedder))
    table = db.open_table(settings.index.table)
    verify_embedder(table, embedder, settings.index.uri)
    merge = table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    if docs:
        merge = merge.when_not_matched_by_source_delete(lance.doc_ids_in(docs))
    merge.execute(rows)
    return table


def read_docs(table: Any, doc_ids: list[str]) -> dict[str, tuple[str, list[DocChunk]]]:
    """Documents as the table holds them ({doc_id: (hash, chunks in order)})."""
    out: dict[str, tuple[str, list[DocChunk]]] = {}
    cols = [*CHUNK_COLUMNS, "doc_hash"]
    for i in range(0, len(doc_ids), DELETE_BATCH):
        rows = table.search().where(lance.doc_ids_in(doc_ids[i : i + DELETE_BATCH])).select(cols).limit(None).to_list()
        for r in sorted(rows, key=lambda r: (r["doc_id"], r["ordinal"])):
            _, chunks = out.setdefault(r["doc_id"], (r["doc_hash"], []))
            chunks.append(DocChunk(**{c: r[c] for c in CHUNK_COLUMNS}))
    return out


def current(table: Any) -> bool:
    """Whether the table has every column this version writes (links, scopes); an older one is built again."""
    return {"url", *SCOPE_KEYS} <= set(table.schema.names)


def doc_scopes(table: Any) -> dict[str, tuple[str, Scope]]:
    """{doc_id: (its first passage's link, its scope)} as the table holds them (a current table only)."""
    expr = lance.lancedb().expr
    rows = table.search().where(expr.col("ordinal") == expr.lit(0)).select(["doc_id", "url", *SCOPE_KEYS])
    return {r["doc_id"]: (r["url"], row_scope(r)) for r in rows.limit(None).to_arrow().to_pylist()}


def doc_hashes(table: Any) -> dict[str, str]:
    """{doc_id: content hash} of every document the table holds: what a build compares its sources with."""
    cols = table.search().select(["doc_id", "doc_hash"]).limit(None).to_arrow().to_pylist()
    return {r["doc_id"]: r["doc_hash"] for r in cols}


def vectors_of(table: Any, doc_ids: list[str]) -> dict[str, list[float]]:
    """{content: vector} of these documents' current chunks: a section whose text did not change (another
    section of its page did, or only its link) keeps its vector instead of being embedded again."""
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
    for column in SCOPE_KEYS:  # a scoped search's prefilter reads a bitmap, not every row (ADR 0121)
        if column not in indexed and column in table.schema.names:
            table.create_scalar_index(column, index_type="BITMAP", replace=True)
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
