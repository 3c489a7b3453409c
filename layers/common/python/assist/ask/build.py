"""Assemble an Engine from settings and injected AWS clients (tests pass clients aimed at moto).

Every part is built on its first use, once: a function that runs one stage pays at cold
start only for the parts that stage touches (the retrieve function never imports boto3,
the classify function never imports LanceDB).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

if TYPE_CHECKING:
    from assist.ask.engine import Engine
    from assist.retrieve.search import Retriever
    from assist.settings import Settings

T = TypeVar("T")


class Lazy(Generic[T]):
    """Builds its object on first use (`get()` or any attribute), once, thread-safely."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._built: list[T] = []

    def get(self) -> T:
        if not self._built:
            with self._lock:
                if not self._built:
                    self._built.append(self._factory())
        return self._built[0]

    @property
    def built(self) -> bool:
        return bool(self._built)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)


def build_engine(settings: Settings, dynamodb: Any) -> Engine:
    """`dynamodb` is a client, or a `Lazy` one when the caller wants boto3 deferred to the first store call."""
    from assist.ask.engine import Engine

    def store() -> Any:
        from assist.memory.store import SessionStore

        return SessionStore(dynamodb, settings.sessions_table, settings.intent_history_table, settings.session_ttl_days)

    def cascade() -> Any:
        from assist.classify.cascade import Cascade

        return Cascade(settings)

    def slots() -> Any:
        from assist.answer.llm import ModelSlots

        return ModelSlots(settings)

    # The engine calls methods on its parts; a Lazy forwards them to the part, built on that first call.
    return Engine(
        settings, cast(Any, Lazy(store)), cast(Any, Lazy(cascade)), cast(Any, Lazy(slots)), lazy_retriever(settings)
    )


def lazy_retriever(settings: Settings) -> Callable[[], Retriever]:
    """A factory that opens the embedder and index on first call, once, thread-safely."""

    def build() -> Retriever:
        from assist.embed import build_embedder
        from assist.index.store import open_table
        from assist.retrieve.search import Retriever

        embedder = build_embedder(settings)
        return Retriever(open_table(settings, embedder), embedder)

    return Lazy(build).get
