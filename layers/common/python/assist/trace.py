"""Per-request trace: the stages that ran, in order, with their timings and decisions.

The stage list travels with the turn (it is part of the Step Functions payload), so a turn
whose stages ran in three different functions still shows one trace.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def stage(stages: list[dict[str, Any]], name: str, **detail: Any) -> Iterator[dict[str, Any]]:
    """Time a stage; the yielded dict collects its decisions. A stage that never ran is absent."""
    entry: dict[str, Any] = {"name": name, "ms": 0.0, **detail}
    start = time.perf_counter()
    try:
        yield entry
    finally:
        entry["ms"] = round((time.perf_counter() - start) * 1000, 2)
        stages.append(entry)
