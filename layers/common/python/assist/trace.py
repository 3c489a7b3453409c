"""Per-request trace: the stages that ran, in order, with their timings and decisions.

The stage list travels with the turn (it is part of the Step Functions payload), so a turn
whose stages ran in three different functions still shows one trace.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from assist.contracts import Stage


@contextmanager
def stage(stages: list[Stage], name: str, **detail: Any) -> Iterator[Stage]:
    """Time a stage; the yielded `Stage` collects its decisions. A stage that never ran is absent."""
    entry = Stage(name=name, **detail)
    start = time.perf_counter()
    try:
        yield entry
    finally:
        entry.ms = round((time.perf_counter() - start) * 1000, 2)
        stages.append(entry)


def named(stages: list[Stage], name: str) -> Stage | None:
    """The first stage of that name, if it ran."""
    return next((s for s in stages if s.name == name), None)
