"""EMBEDDER names a registered embedder: assist's own are imported only when named, another registers itself in
its own file and is built from `name:argument`, and a name nobody registered is refused, naming those known
(assist's own MiniLM is built so by every integration test's `embedder` fixture)."""

from __future__ import annotations

import numpy as np
import pytest

from assist.embed import build_embedder
from assist.embed.base import EmbedderError
from assist.embed.registry import register
from assist.settings import Settings


@register("constant")
class Constant:
    """Every text the same vector, as long as the argument says."""

    def __init__(self, dim: int) -> None:
        self.id, self.dim = f"constant:{dim}", dim

    @classmethod
    def from_settings(cls, settings: Settings, name: str, argument: str) -> Constant:
        return cls(int(argument or 2))

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), self.dim), dtype=np.float32) / np.sqrt(self.dim)


def test_a_registered_embedder_is_built_from_its_name_and_argument():
    embedder = build_embedder(Settings().with_(embed={"embedder": "constant:4"}))
    assert isinstance(embedder, Constant)
    assert (embedder.id, embedder.embed(["a", "b"]).shape) == ("constant:4", (2, 4))


def test_an_unknown_name_is_refused_naming_the_known_ones():
    with pytest.raises(EmbedderError, match=r"EMBEDDER='minilm8'.*'constant', 'minilm', 'minilm-int8', 'ollama'"):
        build_embedder(Settings().with_(embed={"embedder": "minilm8"}))


def test_ollama_needs_a_model():
    with pytest.raises(EmbedderError, match="ollama:<model>"):
        build_embedder(Settings().with_(embed={"embedder": "ollama"}))
