"""An embedder that remembers its last few single-text results.

In one turn the classifier and the retriever embed the same message (the retrieval query is the
message unless a follow-up was rewritten); the second embedding is then a lookup, not a model run.
Batches (indexing) pass straight through.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from assist.embed.base import Embedder


class Memo:
    def __init__(self, inner: Embedder, size: int = 256) -> None:
        self.inner = inner
        self.id = inner.id
        self.dim = inner.dim
        self._size = size
        self._seen: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> np.ndarray:
        if len(texts) != 1:
            return self.inner.embed(texts)
        text = texts[0]
        with self._lock:
            hit = self._seen.get(text)
            if hit is not None:
                self._seen.move_to_end(text)
                return hit
        vectors = self.inner.embed(texts)
        with self._lock:
            self._seen[text] = vectors
            if len(self._seen) > self._size:
                self._seen.popitem(last=False)
        return vectors
