"""Assemble an Engine (or just its Cascade) from settings and injected AWS clients (tests pass clients aimed at moto).

Heavy parts — the embedder, the classifier model, the index, the Ollama clients — are built on
first use, once, and shared: the classifier and the retriever use the same embedder instance.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from assist.ask.engine import Engine
    from assist.classify.cascade import Cascade
    from assist.classify.embedding import EmbeddingLayer
    from assist.classify.llm import LLMClassifier
    from assist.embed.base import Embedder
    from assist.settings import Settings

T = TypeVar("T")


def once(factory: Callable[[], T]) -> Callable[[], T]:
    """A lazy value: built by the first call (thread-safely), the same object for every later one."""
    lock = threading.Lock()
    holder: list[T] = []

    def get() -> T:
        if not holder:
            with lock:
                if not holder:
                    holder.append(factory())
        return holder[0]

    return get


def build_engine(settings: Settings, dynamodb: Any, s3: Any = None) -> Engine:
    from assist.answer.llm import ModelSlots
    from assist.ask.engine import Engine
    from assist.memory.store import SessionStore

    embedder = lazy_embedder(settings)
    store = SessionStore(dynamodb, settings.sessions_table, settings.intent_history_table, settings.session_ttl_days)
    return Engine(
        settings,
        store,
        build_cascade(settings, embedder, s3),
        ModelSlots(settings),
        retriever=lazy_retriever(settings, embedder),
    )


def lazy_embedder(settings: Settings) -> Callable[[], Embedder]:
    def load() -> Embedder:
        from assist.embed import build_embedder

        return build_embedder(settings)

    return once(load)


def build_cascade(settings: Settings, embedder: Callable[[], Embedder] | None = None, s3: Any = None) -> Cascade:
    """The cascade as deployed: embedding layer when a model is configured, LLM layer when OLLAMA_HOST is set."""
    from assist.classify.cascade import Cascade

    return Cascade(settings, embedding=embedding_layer(settings, embedder, s3), llm=llm_layer(settings))


def embedding_layer(
    settings: Settings, embedder: Callable[[], Embedder] | None = None, s3: Any = None
) -> Callable[[], EmbeddingLayer] | None:
    """The embedding layer's provider, or None when CLASSIFIER_MODEL_PATH is off."""
    path = settings.classifier_model_path
    if not path:
        return None
    embedder = embedder or lazy_embedder(settings)

    def load() -> EmbeddingLayer:
        from assist.classify.embedding import EmbeddingLayer
        from assist.classify.model import ModelError
        from assist.contracts import QueryType

        client = s3
        if client is None and path.startswith("s3://"):
            from assist.aws.clients import client as aws_client

            client = aws_client("s3", settings)
        layer = EmbeddingLayer.load(path, embedder(), s3=client)
        unknown = set(layer.model.classes) - {t.value for t in QueryType}
        if unknown:
            raise ModelError(f"classifier model {path} predicts {sorted(unknown)}: not a routing model")
        return layer

    return once(load)


def llm_layer(settings: Settings) -> Callable[[], LLMClassifier] | None:
    """The LLM layer's provider, or None when OLLAMA_HOST was not set."""
    if not settings.ollama_host_explicit:
        return None

    def build() -> LLMClassifier:
        from assist.classify.llm import LLMClassifier

        return LLMClassifier.from_settings(settings)

    return once(build)


def lazy_retriever(settings: Settings, embedder: Callable[[], Embedder] | None = None) -> Callable[[], Any]:
    """A factory that opens the index on first call, once, thread-safely."""
    embedder = embedder or lazy_embedder(settings)

    def open_retriever() -> Any:
        from assist.index.store import open_table
        from assist.retrieve.search import Retriever

        return Retriever(open_table(settings, embedder()), embedder())

    return once(open_retriever)
