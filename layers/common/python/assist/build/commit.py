"""The build's last step, under the index's writer lease: every shard's rows into the index in one write, then
its full-text and vector indexes, the corpus manifest, the sources' validators and the calibration. A build
with a shard still unmade commits nothing, and one planned against an index that has changed since is refused:
the index never holds half of a build."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq

from assist import metrics
from assist.build import shards, vectors
from assist.errors import AssistError
from assist.index import manifest
from assist.index.links import with_hubs
from assist.index.lock import writer_lease
from assist.index.store import (
    IndexUnavailable,
    connect,
    current,
    doc_hashes,
    read_docs,
    refresh_indexes,
    replace,
    schema,
)
from assist.logs import get_logger
from assist.retrieve.calibrate import calibrate_index
from assist.sources import validators

if TYPE_CHECKING:
    from assist.build.files import Files
    from assist.build.plan import Plan
    from assist.embed.base import Embedder
    from assist.settings import Settings

log = get_logger(__name__)


class BuildIncomplete(AssistError, RuntimeError):
    """Some shard of the build has no rows yet: nothing is committed (run the build again to finish it)."""


def commit(
    plan: Plan, files: Files, settings: Settings, embedder: Embedder, s3: Any = None, until: float | None = None
) -> dict[str, Any]:
    """Write the build into the index `plan.index`; `settings.index.uri` is the index's location (its lease).
    Returns the build's report. `until`: when this process ends (the lease lasts no longer)."""
    started = time.perf_counter()
    made = set(files.keys("rows/"))
    missing = [k for k in plan.shards if shards.rows_path(k) not in made]
    if missing:
        raise BuildIncomplete(f"{len(missing)} of {len(plan.shards)} shards of build {plan.build} have no rows yet")
    at = settings.with_(index={"uri": plan.index})
    with writer_lease(settings.index.uri, s3, until=until):
        db = connect(plan.index, settings.storage_options())
        table = db.open_table(at.index.table) if at.index.table in db.table_names() else None
        if table is not None and not current(table):  # built before documents kept their links or scopes
            log.info("index.rebuilt_for_urls", uri=plan.index)
            db.drop_table(at.index.table)
            table = None
        existing = doc_hashes(table) if table is not None else {}
        changed = set(plan.changed)
        moved = [d for d, h in plan.docs.items() if d not in changed and existing.get(d) != h]
        moved += [d for d in plan.removed if d not in existing]
        if moved:
            raise IndexUnavailable(
                f"{len(moved)} documents changed in the index since build {plan.build} was planned "
                f"({moved[:3]}); run the build again"
            )
        if plan.changed or plan.removed or table is None:
            table = replace(db, at, embedder, plan.changed + plan.removed, _rows(files, plan, embedder))
            refresh_indexes(table, at)
        entries = _manifest(db, at, plan, files, table)
        validators.write(db, at.index.table, plan.validators, plan.previous_validators)
        calibration = calibrate_index(db, at, embedder, bool(plan.changed or plan.removed), until)
    _clean(files, plan)
    metrics.indexed(len(plan.docs))
    report = {
        "index": plan.index,
        "build": plan.build,
        "complete": True,
        "docs": len(plan.docs),
        "chunks": table.count_rows(),
        "added_docs": len(plan.changed),
        "removed_docs": len(plan.removed),
        "unchanged_docs": len(plan.docs) - len(plan.changed),
        "shards": len(plan.shards),
        "manifest_entries": entries,
        "scopes": manifest.scope_counts(plan.scopes, len(plan.docs)),
        "calibration": calibration.summary() if calibration else None,
        "commit_s": round(time.perf_counter() - started, 3),
        "sources": plan.sources,
    }
    log.info("build.committed", **{k: v for k, v in report.items() if k not in ("sources", "calibration")})
    return report


def _rows(files: Files, plan: Plan, embedder: Embedder) -> pa.RecordBatchReader:
    """Every shard's rows, one file at a time (the commit holds one shard in memory, not the build)."""
    target = schema(embedder)

    def batches() -> Any:
        for key in plan.shards:
            body = files.get(shards.rows_path(key))
            if body is None:
                raise BuildIncomplete(f"shard {key}'s rows vanished during the commit")
            yield from pq.read_table(pa.BufferReader(body), schema=target).to_batches()

    return pa.RecordBatchReader.from_batches(target, batches())


def _manifest(db: Any, settings: Settings, plan: Plan, files: Files, table: Any) -> int:
    """The corpus manifest for every document of the build (hubs need every document's chunks)."""
    full = {d.doc_id: (d.hash, d.chunks) for key in plan.shards for d in shards.load(files, key).docs}
    full |= read_docs(table, [d for d in plan.docs if d not in full])
    entries = dict(plan.entries)
    old = {e.id: e for e in manifest.read(db, settings.index.table) or []} if plan.kept else {}
    for d, (_, chunks) in full.items():
        if d not in entries:
            entries[d] = old.get(d) or manifest.entry_from_chunks(d, chunks)
    entries = {d: msgspec.structs.replace(e, scope=plan.scopes.get(d)) for d, e in entries.items()}
    entries = with_hubs(entries, {d: chunks for d, (_, chunks) in full.items()})
    written = manifest.write(db, settings.index.table, entries, plan.docs)
    log.info("index.manifest", entries=len(entries), written=written)
    return len(entries)


def _clean(files: Files, plan: Plan) -> None:
    """The build's files, once its rows are in the index (the cache of its shards too: the index holds those
    vectors now, and reuses them from there)."""
    for key in plan.shards:
        vectors.forget(files, key)
    files.delete([shards.rows_path(k) for k in plan.shards] + [shards.shard_path(k) for k in plan.shards])
    files.delete(files.keys(f"{plan.build}/"))
