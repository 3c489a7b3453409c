"""The index as readers see it: the live version, followed without a restart (ADR 0067).

An `IndexHandle` owns the location and knows the live version: it re-reads the pointer
(`index/pointer.py`) at most every `INDEX_REFRESH_S`, and what it opened for one version (the retriever,
the corpus manifest) is opened again for the next. Every cache of index-derived state keys on
`handle.location()`, so nothing read from an old version outlives the switch.

An index on S3 is read from a local copy of the live version (`index/local_copy.py`, ADR 0095) unless
`INDEX_READ=s3`: `location()` is then the copy's directory, which changes when the new version's copy is
complete, so the version switch above is also the switch to the new copy.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from assist.aws.clients import client
from assist.index import pointer
from assist.index.local_copy import LocalCopies
from assist.logs import get_logger
from assist.settings import Settings

log = get_logger(__name__)
T = TypeVar("T")
_handles: dict[tuple[Any, ...], IndexHandle] = {}
_handles_lock = threading.Lock()


class IndexHandle:
    def __init__(self, settings: Settings, s3: Any = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._settings, self._s3, self._clock = settings, s3, clock
        self._uri: str | None = None
        self._checked = float("-inf")
        self._lock = threading.Lock()
        self.copies: LocalCopies | None = None
        if settings.index.is_s3 and settings.index.read == "copy":
            self.copies = LocalCopies(settings, self._s3_client())

    def location(self) -> str:
        """Where to read the live version: its local copy, or its URI (the location itself when nothing is
        published); the pointer re-checked when due."""
        with self._lock:
            now = self._clock()
            if self._uri is None or now - self._checked >= self._settings.index.refresh_s:
                self._checked = now
                self._uri = self._read(self._uri)
            live = self._uri
        return self.copies.serve(live) if self.copies else live

    def follow(self, open_: Callable[[Settings], T], settings: Settings) -> Callable[[], T]:
        """A provider of `open_(settings pointed at the live version)`: opened on first call, again when the
        version moves. `location()` is the key: whatever is cached from one version is dropped with it."""
        opened: dict[str, T] = {}
        lock = threading.Lock()

        def get() -> T:
            uri = self.location()
            with lock:
                if uri not in opened:
                    value = open_(settings.with_(index={"uri": uri}))
                    opened.clear()  # the old version's objects go with it
                    opened[uri] = value
                return opened[uri]

        return get

    def _read(self, current: str | None) -> str:
        root = self._settings.index.uri
        try:
            uri = pointer.live_uri(root, self._s3_client())
        except Exception as exc:  # an unreadable pointer keeps the version being served; first use has none
            if current is None:
                raise
            log.warning("index.pointer_unreadable", index=root, serving=current, error=f"{type(exc).__name__}: {exc}")
            return current
        if current is not None and uri != current:
            log.info("index.version_switched", index=root, serving=current, live=uri)
        return uri

    def _s3_client(self) -> Any:
        if self._s3 is None and self._settings.index.is_s3:
            self._s3 = client("s3", self._settings)
        return self._s3


def handle_for(settings: Settings) -> IndexHandle:
    """One handle per index location and interval in the process, shared by the retriever and the corpus."""
    i = settings.index
    key = (i.uri, i.refresh_s, settings.aws.endpoint_url, i.read, i.copy_dir, i.ephemeral_mb)
    with _handles_lock:
        if key not in _handles:
            _handles[key] = IndexHandle(settings)
        return _handles[key]
