"""Per-request trace: the stages that ran, in order, with their timings and decisions."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Trace:
    def __init__(self, request_id: str | None = None) -> None:
        self.request_id = request_id or uuid.uuid4().hex
        self.stages: list[dict[str, Any]] = []
        self.extra: dict[str, Any] = {}
        self._t0 = time.perf_counter()

    @contextmanager
    def stage(self, name: str, **detail: Any) -> Iterator[dict[str, Any]]:
        """Time a stage; the yielded dict collects its decisions. A stage that never ran is absent."""
        entry: dict[str, Any] = {"name": name, "ms": 0.0, **detail}
        start = time.perf_counter()
        try:
            yield entry
        finally:
            entry["ms"] = round((time.perf_counter() - start) * 1000, 2)
            self.stages.append(entry)

    def to_dict(self) -> dict[str, Any]:
        total = round((time.perf_counter() - self._t0) * 1000, 2)
        return {"request_id": self.request_id, "total_ms": total, "stages": self.stages, **self.extra}
