"""The memo in front of the embedder: one model run for a text embedded twice; batches pass through."""

from __future__ import annotations

import numpy as np

from assist.embed.memo import Memo


class Counting:
    id, dim = "test:count", 2

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)


def test_a_repeated_text_is_embedded_once():
    inner = Counting()
    memo = Memo(inner, size=2)
    first = memo.embed(["how are sessions stored"])
    again = memo.embed(["how are sessions stored"])
    assert inner.calls == [["how are sessions stored"]]
    assert np.array_equal(first, again)
    assert (memo.id, memo.dim) == (inner.id, inner.dim)


def test_batches_pass_through_and_old_entries_are_forgotten():
    inner = Counting()
    memo = Memo(inner, size=2)
    memo.embed(["a", "b"])
    memo.embed(["a", "b"])
    for t in ("x", "y", "z", "x"):
        memo.embed([t])
    assert inner.calls == [["a", "b"], ["a", "b"], ["x"], ["y"], ["z"], ["x"]]
