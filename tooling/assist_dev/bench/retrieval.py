"""`assist bench retrieval`: search latency of fts, vector, LanceDB's rrf and our adaptive search on a
generated corpus of N chunks, on a local directory and on the emulated S3 (read from a local copy of the
published version, as the retrieve function does, and directly), with the index build time.

The corpus is generated, not embedded: 100k chunks through MiniLM would take over an hour on two
cores, and the figure asked for excludes the query embedding anyway (measured separately, with the
real model, and printed as `query_embedding`). Texts draw words from our docs' vocabulary with a
Zipf-like skew, so BM25 sees realistic term statistics; vectors are noisy copies of topic
centroids, so an IVF index has clusters to find. Each query is words (sometimes a quoted phrase)
from one chunk, with that chunk's vector plus noise.
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from assist.aws.clients import client
from assist.contracts import Scope
from assist.embed import build_embedder
from assist.index import pointer
from assist.index.scope import ScopedTable
from assist.index.store import FTS_COLUMN, ChunkRow, connect, refresh_indexes, schema
from assist.retrieve.analysis import words
from assist.retrieve.handle import IndexHandle
from assist.retrieve.search import Retriever, SearchOptions
from assist.settings import Settings
from assist.stats import percentile
from assist_dev.local.stack import MotoServer, local_settings

DIM = 384
TOPICS = 256
WORDS_PER_CHUNK = 110
STRATEGIES = ("fts", "vector", "rrf", "adaptive")
#: the same searches inside one scope (ADR 0121): a prefilter on the scope columns
SCOPED = ("fts_scoped", "vector_scoped", "adaptive_scoped")
ASKED = Scope(product="s0")  # the scope the scoped searches ask for


@dataclass(frozen=True)
class Space:
    """Stands for the embedder in the table's metadata: these vectors come from no model."""

    id: str = "bench:random"
    dim: int = DIM


@dataclass(frozen=True)
class Query:
    text: str
    vector: np.ndarray


def vocabulary(docs: Path) -> list[str]:
    found = sorted({w.lower() for p in docs.rglob("*.md") for w in re.findall(r"[A-Za-z]{3,}", p.read_text())})
    return found or [f"term{i}" for i in range(2000)]


def corpus(
    n: int, vocab: list[str], seed: int = 7, scope_fraction: float = 0.0, interleaved: bool = False
) -> tuple[list[dict[str, Any]], list[Query]]:
    """`scope_fraction` f: the rows in scopes `s0`, `s1`, … of that share each (`s0`, the one asked, holds f of
    them); 0: no row has a scope. A scope's rows are adjacent, as a build writes them (source by source, a
    pattern's pages in path order); `interleaved`: every row in the next scope, a layout no build writes and the
    full-text prefilter's worst case (ADR 0121)."""
    scopes = round(1 / scope_fraction) if scope_fraction else 0
    rng = np.random.default_rng(seed)
    centroids = _unit(rng.normal(size=(TOPICS, DIM)).astype(np.float32))
    # each topic prefers its own slice of the vocabulary; ranks follow a Zipf-like law
    weights = 1.0 / np.arange(1, len(vocab) + 1) ** 1.05
    weights /= weights.sum()
    shifts = rng.integers(0, len(vocab), size=TOPICS)
    rows: list[dict[str, Any]] = []
    topics = rng.integers(0, TOPICS, size=n)
    vectors = _unit(centroids[topics] + 0.35 * rng.normal(size=(n, DIM)).astype(np.float32))
    picks = (rng.choice(len(vocab), size=(n, WORDS_PER_CHUNK), p=weights) + shifts[topics][:, None]) % len(vocab)
    for i in range(n):
        text = " ".join(vocab[j] for j in picks[i])
        chunk = ChunkRow(
            id=f"c{i}:0",
            doc_id=f"c{i}",
            title=f"Chunk {i}",
            heading="",
            source="generated",
            ordinal=0,
            doc_hash="",
            text=text,
            url="",
            content=text,
            vector=vectors[i],
            product=(f"s{i % scopes}" if interleaved else f"s{i * scopes // n}") if scopes else "",
        )
        rows.append(chunk.row())
    queries = []
    for q in range(200):
        row = rows[int(rng.integers(0, n))]
        ws = row["text"].split()
        start = int(rng.integers(0, len(ws) - 4))
        text = " ".join(ws[start : start + int(rng.integers(2, 5))])
        text = f'"{text}"' if q % 5 == 0 else f"how does {text} work"  # a fifth are exact quotes
        qv = _unit(row["vector"] + 0.2 * rng.normal(size=DIM).astype(np.float32))
        queries.append(Query(text, qv))
    return rows, queries


def build(settings: Settings, rows: list[dict[str, Any]]) -> tuple[Any, float]:
    start = time.perf_counter()
    db = connect(settings.index.uri, settings.storage_options())
    if settings.index.table in db.table_names():
        db.drop_table(settings.index.table)
    # one write, one fragment: the figures are of search, not of a table waiting for compaction
    table = db.create_table(settings.index.table, data=rows, schema=schema(Space()))
    refresh_indexes(table, settings)
    return table, time.perf_counter() - start


def runners(table: Any, options: SearchOptions, k: int, scoped: bool = False) -> dict[str, Callable[[Query], Any]]:
    # deferred, ADR 0071: lancedb 3.1 s
    from lancedb.query import MatchQuery

    retriever = Retriever(table, Space(), options)  # type: ignore[arg-type]  # vectors are passed in

    def text(q: Query) -> str:
        return " ".join(words(q.text))

    plain = {
        "fts": lambda q: table.search(MatchQuery(text(q), FTS_COLUMN), query_type="fts").limit(k).to_list(),
        "vector": lambda q: table.search(q.vector).limit(k).to_list(),
        "rrf": lambda q: (
            table.search(query_type="hybrid", fts_columns=FTS_COLUMN).vector(q.vector).text(text(q)).limit(k).to_list()
        ),
        "adaptive": lambda q: retriever.search(q.text, k=k, vector=q.vector),
    }
    if not scoped:
        return plain
    inside = ScopedTable(table, ASKED)
    return plain | {
        "fts_scoped": lambda q: inside.search(MatchQuery(text(q), FTS_COLUMN), query_type="fts").limit(k).to_list(),
        "vector_scoped": lambda q: inside.search(q.vector).limit(k).to_list(),
        "adaptive_scoped": lambda q: retriever.search(q.text, k=k, vector=q.vector, scope=ASKED),
    }


def timings(
    table: Any, queries: list[Query], options: SearchOptions, k: int = 10, scoped: bool = False
) -> dict[str, dict[str, Any]]:
    runs = runners(table, options, k, scoped)
    for run in runs.values():
        for q in queries[:5]:  # warm: open files, load index pages
            run(q)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for i, q in enumerate(queries):  # interleaved, in turning order: the machine's swings fall on all alike
        names = list(runs)[i % len(runs) :] + list(runs)[: i % len(runs)]
        for name in names:
            start = time.perf_counter()
            runs[name](q)
            times[name].append((time.perf_counter() - start) * 1000)
    out = {name: {"p50_ms": percentile(t, 50), "p95_ms": percentile(t, 95)} for name, t in times.items()}
    out["adaptive"]["ratio_to_rrf"] = round(out["adaptive"]["p50_ms"] / max(out["rrf"]["p50_ms"], 1e-9), 2)
    for name in SCOPED if scoped else ():  # in the same run, interleaved: the ratio the machine's load cannot skew
        plain = out[name.removesuffix("_scoped")]["p50_ms"]
        out[name]["ratio_to_unscoped"] = round(out[name]["p50_ms"] / max(plain, 1e-9), 2)
    return out


def query_embedding(settings: Settings, queries: list[Query]) -> dict[str, float]:
    """The real model on these queries' texts: what a search adds when the caller has no vector yet."""
    embedder = build_embedder(settings)
    embedder.embed([queries[0].text])
    times = []
    for q in queries[:100]:
        start = time.perf_counter()
        embedder.embed([q.text])
        times.append((time.perf_counter() - start) * 1000)
    return {"p50_ms": percentile(times, 50), "p95_ms": percentile(times, 95)}


def run(
    settings: Settings,
    n: int,
    docs: Path,
    s3_queries: int | None = None,
    scope_fraction: float = 0.0,
    local_only: bool = False,
    interleaved: bool = False,
) -> dict[str, Any]:
    """Local: build and search. S3: the same index, published to the emulated S3 as a version, and searched
    the way the retrieve function reads it: from a local copy of the published version (`s3`: the fetch, the
    first question after the publish, then steady state), and directly on S3 (`s3_direct`, INDEX_READ=s3).

    The S3 index is built locally and uploaded — how a batch job publishes an index — because
    building IVF_PQ through moto re-reads whole objects on every range request (hours at 100k
    rows), which says nothing about S3. Its `build_s` is the local build plus the upload. For the
    same reason direct S3 searches are slow at any size here; fewer of them are timed on a large index.
    `scope_fraction`: rows in scopes of that share each, and the searches timed inside one of them too (local);
    `interleaved`: the scopes' rows alternate instead of lying together (`corpus`);
    `local_only`: no S3 figures (a large index's build and upload through moto take long on a small machine).
    """
    s3_queries = (50 if n <= 20_000 else 10) if s3_queries is None else s3_queries

    progress(f"generating {n:,} chunks")
    rows, queries = corpus(n, vocabulary(docs), scope_fraction=scope_fraction, interleaved=interleaved)
    options = SearchOptions.from_settings(settings)
    result: dict[str, Any] = {"rows": n, "scope_fraction": scope_fraction, "scopes_interleaved": interleaved}
    moto = MotoServer().start()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-retrieval-") as tmp:
            local = settings.with_(index={"uri": str(Path(tmp) / "index"), "table": "bench"})
            progress("local: building the index")
            table, build_s = build(local, rows)
            progress(f"local: built in {build_s:.1f} s; timing {len(queries)} searches per strategy")
            result["local"] = {
                "build_s": round(build_s, 2),
                "first_search_ms": first_search(local.index.uri, "bench", queries[0], options),
                **timings(table, queries, options, scoped=scope_fraction > 0),
            }
            if local_only:
                return _finish(result, settings, queries, n)
            s3_settings = local_settings(settings, moto.url, "s3://assist-data/bench-index").with_(
                index={"table": "bench", "copy_dir": str(Path(tmp) / "copies")}
            )
            s3 = client("s3", s3_settings)
            s3.create_bucket(Bucket="assist-data")
            progress("s3: publishing the index to the emulated S3")
            start = time.perf_counter()
            upload(Path(local.index.uri), s3, "assist-data", "bench-index/versions/bench")
            pointer.write(s3_settings.index.uri, pointer.Pointer("bench"), s3)
            upload_s = time.perf_counter() - start
            progress("s3: the first question after the publish (the copy fetched, opened, searched)")
            result["s3"] = {
                "read": "copy",
                "build_s": round(build_s + upload_s, 2),
                "upload_s": round(upload_s, 2),
                **first_question(s3_settings, s3, queries[0], options),
            }
            copied = connect(IndexHandle(s3_settings, s3).location()).open_table("bench")
            progress(f"s3: timing {len(queries)} searches per strategy on the copy")
            result["s3"] |= timings(copied, queries, options)
        if s3_queries:
            progress(f"s3 direct: timing {s3_queries} searches per strategy")
            direct = connect(s3_settings.index.uri + "/versions/bench", s3_settings.storage_options())
            result["s3_direct"] = {"read": "s3", **timings(direct.open_table("bench"), queries[:s3_queries], options)}
    finally:
        moto.stop()
    result["s3"]["adaptive"]["ratio_to_local"] = round(
        result["s3"]["adaptive"]["p50_ms"] / max(result["local"]["adaptive"]["p50_ms"], 1e-9), 2
    )
    return _finish(result, settings, queries, n)


def _finish(result: dict[str, Any], settings: Settings, queries: list[Query], n: int) -> dict[str, Any]:
    result["query_embedding"] = query_embedding(settings, queries)
    result["vector_index"] = "IVF_PQ" if n >= settings.index.vector_index_rows else "none (exhaustive)"
    result["budget"] = {
        "adaptive_p50_ms": 30.0,
        "adaptive_ratio_to_rrf": 1.2,
        "s3_adaptive_ratio_to_local": 3.0,
        "scoped_ratio_to_unscoped": 1.0,
    }
    return result


def first_question(settings: Settings, s3: Any, query: Query, options: SearchOptions) -> dict[str, Any]:
    """A fresh reader's first search after a publish, as the retrieve function makes it: the pointer read, the
    version copied to local storage, the table opened, one adaptive search. The copy's figures per MB."""
    start = time.perf_counter()
    handle = IndexHandle(settings, s3)
    location = handle.location()
    copied = time.perf_counter()
    search_ms = first_search(location, settings.index.table, query, options)
    fetched = handle.copies.last if handle.copies else {}
    return {
        "first_question_ms": round((time.perf_counter() - start) * 1000, 1),
        "pointer_and_copy_ms": round((copied - start) * 1000, 1),
        "first_search_ms": search_ms,
        "fetch": fetched,
    }


def first_search(uri: str, table: str, query: Query, options: SearchOptions) -> float:
    """Milliseconds to open the table and make its first adaptive search (its indexes read from disk)."""
    start = time.perf_counter()
    opened = connect(uri).open_table(table)
    Retriever(opened, Space(), options).search(query.text, k=10, vector=query.vector)  # type: ignore[arg-type]
    return round((time.perf_counter() - start) * 1000, 1)


def progress(message: str) -> None:
    sys.stderr.write(f"bench retrieval: {message}\n")
    sys.stderr.flush()


def upload(root: Path, s3: Any, bucket: str, prefix: str) -> None:
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        s3.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(root).as_posix()}")


def _unit(m: np.ndarray) -> np.ndarray:
    return m / np.linalg.norm(m, axis=-1, keepdims=True)
