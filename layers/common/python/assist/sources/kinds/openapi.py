"""An OpenAPI spec, from a file or a URL: one document per operation (assist.sources.openapi)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from assist.sources.fetch import Fetcher, check_text
from assist.sources.openapi import parse_spec, read_spec
from assist.sources.registry import Kind, register
from assist.sources.spec import PublishedSpec, SourceError, is_url

if TYPE_CHECKING:
    from assist.settings import Settings
    from assist.sources.spec import Read
    from assist.sources.validators import Validators


@register("openapi")
class OpenApi(Kind):
    spec = PublishedSpec  # base_url: where the spec is rendered (Redoc fragments)

    def read(self, spec: PublishedSpec, settings: Settings, previous: Validators, indexed: dict[str, str]) -> Read:
        where = spec.location
        if is_url(where):
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
            url = spec.base_url or path.name  # no build path reaches a reader (ADR 0112): the file's own name
        return read_spec(parse_spec(check_text(where, body), where), where, url, spec.prefix)
