"""A folder of documents (Markdown, MDX, reStructuredText, text, PDF), or one such file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assist.sources.files import read_folder
from assist.sources.registry import Kind, register
from assist.sources.spec import PublishedSpec

if TYPE_CHECKING:
    from assist.settings import Settings
    from assist.sources.spec import Read
    from assist.sources.validators import Validators


@register("folder")
class Folder(Kind):
    spec = PublishedSpec

    def read(self, spec: PublishedSpec, settings: Settings, previous: Validators, indexed: dict[str, str]) -> Read:
        return read_folder(spec, settings)
