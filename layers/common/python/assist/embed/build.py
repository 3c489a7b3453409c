"""The embedder the settings name (EMBEDDER): apart from embed/base.py, which its implementations import,
so that the interface and its implementations do not import each other."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from assist.embed.base import EmbedderError
from assist.embed.memo import Memo
from assist.lazy import once

if TYPE_CHECKING:
    from assist.embed.base import Embedder
    from assist.settings import Settings


def build_embedder(settings: Settings) -> Embedder:
    if settings.embed.embedder in ("minilm", "minilm-int8"):
        # deferred, ADR 0104: onnxruntime and numpy, 0.08 s, which the answer function never loads
        from assist.embed.onnx import OnnxEmbedder

        int8 = settings.embed.embedder == "minilm-int8"
        return OnnxEmbedder.load(settings.embed.model_dir, threads=settings.embed.threads or None, int8=int8)
    if settings.embed.embedder.startswith("ollama:"):
        # deferred, ADR 0104: the ollama client, 0.32 s, for an EMBEDDER=ollama:… deployment only
        from assist.embed.ollama import OllamaEmbedder

        return OllamaEmbedder(
            host=settings.ollama.host,
            model=settings.embed.embedder.split(":", 1)[1],
            timeout_s=settings.ollama.timeout_s,
            api_key=settings.ollama.api_key,
        )
    raise EmbedderError(f"EMBEDDER={settings.embed.embedder!r}: expected 'minilm', 'minilm-int8' or 'ollama:<model>'")


def lazy_embedder(settings: Settings) -> Callable[[], Embedder]:
    return once(lambda: Memo(build_embedder(settings)))  # classify and retrieve embed the same message once
