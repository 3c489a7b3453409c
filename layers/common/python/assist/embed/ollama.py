"""Embeddings from an Ollama host (/api/embed), for deployments that already run one."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import ollama

from assist.embed.base import EmbedderError
from assist.ollama_client import bearer

if TYPE_CHECKING:
    from assist.settings import Settings


class OllamaEmbedder:
    def __init__(
        self, host: str, model: str, timeout_s: float = 30.0, dim: int | None = None, api_key: str | None = None
    ) -> None:
        self._client = ollama.Client(host=host, timeout=timeout_s, headers=bearer(api_key))
        self._model = model
        self.id = f"ollama:{model}"
        self.dim = dim or len(self.embed(["dimension probe"])[0])

    @classmethod
    def from_settings(cls, settings: Settings, name: str, argument: str) -> OllamaEmbedder:
        """EMBEDDER=ollama:<model>, from the Ollama host the settings name."""
        if not argument:
            raise EmbedderError("EMBEDDER=ollama needs a model: 'ollama:<model>'")
        o = settings.ollama
        return cls(host=o.host, model=argument, timeout_s=o.timeout_s, api_key=o.api_key)

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        try:
            reply = self._client.embed(model=self._model, input=texts)
        except (ollama.ResponseError, ConnectionError, OSError) as exc:
            raise EmbedderError(f"Ollama embed with {self._model} failed: {exc}") from exc
        vecs = np.asarray(reply.embeddings, dtype=np.float32)
        if vecs.shape[0] != len(texts):
            raise EmbedderError(f"Ollama returned {vecs.shape[0]} embeddings for {len(texts)} texts")
        return vecs / np.clip(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12, None)
