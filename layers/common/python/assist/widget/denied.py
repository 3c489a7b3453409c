"""Visitor ids an operator denied (`assist keys deny-visitor`), as this process last read them (ADR 0093).

A token stays valid for its whole life once issued; the deny list is what ends one visitor's tokens early. Each
id's answer is kept `WIDGET_KEY_CACHE_S`, as a site key is, so a denial reaches every process within it and a
visitor costs the store one read per interval, not one per request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assist.widget.store.store import WidgetStore

MAX_REMEMBERED = 10_000  # made-up visitor ids must not grow it without end


class DeniedVisitors:
    def __init__(self, store: Callable[[], WidgetStore], ttl_s: float, clock: Callable[[], float] = time.monotonic):
        self._store, self._ttl, self._clock = store, ttl_s, clock
        self._seen: dict[str, tuple[float, bool]] = {}
        self._lock = threading.Lock()

    def __contains__(self, visitor: str) -> bool:
        with self._lock:
            hit = self._seen.get(visitor)
        if hit is not None and self._clock() - hit[0] < self._ttl:
            return hit[1]
        denied = self._store().denied(visitor) is not None
        with self._lock:
            if len(self._seen) > MAX_REMEMBERED:
                self._seen.clear()
            self._seen[visitor] = (self._clock(), denied)
        return denied
