"""Reading one source, whatever its kind: the documents it gives (the build, `assist.build`, plans, embeds and
writes them). A source that cannot be read raises SourceError before anything is written."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assist.sources.resolve import kind_of, resolved

if TYPE_CHECKING:
    from assist.settings import Settings
    from assist.sources.spec import Read, SourceSpec
    from assist.sources.validators import Validators


def read_source(spec: SourceSpec, settings: Settings, previous: Validators, indexed: dict[str, str]) -> Read:
    spec = resolved(spec)
    return kind_of(spec).read(spec, settings, previous, indexed)
