"""What every embedder offers, and the factory that picks one from the settings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from assist.errors import AssistError

if TYPE_CHECKING:
    import numpy as np


class EmbedderError(AssistError, RuntimeError):
    """The embedder cannot produce vectors (model missing, service down, bad reply)."""


class EmbedderMismatch(EmbedderError):
    """An index or model was built with another embedder than the one configured."""


class Embedder(Protocol):
    #: identifies model *and* method, e.g. "onnx:all-MiniLM-L6-v2"; stored beside indexes and models
    id: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""
        ...


def check_same(expected_id: str, expected_dim: int, embedder: Embedder, what: str) -> None:
    """Refuse to mix vector spaces: a clear error instead of silently meaningless scores."""
    if expected_id != embedder.id or int(expected_dim) != embedder.dim:
        raise EmbedderMismatch(
            f"{what} was built with embedder {expected_id} (dim {expected_dim}), but the configured "
            f"embedder is {embedder.id} (dim {embedder.dim}); rebuild it or set EMBEDDER to match"
        )
