"""One shard's worker: the vectors of its chunks, then its rows, written once under its key.

Vectors come from, in order: the rows file of an earlier run (the shard is done: nothing to do), the index as
it is (a section whose text did not change keeps its vector), the vector cache (batches an earlier, stopped run
kept), and last the embedder, in batches of similar length (less padding), each batch kept as soon as it is
made. Running a shard twice leaves its rows once: the rows file is written whole, under the shard's key."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from assist.build import shards, vectors
from assist.build.shards import content_key
from assist.index import store
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.build.files import Files
    from assist.embed.base import Embedder
    from assist.index.chunking import DocChunk

log = get_logger(__name__)
#: texts per embedder call and per cached batch: large enough to keep the cores busy, small enough that a stop
#: loses little (about 6 s of one core's work at 240 tokens a chunk)
BATCH = 64
#: content → vector of the index's current rows for these documents (the reuse of unchanged sections)
Reuse = Callable[[list[str]], dict[str, list[float]]]


class ShardDone(msgspec.Struct, frozen=True):
    key: str
    chunks: int
    embedded: int  # texts this run embedded
    complete: bool  # False: stopped at the deadline; what it embedded is kept for the next run


def embed_shard(
    files: Files,
    shard_key: str,
    embedder: Embedder,
    reuse: Reuse | None = None,
    end: float | None = None,
    advance: Callable[[int], None] | None = None,
    pace: Pace | None = None,
) -> ShardDone:
    """Embed the shard stored under `shard_key` and write its rows; stop before a batch that would pass `end`
    (epoch seconds), as `pace` (the run's batches so far) foresees: a run's first batch always runs, so every
    run makes progress. `advance(n)`: n more chunks have vectors (a progress bar)."""
    pace = pace or Pace()
    shard = shards.load(files, shard_key)
    if files.get(shards.rows_path(shard_key)) is not None:
        return ShardDone(shard_key, shard.chunks, 0, True)
    if shard.embedder != embedder.id:
        raise ValueError(f"shard {shard_key} was planned for embedder {shard.embedder}, not {embedder.id}")
    keyed = {c.content: content_key(c.content) for d in shard.docs for c in d.chunks}
    known = vectors.cached(files, shard_key)
    if reuse is not None:
        old = reuse([d.doc_id for d in shard.docs])
        known |= {k: np.asarray(old[c], dtype=np.float32) for c, k in keyed.items() if c in old}
    todo = [c for c, k in keyed.items() if k not in known]
    if advance:
        advance(len(keyed) - len(todo))
    embedded = 0
    for batch in _by_length(todo):
        started = time.time()
        if end is not None and pace.measured and started + pace.estimate(batch) > end:
            log.info("build.shard_stopped", shard=shard_key, embedded=embedded, left=len(todo) - embedded)
            return ShardDone(shard_key, shard.chunks, embedded, False)
        made = embedder.embed(batch)
        keys = [keyed[c] for c in batch]
        vectors.keep(files, shard_key, keys, made)
        known.update(zip(keys, made, strict=True))
        embedded += len(batch)
        pace.record(batch, time.time() - started)
        if advance:
            advance(len(batch))
    chunks = [(d.hash, c) for d in shard.docs for c in d.chunks]
    table = rows_table(chunks, np.stack([known[keyed[c.content]] for _, c in chunks]), embedder)
    buf = io.BytesIO()
    pq.write_table(table, buf)
    files.put(shards.rows_path(shard_key), buf.getvalue())
    log.info("build.shard_embedded", shard=shard_key, chunks=shard.chunks, embedded=embedded)
    return ShardDone(shard_key, shard.chunks, embedded, True)


def _by_length(texts: list[str]) -> list[list[str]]:
    """Batches of texts of similar length: a batch is padded to its longest text, so sorting first spares the
    model the padding (characters stand in for tokens)."""
    ordered = sorted(texts, key=len)
    return [ordered[i : i + BATCH] for i in range(0, len(ordered), BATCH)]


class Pace:
    """Seconds per character of the batches a run embedded: the deadline's estimate for the next batch (the
    slowest of the recent ones, so a stop comes early rather than late)."""

    def __init__(self) -> None:
        self._rates: list[float] = []

    @property
    def measured(self) -> bool:
        """Whether the run has embedded a batch yet: until it has, the next batch runs whatever the clock says."""
        return bool(self._rates)

    def record(self, batch: list[str], seconds: float) -> None:
        self._rates = [*self._rates[-7:], seconds / max(1, sum(map(len, batch)))]

    def estimate(self, batch: list[str]) -> float:
        return max(self._rates, default=0.0) * sum(map(len, batch))


def rows_table(chunks: list[tuple[str, DocChunk]], vectors: np.ndarray, embedder: Embedder) -> pa.Table:
    """The rows of these chunks ((document hash, chunk), with one vector each, in order) as an Arrow table of the
    index's schema (the build's only: numpy stays off the readers' import path)."""
    columns: dict[str, Any] = {c: [getattr(chunk, c) for _, chunk in chunks] for c in store.CHUNK_COLUMNS}
    columns["doc_hash"] = [h for h, _ in chunks]
    columns[store.FTS_COLUMN] = [chunk.content for _, chunk in chunks]
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
    columns["vector"] = pa.FixedSizeListArray.from_arrays(flat, embedder.dim)
    target = store.schema(embedder)
    return pa.table([columns[f.name] for f in target], schema=target)
