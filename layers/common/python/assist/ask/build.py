"""Assemble an Engine from settings and injected AWS clients (tests pass clients aimed at moto); the cascade's own
assembly is classify/build.py's, the embedder's embed/build.py's.

Every part is built on its first use, once, and shared: a function that runs one stage pays
at cold start only for the parts that stage touches (the retrieve function imports
boto3 only for an index on S3, the classify function never imports LanceDB), and the classifier and the retriever
use the same embedder instance.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from assist.ask.engine import Engine
from assist.ask.parts import Parts
from assist.classify.build import build_cascade
from assist.embed.build import lazy_embedder
from assist.index import calibration
from assist.index.store import connect, open_table
from assist.lazy import once
from assist.llm.slots import ModelSlots
from assist.retrieve.corpus import Corpus
from assist.retrieve.handle import handle_for
from assist.retrieve.manifest import load
from assist.sessions.backends import open_store
from assist.widget.gate import Gate
from assist.widget.store.backends import open_widget_store

if TYPE_CHECKING:
    from assist.embed.base import Embedder
    from assist.settings import Settings

T = TypeVar("T")


def build_engine(settings: Settings, dynamodb: Any = None, s3: Any = None) -> Engine:
    """The engine and its parts (`build_parts`)."""
    return Engine(settings, build_parts(settings, dynamodb, s3))


def build_parts(settings: Settings, dynamodb: Any = None, s3: Any = None) -> Parts:
    """The engine's parts, each built on its first use. The session store is the one SESSION_STORE names
    (`open_store`); for DynamoDB, `dynamodb` is a client (tests aim one at moto), or None: one built from the
    settings by the first store call."""
    embedder = lazy_embedder(settings)
    index = lazy_index(settings)
    return Parts(
        store=once(lambda: open_store(settings, dynamodb)),
        cascade=once(lambda: build_cascade(settings, embedder, s3)),
        slots=once(lambda: ModelSlots(settings)),
        retriever=lazy_retriever(settings, embedder, index),
        corpus=lazy_corpus(settings, index),
        embedder=embedder,
        gate=once(lambda: Gate(settings, once(lambda: open_widget_store(settings, dynamodb)))),
    )


def lazy_index(settings: Settings) -> Callable[[], Any]:
    """The live index version's database, connected on first call and again when the version moves (ADR 0067):
    the retriever and the corpus share it."""

    return _live(lambda live: connect(live.index.uri, live.storage_options()), settings)


def lazy_retriever(
    settings: Settings, embedder: Callable[[], Embedder] | None = None, db: Callable[[], Any] | None = None
) -> Callable[[], Any]:
    """A factory that opens the index on first call, thread-safely, and again when a new version goes live."""
    embedder = embedder or lazy_embedder(settings)
    index = db or lazy_index(settings)

    def open_retriever(live: Settings) -> Any:
        # deferred, ADR 0104: the search modules load lancedb (1.3 s), which the classify and export functions
        # never use
        from assist.retrieve.search import Retriever, SearchOptions

        database = index()  # the same live version (one handle: both see the version move together)
        return Retriever(
            open_table(live, embedder(), database),
            embedder(),
            SearchOptions.from_settings(live),
            catalog=lambda: load(database, live.index.uri, live.index.table),
            calibration=lambda: calibration.read(database, live.index.table),
        )

    return _live(open_retriever, settings)


def lazy_corpus(settings: Settings, db: Callable[[], Any] | None = None) -> Callable[[], Any]:
    """The index's corpus manifest (ADR 0042, 0062), read on first call and for each live version; None when the
    index has none."""
    index = db or lazy_index(settings)

    return _live(lambda live: Corpus.open(index(), live.index.uri, live.index.table), settings)


def _live(open_: Callable[[Settings], T], settings: Settings) -> Callable[[], T]:
    """`open_` for the index's live version, followed as it is published or rolled back (ADR 0067); the handle
    (and boto3, for an index on S3) comes on the first call."""

    provider = once(lambda: handle_for(settings).follow(open_, settings))
    return lambda: provider()()
