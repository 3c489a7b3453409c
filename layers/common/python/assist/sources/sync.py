"""One sync of an index with its sources: read every source, then write the documents they give —
changed ones re-embedded, unchanged ones left alone, ones no source gives any more deleted — all under
the index's writer lease (one writer at a time). A source that cannot be read stops the sync before
anything is written: the index stays as it was."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assist.contracts import SourceKind
from assist.index import manifest
from assist.index.chunking import doc_hash
from assist.index.lock import writer_lease
from assist.index.pointer import live_uri
from assist.index.store import IndexUnavailable, IngestStats, connect, doc_hashes, write
from assist.logs import get_logger
from assist.sources import validators
from assist.sources.fetch import Fetcher, check_text
from assist.sources.files import read_folder, read_pdf, read_repo
from assist.sources.openapi import parse_spec, read_spec
from assist.sources.site import read_site
from assist.sources.spec import Page, Read, SourceError, SourceSpec

if TYPE_CHECKING:
    from collections.abc import Callable

    from assist.embed.base import Embedder
    from assist.settings import Settings

log = get_logger(__name__)


def read_source(
    spec: SourceSpec, settings: Settings, previous: dict[str, dict[str, Any]], indexed: dict[str, str]
) -> Read:
    spec = spec.resolved()
    if spec.kind == SourceKind.SITE:
        return read_site(spec, settings, previous, indexed)
    if spec.kind == SourceKind.OPENAPI:
        return _read_openapi(spec, settings)
    if spec.kind == SourceKind.REPO:
        return read_repo(spec, settings)
    if spec.kind == SourceKind.PDF and spec.location.startswith(("http://", "https://")):
        return _read_remote_pdf(spec, settings)

    return read_folder(spec, settings)  # a folder, or one file (a PDF too)


def _read_openapi(spec: SourceSpec, settings: Settings) -> Read:
    where = spec.location
    if where.startswith(("http://", "https://")):
        with Fetcher(where, settings) as fetcher:
            body = fetcher.get(where).body
        url = spec.base_url or where
    else:
        path = Path(where)
        if not path.is_file():
            raise SourceError(f"{where}: no such file")
        if path.stat().st_size > settings.crawl.max_page_bytes:
            raise SourceError(f"{where}: over the limit of {settings.crawl.max_page_bytes} bytes")
        body = path.read_bytes()
        url = spec.base_url or path.resolve().as_uri()
    return read_spec(parse_spec(check_text(where, body), where), where, url, spec.prefix)


def _read_remote_pdf(spec: SourceSpec, settings: Settings) -> Read:
    with Fetcher(spec.location, settings) as fetcher:
        body = fetcher.get(spec.location).body
    stem = spec.location.rsplit("/", 1)[-1].rsplit(".", 1)[0] or "document"
    doc = read_pdf(spec.prefix + stem, body, spec.location, spec.base_url or spec.location)
    return Read([Page(doc.doc_id, doc_hash(spec.location + "\n" + body.hex()), doc.chunks, manifest.entry_for(doc))])


def sync_sources(
    specs: list[SourceSpec], settings: Settings, embedder: Embedder, progress: bool = True, s3: Any = None
) -> dict[str, Any]:
    """Bring the index in line with these sources; returns the index's counts and each source's."""
    if not specs:
        raise SourceError("no sources given")

    settings = settings.with_(index={"uri": live_uri(settings.index.uri, s3)})  # a published index: its live version
    t0 = time.perf_counter()
    with writer_lease(settings.index.uri, s3):
        db = connect(settings.index.uri, settings.storage_options())
        indexed = _indexed(db, settings.index.table)
        previous = validators.read(db, settings.index.table)
        docs: dict[str, tuple[str, Any]] = {}
        entries: dict[str, manifest.Entry] = {}
        seen_validators: dict[str, dict[str, Any]] = {}
        per_source = []
        for spec in specs:
            read = read_source(spec, settings, previous, indexed)
            for page in read.pages:
                if page.doc_id in docs:
                    raise SourceError(
                        f"{spec.location}: document id {page.doc_id!r} is also given by another source; "
                        "set a `prefix` on one of them"
                    )
                docs[page.doc_id] = (page.hash, page.chunks)
                if page.entry is not None:
                    entries[page.doc_id] = page.entry
            seen_validators |= read.validators
            per_source.append(
                {"location": spec.location, "kind": spec.resolved().kind, "documents": len(read.pages)} | read.counts
            )
        if not docs:
            raise SourceError("the sources hold no documents to index")
        stats = write(db, docs, settings, embedder, progress, entries)
        validators.write(db, settings.index.table, seen_validators, previous)
        # deferred, ADR 0104: the search stack (lancedb, numpy), 1.3 s, only once the chunks are written
        from assist.retrieve.calibrate import calibrate_index

        calibration = calibrate_index(db, settings, embedder, stats.changed)
    out = {
        "index": settings.index.uri,
        **vars(stats),
        "calibration": calibration.summary() if calibration else None,
        "seconds": round(time.perf_counter() - t0, 3),
        "sources": per_source,
    }
    log.info("sources.synced", **{k: v for k, v in out.items() if k != "sources"})
    return out


def ingest(
    root: str | Path, settings: Settings, embedder: Embedder, progress: bool = True, s3: Any = None
) -> IngestStats:
    """Bring the index in line with the documents under root (a folder, or a source `assist.sources`
    reads); only changed documents are re-embedded. `s3`: a client for the writer lease of an `s3://` index."""
    try:
        return ingest_stats(sync_sources([SourceSpec(str(root))], settings, embedder, progress, s3))
    except SourceError as exc:
        raise IndexUnavailable(str(exc)) from exc


def ensure_index(settings: Settings, embedder: Callable[[], Embedder], docs: Path) -> IngestStats | None:
    """First use from a checkout: index `docs` (with a progress bar on stderr) when a local index has
    no table yet; None when there is one (kept as it is: `assist index` refreshes it) or it is on S3.
    `embedder` builds the embedder, called only when there is something to index."""
    if settings.index.is_s3 or not docs.is_dir():
        return None
    db = connect(settings.index.uri)
    if settings.index.table in db.table_names() and "url" in db.open_table(settings.index.table).schema.names:
        return None
    log.info("index.first_use", index=settings.index.uri, docs=str(docs))
    return ingest(docs, settings, embedder(), progress=True)


def ingest_stats(result: dict[str, Any]) -> IngestStats:
    return IngestStats(**{k: result[k] for k in ("docs", "chunks", "added_docs", "removed_docs", "unchanged_docs")})


def _indexed(db: Any, index_table: str) -> dict[str, str]:
    """{doc_id: hash} the index holds now ({} for none, or one built before documents kept their URLs)."""
    if index_table not in db.table_names():
        return {}
    table = db.open_table(index_table)
    if "url" not in table.schema.names:
        return {}
    return doc_hashes(table)
