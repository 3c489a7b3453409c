"""A docs website, crawled from its sitemap or a start URL (assist.sources.site)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assist.sources.registry import Kind, register
from assist.sources.site import read_site
from assist.sources.spec import SourceSpec

if TYPE_CHECKING:
    from assist.settings import Settings
    from assist.sources.spec import Read
    from assist.sources.validators import Validators


@register("site")
class Site(Kind):
    spec = SourceSpec  # no field of its own: a page's URL is where it was read

    def read(self, spec: SourceSpec, settings: Settings, previous: Validators, indexed: dict[str, str]) -> Read:
        return read_site(spec, settings, previous, indexed)
