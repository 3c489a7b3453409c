"""A whole build — plan, shards, commit — in this process, or with the shards on N local processes
(`assist index --workers N`): the same steps the index state machine runs as Lambda tasks.

With a deadline (a function's end) the shards stop before it and the report says `complete: false`: the vectors
made so far are kept, nothing is committed, and the next run continues where this one stopped."""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, fields
from multiprocessing import get_context
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from assist.aws.clients import index_s3
from assist.build import plan as plans
from assist.build.commit import commit
from assist.build.files import Files, build_files
from assist.build.worker import Pace, Reuse, ShardDone, embed_shard
from assist.embed import build_embedder
from assist.index.chunking import DocChunk
from assist.index.store import IndexUnavailable, connect, current, vectors_of
from assist.logs import configure, get_logger
from assist.sources.spec import SourceError, SourceSpec

if TYPE_CHECKING:
    from collections.abc import Callable

    from assist.embed.base import Embedder
    from assist.settings import Settings

log = get_logger(__name__)


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

    @classmethod
    def of(cls, report: dict[str, Any]) -> IngestStats:
        return cls(**{f.name: report[f.name] for f in fields(cls)})


def sync_sources(
    specs: list[SourceSpec],
    settings: Settings,
    embedder: Embedder,
    progress: bool = True,
    s3: Any = None,
    workers: int = 1,
    end: float | None = None,
) -> dict[str, Any]:
    """Bring the index `settings.index.uri` in line with these sources (the index holds exactly what they give:
    changed documents re-embedded, unchanged ones left alone, missing ones deleted); the build's report.
    `workers`: processes for the shards; `end`: stop embedding before it (epoch seconds), committing nothing."""
    return run_build(plans.of_specs(specs, settings), settings, embedder, progress, s3, workers, end)


def sync_docs(
    docs: dict[str, tuple[str, list[DocChunk]]],
    settings: Settings,
    embedder: Embedder,
    progress: bool = True,
    s3: Any = None,
    workers: int = 1,
) -> IngestStats:
    """The index holds exactly these documents ({doc_id: (content hash, chunks)}): a corpus read by its own
    reader (an evaluation's BEIR corpus) rather than from sources."""
    corpus = plans.Sourced(docs=dict(docs))
    return IngestStats.of(run_build(lambda _p, _i: corpus, settings, embedder, progress, s3, workers))


def run_build(
    source: plans.Source,
    settings: Settings,
    embedder: Embedder,
    progress: bool = True,
    s3: Any = None,
    workers: int = 1,
    end: float | None = None,
) -> dict[str, Any]:
    started = time.perf_counter()
    files = build_files(settings.index.uri, s3)
    plan = plans.plan_docs(source, settings, files, embedder.id, s3)
    planned = time.perf_counter()
    done = embed_shards(plan, files, settings, embedder, progress, workers, end)
    embedded = sum(d.embedded for d in done)
    timings = {"plan_s": round(planned - started, 3), "embed_s": round(time.perf_counter() - planned, 3)}
    if len(done) < len(plan.shards) or not all(d.complete for d in done):
        files.delete(files.keys(f"{plan.build}/"))  # the next run plans again, and finds the vectors kept
        report = {
            "index": plan.index,
            "complete": False,
            "embedded": embedded,
            "chunks": plan.chunks,
            "shards_done": sum(d.complete for d in done),
            "shards": len(plan.shards),
            **timings,
            "seconds": round(time.perf_counter() - started, 3),
        }
        log.info("build.incomplete", **report)
        return report
    report = commit(plan, files, settings, embedder, s3, until=end)
    return {**report, "embedded": embedded, **timings, "seconds": round(time.perf_counter() - started, 3)}


def embed_shards(
    plan: plans.Plan,
    files: Files,
    settings: Settings,
    embedder: Embedder,
    progress: bool,
    workers: int,
    end: float | None,
) -> list[ShardDone]:
    """Every shard of the plan, here (`workers` 1) or on that many processes, with one progress bar."""
    with tqdm(
        total=plan.chunks, desc="embedding", unit="chunk", disable=not progress or not plan.chunks, file=sys.stderr
    ) as bar:
        if workers <= 1 or len(plan.shards) <= 1:
            reuse, pace, done = reuse_from(settings, plan.index), Pace(), []
            for key in plan.shards:
                done.append(embed_shard(files, key, embedder, reuse, end, bar.update, pace))
                if not done[-1].complete:  # the deadline: the shards after it wait for the next run
                    break
            return done
        threads = max(1, cpus() // workers)
        child = settings.with_(embed={"threads": threads})
        ctx = get_context("spawn")  # a fresh interpreter: no inherited ONNX Runtime threads or LanceDB handles
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = [pool.submit(_child, child, k, plan.index, end) for k in plan.shards]
            done = []
            for future in as_completed(futures):
                result = future.result()
                bar.update(result.chunks if result.complete else result.embedded)
                done.append(result)
            return done


#: a worker process's embedder, build files and reuse, made by its first shard and kept for the next ones
_WORKER: dict[str, Any] = {}


def _child(settings: Settings, key: str, index: str, end: float | None) -> ShardDone:
    if not _WORKER:
        configure(settings)  # a spawned interpreter logs as its parent was told to (level, format, stream)
        _WORKER.update(
            files=build_files(settings.index.uri, index_s3(settings)),
            embedder=build_embedder(settings),
            reuse=reuse_from(settings, index),
        )
    return embed_shard(_WORKER["files"], key, _WORKER["embedder"], _WORKER["reuse"], end)


def reuse_from(settings: Settings, index: str) -> Reuse | None:
    """The vectors of the index's current rows, for the documents a shard holds (None: no table yet)."""
    db = connect(index, settings.storage_options())
    if settings.index.table not in db.table_names():
        return None
    table = db.open_table(settings.index.table)
    if "url" not in table.schema.names:
        return None
    return lambda doc_ids: vectors_of(table, doc_ids)


def cpus() -> int:
    """The CPUs this process may run on (a container's or a Lambda's share, not the host's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def ingest(
    root: str | Path, settings: Settings, embedder: Embedder, progress: bool = True, s3: Any = None
) -> IngestStats:
    """Bring the index in line with the documents under root (a folder, or one source `assist.sources` reads)."""
    try:
        return IngestStats.of(sync_sources([SourceSpec(str(root))], settings, embedder, progress, s3))
    except SourceError as exc:
        raise IndexUnavailable(str(exc)) from exc


def ensure_index(settings: Settings, embedder: Callable[[], Embedder], docs: Path) -> IngestStats | None:
    """First use from a checkout: index `docs` (with a progress bar on stderr) when a local index has
    no table yet; None when there is one (kept as it is: `assist index` refreshes it) or it is on S3.
    `embedder` builds the embedder, called only when there is something to index."""
    if settings.index.is_s3 or not docs.is_dir():
        return None
    db = connect(settings.index.uri)
    if settings.index.table in db.table_names() and current(db.open_table(settings.index.table)):
        return None
    log.info("index.first_use", index=settings.index.uri, docs=str(docs))
    return ingest(docs, settings, embedder(), progress=True)
