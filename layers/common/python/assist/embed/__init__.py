"""Text embeddings: the local ONNX MiniLM model, or Ollama's /api/embed in the cloud."""

from assist.embed.base import Embedder, EmbedderError, EmbedderMismatch
from assist.embed.build import build_embedder

__all__ = ["Embedder", "EmbedderError", "EmbedderMismatch", "build_embedder"]
