"""`assist bench index`: the sharded build's wall time at 1, 2, … local workers on the same generated corpus,
with chunks/s and each count's speed-up over one worker, in one run; and the commit step alone at N rows.

One worker is one process with one ONNX Runtime thread (a Lambda worker's share); N workers are N processes
sharing the machine's CPUs (`assist index --workers N`). Every count builds a fresh index of the same pages, so
no count reuses another's vectors. The commit's figure writes N generated rows (random unit vectors: the commit
does not look at them) as shards and times `commit` on them: merge, full-text and vector indexes, manifest and
calibration, as a build's last step does."""

from __future__ import annotations

import io
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from assist.build import plan as plans
from assist.build import shards
from assist.build.commit import commit
from assist.build.files import build_files
from assist.build.run import sync_sources
from assist.build.worker import rows_table
from assist.embed import build_embedder
from assist.index.chunking import DocChunk
from assist.settings import Settings
from assist.sources.spec import SourceSpec
from assist_dev.bench.passages import passages, token_counts, write_pages


def run(settings: Settings, chunks: int, workers: list[int], commit_rows: int = 0) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="assist-bench-index-"))
    texts = passages(chunks, settings.embed.model_dir)
    tokens = token_counts(texts, settings.embed.model_dir)
    pages = write_pages(tmp / "pages", texts)
    out: dict[str, Any] = {
        "chunks": chunks,
        "mean_tokens": round(sum(tokens) / len(tokens), 1),
        "embedder": settings.embed.embedder,
        "shard_chunks": settings.index.shard_chunks,
        "runs": [],
    }
    for n in workers:
        s = settings.with_(index={"uri": str(tmp / f"index-{n}")}, embed={"threads": 1})
        started = time.perf_counter()
        report = sync_sources([SourceSpec(str(pages))], s, build_embedder(s), progress=False, workers=n)
        wall = time.perf_counter() - started
        out["runs"].append(
            {
                "workers": n,
                "wall_s": round(wall, 2),
                "embed_s": report["embed_s"],
                "commit_s": report["commit_s"],
                "chunks": report["chunks"],
                "chunks_per_s": round(report["chunks"] / wall, 2),
                "embed_chunks_per_s": round(report["chunks"] / report["embed_s"], 2),
            }
        )
    one = next((r for r in out["runs"] if r["workers"] == 1), None)
    for r in out["runs"]:
        r["speedup"] = round(one["wall_s"] / r["wall_s"], 3) if one else None
        r["embed_speedup"] = round(one["embed_s"] / r["embed_s"], 3) if one else None
    if commit_rows:
        out["commit"] = commit_at(settings.with_(index={"uri": str(tmp / "commit")}), commit_rows)
    return out


def commit_at(settings: Settings, rows: int, per_shard: int = 2000) -> dict[str, Any]:
    """Time the commit of `rows` generated rows (4 sections a page), written as shards of `per_shard`."""
    embedder = build_embedder(settings)
    files = build_files(settings.index.uri)
    rng = np.random.default_rng(5)
    texts = passages(min(rows, 5000), settings.embed.model_dir)  # reused round-robin: the FTS index sees real text
    keys, docs = [], {}
    for start in range(0, rows, per_shard):
        shard_docs = []
        for p in range(start // 4, min(start + per_shard, rows) // 4):
            chunks = [
                DocChunk(
                    f"p{p}#s{i}:0", f"p{p}", f"Page {p}", f"Section {i}", "bench", i, texts[(4 * p + i) % len(texts)]
                )
                for i in range(4)
            ]
            shard_docs.append(shards.ShardDoc(f"p{p}", f"h{p}", chunks))
            docs[f"p{p}"] = f"h{p}"
        shard = shards.cut(shard_docs, per_shard, embedder.id)[0]
        shards.save(files, shard)
        pairs = [(d.hash, c) for d in shard.docs for c in d.chunks]
        vectors = rng.normal(size=(len(pairs), embedder.dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        files.put(shards.rows_path(shard.key), _parquet(rows_table(pairs, vectors, embedder)))
        keys.append(shard.key)
    plan = plans.Plan(
        build=plans.new_build(),
        index=settings.index.uri,
        embedder=embedder.id,
        docs=docs,
        changed=sorted(docs),
        removed=[],
        kept=[],
        entries={},
        validators={},
        previous_validators={},
        shards=keys,
        chunks=rows,
        sources=[],
    )
    plans.write(files, plan)
    started = time.perf_counter()
    report = commit(plan, files, settings, embedder)
    return {"rows": report["chunks"], "seconds": round(time.perf_counter() - started, 2)}


def _parquet(table: Any) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()
