"""The embedding layer of the model a registry's `current` pointer names, picked up without a redeploy.

A warm container checks the pointer at most every CLASSIFIER_RELOAD_S seconds, on the classify call that finds the
interval over (a Lambda's threads are frozen between invocations, so a background thread would not run). That call
reads the pointer and, when it has moved, loads and checks the new model completely before one reference
assignment swaps it in: calls already running keep the layer they picked up, and concurrent calls never wait for
the check. A model that fails to load (corrupt, altered, another embedder, not a routing model) is refused once and
the loaded one keeps serving; a pointer or artifact that cannot be read is tried again at the next interval.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from assist.classify.embedding import EmbeddingLayer
from assist.errors import AssistError
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.classify.registry import Registry
    from assist.embed.base import Embedder

log = get_logger(__name__)


class ReloadingLayer:
    """A provider of the cascade's embedding layer (`Callable[[], EmbeddingLayer]`) that follows a registry."""

    def __init__(self, registry: Registry, embedder: Callable[[], Embedder], interval_s: float) -> None:
        self._registry = registry
        self._embedder = embedder
        self._interval = interval_s
        self._lock = threading.Lock()
        self._layer: EmbeddingLayer | None = None
        self._followed = ""  # the pointer's version last acted on: serving it, or refused
        self._checked = 0.0

    def __call__(self) -> EmbeddingLayer:
        layer = self._layer
        if layer is None:
            return self._first()
        if time.monotonic() - self._checked >= self._interval and self._lock.acquire(blocking=False):
            try:
                layer = self._check(layer)
            finally:
                self._lock.release()
        return layer

    def _first(self) -> EmbeddingLayer:
        with self._lock:
            if self._layer is None:  # errors propagate: there is no model to keep serving yet
                version = self._registry.current_version()
                self._layer = self._load(version)
                self._followed, self._checked = version, time.monotonic()
            return self._layer

    def _check(self, serving: EmbeddingLayer) -> EmbeddingLayer:
        self._checked = time.monotonic()
        fields = {"registry": self._registry.root, "serving": serving.model.version}
        # A failed check must never fail the request that made it: every error is logged and the loaded model
        # goes on serving.
        try:
            version = self._registry.current_version()
        except Exception as exc:  # no pointer, an unreadable one, storage unreachable: look again next interval
            log.warning("classify.model_check_failed", **fields, error=f"{type(exc).__name__}: {exc}"[:300])
            return serving
        if version == self._followed:
            return serving
        try:
            layer = self._load(version)
        except AssistError as exc:  # the artifact itself is wrong: refused once, until the pointer moves again
            self._followed = version
            log.error("classify.model_refused", **fields, version=version, reason=str(exc)[:500])
            return serving
        except Exception as exc:  # reading it failed (throttled, unreachable): try it again next interval
            log.warning("classify.model_check_failed", **fields, error=f"{type(exc).__name__}: {exc}"[:300])
            return serving
        self._layer, self._followed = layer, version
        log.info("classify.model_swapped", **fields, version=version)
        return layer

    def _load(self, version: str) -> EmbeddingLayer:
        path = self._registry.artifact(version)
        return EmbeddingLayer.load(path, self._embedder(), s3=self._registry.s3, version=version)
