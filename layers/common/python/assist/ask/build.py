"""Assemble an Engine from settings and injected AWS clients (tests pass clients aimed at moto)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assist.ask.engine import Engine
    from assist.retrieve.search import Retriever
    from assist.settings import Settings


def build_engine(settings: Settings, dynamodb: Any) -> Engine:
    from assist.answer.llm import ModelSlots
    from assist.ask.engine import Engine
    from assist.classify.cascade import Cascade
    from assist.memory.store import SessionStore

    store = SessionStore(dynamodb, settings.sessions_table, settings.intent_history_table, settings.session_ttl_days)
    return Engine(settings, store, Cascade(settings), ModelSlots(settings), retriever=lazy_retriever(settings))


def lazy_retriever(settings: Settings) -> Any:
    """A factory that opens the embedder and index on first call, once, thread-safely."""
    lock = threading.Lock()
    holder: list[Retriever] = []

    def get() -> Retriever:
        if not holder:
            with lock:
                if not holder:
                    from assist.embed import build_embedder
                    from assist.index.store import open_table
                    from assist.retrieve.search import Retriever

                    embedder = build_embedder(settings)
                    holder.append(Retriever(open_table(settings, embedder), embedder))
        return holder[0]

    return get
