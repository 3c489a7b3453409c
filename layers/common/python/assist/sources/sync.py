"""Reading one source, whatever its kind: the documents it gives (the build, `assist.build`, plans, embeds and
writes them). A source that cannot be read raises SourceError before anything is written."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from assist.contracts import SourceKind
from assist.index import manifest
from assist.index.chunking import doc_hash
from assist.sources.fetch import Fetcher, check_text
from assist.sources.files import read_folder, read_pdf, read_repo
from assist.sources.openapi import parse_spec, read_spec
from assist.sources.site import read_site
from assist.sources.spec import Page, Read, SourceError, SourceSpec

if TYPE_CHECKING:
    from assist.settings import Settings


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
