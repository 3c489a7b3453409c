"""Assemble an Engine (or just its Cascade) from settings and injected AWS clients (tests pass clients aimed at moto).

Every part is built on its first use, once, and shared: a function that runs one stage pays
at cold start only for the parts that stage touches (the retrieve function never imports
boto3, the classify function never imports LanceDB), and the classifier and the retriever
use the same embedder instance.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

if TYPE_CHECKING:
    from assist.ask.engine import Engine
    from assist.classify.cascade import Cascade
    from assist.classify.embedding import EmbeddingLayer
    from assist.classify.llm import LLMClassifier
    from assist.embed.base import Embedder
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


def once(factory: Callable[[], T]) -> Callable[[], T]:
    """A lazy value as a zero-argument function: built by the first call, the same object after."""
    return Lazy(factory).get


def build_engine(settings: Settings, dynamodb: Any = None, s3: Any = None) -> Engine:
    """The session store is the one SESSION_STORE names (`open_store`). For DynamoDB, `dynamodb` is a
    client, a `Lazy` one when the caller wants boto3 deferred to the first store call, or None: one
    built from the settings on that call."""
    from assist.ask.engine import Engine

    embedder = lazy_embedder(settings)
    index = lazy_index(settings)

    def store() -> Any:
        from assist.memory.backends import open_store

        return open_store(settings, dynamodb)

    def slots() -> Any:
        from assist.answer.llm import ModelSlots

        return ModelSlots(settings)

    # The engine calls methods on its parts; a Lazy forwards them to the part, built on that first call.
    return Engine(
        settings,
        cast(Any, Lazy(store)),
        cast(Any, Lazy(lambda: build_cascade(settings, embedder, s3))),
        cast(Any, Lazy(slots)),
        retriever=lazy_retriever(settings, embedder, index),
        corpus=lazy_corpus(settings, index),
        embedder=embedder,
    )


def lazy_embedder(settings: Settings) -> Callable[[], Embedder]:
    def load() -> Embedder:
        from assist.embed import build_embedder
        from assist.embed.memo import Memo

        return Memo(build_embedder(settings))  # classify and retrieve embed the same message once

    return once(load)


def build_cascade(settings: Settings, embedder: Callable[[], Embedder] | None = None, s3: Any = None) -> Cascade:
    """The cascade as deployed: embedding layer when a model is configured, LLM layer when OLLAMA_HOST is set."""
    from assist.classify.cascade import Cascade

    return Cascade(settings, embedding=embedding_layer(settings, embedder, s3), llm=llm_layer(settings))


def embedding_layer(
    settings: Settings, embedder: Callable[[], Embedder] | None = None, s3: Any = None
) -> Callable[[], EmbeddingLayer] | None:
    """The embedding layer's provider, or None when CLASSIFIER_MODEL_PATH is off. A path `<registry>/current`
    follows the registry's pointer (`assist.classify.reload`); any other path is one artifact, loaded once."""
    path = settings.classifier.model_path
    if not path:
        return None
    embedder = embedder or lazy_embedder(settings)
    if s3 is None and path.startswith("s3://"):
        from assist.aws.clients import client

        s3 = Lazy(lambda: client("s3", settings))  # boto3 is imported by the first read, not here
    if root := settings.classifier.registry:
        from assist.classify.registry import Registry
        from assist.classify.reload import ReloadingLayer

        return ReloadingLayer(Registry(root, s3), embedder, settings.classifier.reload_s)

    def load() -> EmbeddingLayer:
        from assist.classify.embedding import EmbeddingLayer

        return EmbeddingLayer.load(path, embedder(), s3=s3)

    return once(load)


def llm_layer(settings: Settings) -> Callable[[], LLMClassifier] | None:
    """The LLM layer's provider, or None when OLLAMA_HOST was not set."""
    if not settings.ollama.host_explicit:
        return None

    def build() -> LLMClassifier:
        from assist.classify.llm import LLMClassifier

        return LLMClassifier.from_settings(settings)

    return once(build)


def lazy_index(settings: Settings) -> Callable[[], Any]:
    """The live index version's database, connected on first call and again when the version moves (ADR 0067):
    the retriever and the corpus share it."""

    def open_db(live: Settings) -> Any:
        from assist.index.store import connect

        return connect(live.index.uri, live.storage_options())

    return _live(open_db, settings)


def lazy_retriever(
    settings: Settings, embedder: Callable[[], Embedder] | None = None, db: Callable[[], Any] | None = None
) -> Callable[[], Any]:
    """A factory that opens the index on first call, thread-safely, and again when a new version goes live."""
    embedder = embedder or lazy_embedder(settings)
    index = db or lazy_index(settings)

    def open_retriever(live: Settings) -> Any:
        from assist.index.store import open_table
        from assist.retrieve.manifest import load
        from assist.retrieve.search import Retriever, SearchOptions

        database = index()  # the same live version (one handle: both see the version move together)
        return Retriever(
            open_table(live, embedder(), database),
            embedder(),
            SearchOptions.from_settings(live),
            catalog=lambda: load(database, live.index.uri, live.index.table),
        )

    return _live(open_retriever, settings)


def lazy_corpus(settings: Settings, db: Callable[[], Any] | None = None) -> Callable[[], Any]:
    """The index's corpus manifest (ADR 0042, 0062), read on first call and for each live version; None when the
    index has none."""
    index = db or lazy_index(settings)

    def open_corpus(live: Settings) -> Any:
        from assist.retrieve.corpus import Corpus

        return Corpus.open(index(), live.index.uri, live.index.table)

    return _live(open_corpus, settings)


def _live(open_: Callable[[Settings], T], settings: Settings) -> Callable[[], T]:
    """`open_` for the index's live version, followed as it is published or rolled back (ADR 0067); the handle
    (and boto3, for an index on S3) comes on the first call."""

    def follow() -> Callable[[], T]:
        from assist.retrieve.handle import handle_for

        return handle_for(settings).follow(open_, settings)

    provider = once(follow)
    return lambda: provider()()
