"""What a turn runs on, handed to the engine in one typed way (ADR 0073): each part is a provider, a
zero-argument function that builds the part on its first call and returns the same one after (`assist.lazy.once`),
so a function pays at cold start only for the parts its stage touches."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assist.classify.cascade import Cascade
    from assist.embed.base import Embedder
    from assist.llm.slots import ModelSlots
    from assist.retrieve.corpus import Corpus
    from assist.retrieve.search import Retriever
    from assist.sessions.store import Store
    from assist.widget.gate import Gate


@dataclass(frozen=True)
class Parts:
    store: Callable[[], Store]
    cascade: Callable[[], Cascade]
    slots: Callable[[], ModelSlots]
    retriever: Callable[[], Retriever]  # the live index version's, followed as it moves (ADR 0067)
    corpus: Callable[[], Corpus | None] | None = None  # the index's manifest (ADR 0042); None: no corpus questions
    embedder: Callable[[], Embedder] | None = None  # the classifier's and the retriever's, shared with insights
    #: the widget's gate, whose `spend` meters a visitor's model calls on its key's daily budget; None: no visitors
    gate: Callable[[], Gate] | None = None
