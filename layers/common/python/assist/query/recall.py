"""Does a message act on the conversation itself — recall, repeat, reshape or go on with an earlier turn (ADR 0127)?

Asked of a first turn only: CONVERSATIONAL with nothing in the session is either such a message ("what did I
ask?", which stays CONVERSATIONAL and is told there is nothing yet) or a question the router had no better type
for (a sports result, a recipe), which must not be answered from a model's general knowledge. The router's own
CONVERSATIONAL rows cannot tell them apart: they also hold greetings and small talk. So the test is the message's
nearest phrasing in a small bank of conversation-acting messages (`recall_bank.txt`), by the embedder's cosine.

English only, as the embedder is: the all-MiniLM embedding puts any two Spanish questions near each other
(0.6–0.7 whatever they ask), so a message in another language is compared by its translation, and without one it
is not asked at all (the caller keeps its route).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from assist.lazy import Lazy

if TYPE_CHECKING:
    from collections.abc import Callable

    from assist.embed.base import Embedder

BANK = Path(__file__).with_name("recall_bank.txt")
#: the cosine from which a message is one of the bank's: the bank's nearest phrasing of each first-turn recall
#: question was ≥ 0.59, of 95 % of CLINC150's out-of-scope and one-per-intent training rows ≤ 0.32 (ADR 0127)
SIMILAR = 0.5


def phrasings(path: Path = BANK) -> list[str]:
    return [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.startswith("#")]


class RecallBank:
    """The bank's embeddings, computed on the first question asked of it (24 short lines: one batch)."""

    def __init__(self, embedder: Callable[[], Embedder]) -> None:
        self._embedder = embedder
        self._vectors = Lazy(lambda: embedder().embed(phrasings()))

    def nearest(self, text: str) -> float:
        """The cosine of `text` to its nearest phrasing (the embedder's vectors are unit length)."""
        vector = self._embedder().embed([text])[0]
        # the array's own max: a numpy import here is on the answer function's cold start, which never embeds
        return float((self._vectors.get() @ vector).max())

    def refers_to_conversation(self, text: str) -> bool:
        return self.nearest(text) >= SIMILAR
