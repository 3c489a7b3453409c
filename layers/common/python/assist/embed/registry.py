"""The seam for embedders: EMBEDDER names a registered embedder class (`name`, or `name:argument` as in
`ollama:nomic-embed-text`), and the class makes itself from the settings (`from_settings`). assist's own are
listed here by where they live, so that a process imports only the one it is told to use (onnxruntime and numpy
for MiniLM, 0.08 s, which the answer function never loads; the ollama client, 0.32 s, for an EMBEDDER=ollama:…
deployment only: ADR 0104). Another is registered with `@register("name")` in its own file, and an installed
distribution lists that file under the `assist.embedders` entry points (loaded when a name is not known yet)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Protocol

from assist.embed.base import EmbedderError

if TYPE_CHECKING:
    from assist.embed.base import Embedder
    from assist.settings import Settings

ENTRY_POINTS = "assist.embedders"
#: assist's own embedders: name → "module:Class", imported when named
BUILT_IN = {
    "minilm": "assist.embed.onnx:OnnxEmbedder",
    "minilm-int8": "assist.embed.onnx:OnnxEmbedder",
    "ollama": "assist.embed.ollama:OllamaEmbedder",
}


class Registered(Protocol):
    @classmethod
    def from_settings(cls, settings: Settings, name: str, argument: str) -> Embedder:
        """The embedder EMBEDDER=`name` or `name:argument` asks for."""
        ...


_REGISTERED: dict[str, type[Registered]] = {}


def register(name: str) -> Callable[[type[Registered]], type[Registered]]:
    """A class decorator: EMBEDDER=`name` (or `name:…`) builds the class with its `from_settings`."""

    def put(cls: type[Registered]) -> type[Registered]:
        _REGISTERED[name] = cls
        return cls

    return put


def named(name: str) -> type[Registered]:
    """The class registered under `name`: assist's own imported when first named, the installed plug-ins loaded
    when no class has the name yet."""
    if name not in _REGISTERED and name in BUILT_IN:
        module, _, attr = BUILT_IN[name].partition(":")
        _REGISTERED[name] = getattr(importlib.import_module(module), attr)
    if name not in _REGISTERED:
        load_plugins()
    if name not in _REGISTERED:
        known = "', '".join(sorted({*BUILT_IN, *_REGISTERED}))
        raise EmbedderError(f"EMBEDDER={name!r}: expected one of '{known}' (ollama as 'ollama:<model>')")
    return _REGISTERED[name]


@cache
def load_plugins() -> None:
    # deferred, ADR 0104: importlib.metadata, 0.015 s at import, which every function naming assist's own embedder
    # would pay before its first call (cold-start bench); only an unknown name reads the installed distributions
    from importlib.metadata import entry_points

    for plugin in entry_points(group=ENTRY_POINTS):
        plugin.load()  # its module registers its embedder
