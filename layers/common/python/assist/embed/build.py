"""The embedder the settings name (EMBEDDER), from the registry (embed/registry.py): apart from embed/base.py,
which its implementations import, so that the interface and its implementations do not import each other."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from assist.embed.memo import Memo
from assist.embed.registry import named
from assist.lazy import once

if TYPE_CHECKING:
    from assist.embed.base import Embedder
    from assist.settings import Settings


def build_embedder(settings: Settings) -> Embedder:
    name, _, argument = settings.embed.embedder.partition(":")
    return named(name).from_settings(settings, name, argument)


def lazy_embedder(settings: Settings) -> Callable[[], Embedder]:
    return once(lambda: Memo(build_embedder(settings)))  # classify and retrieve embed the same message once
