"""A PDF, from a file or a URL: one section per page."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assist.index import manifest
from assist.index.chunking import doc_hash
from assist.sources.fetch import Fetcher
from assist.sources.files import read_folder, read_pdf
from assist.sources.registry import Kind, register
from assist.sources.spec import Page, PublishedSpec, Read, is_url

if TYPE_CHECKING:
    from assist.settings import Settings
    from assist.sources.validators import Validators


@register("pdf")
class Pdf(Kind):
    spec = PublishedSpec

    def read(self, spec: PublishedSpec, settings: Settings, previous: Validators, indexed: dict[str, str]) -> Read:
        if not is_url(spec.location):
            return read_folder(spec, settings)  # one file, read as a folder of one
        with Fetcher(spec.location, settings) as fetcher:
            body = fetcher.get(spec.location).body
        stem = spec.location.rsplit("/", 1)[-1].rsplit(".", 1)[0] or "document"
        doc = read_pdf(spec.prefix + stem, body, spec.location, spec.base_url or spec.location)
        page = Page(doc.doc_id, doc_hash(spec.location + "\n" + body.hex()), doc.chunks, manifest.entry_for(doc))
        return Read([page])
