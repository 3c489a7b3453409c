"""Parts built on their first use, once, thread-safely: a function pays at cold start only for what its stage
touches (ADR 0071 keeps this where every layer may use it)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

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

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)


def once(factory: Callable[[], T]) -> Callable[[], T]:
    """A lazy value as a zero-argument function: built by the first call, the same object after."""
    return Lazy(factory).get
