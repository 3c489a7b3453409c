"""Per-request trace: the stages that ran, in order, with their timings and decisions.

The stage list travels with the turn (it is part of the Step Functions payload), so a turn
whose stages ran in three different functions still shows one trace. Each stage is its own struct
under one header (`contracts.Stage`, ADR 0099).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from assist.contracts import AnyStage, Stage

if TYPE_CHECKING:
    from assist.contracts import TurnState

S = TypeVar("S", bound=Stage)


@contextmanager
def stage(state: TurnState, entry: S) -> Iterator[S]:
    """Time a stage; the yielded entry collects its decisions. On the way out it gets its milliseconds and the
    degraded reasons added to the turn's meanwhile. A stage that never ran is absent."""
    start, before = time.perf_counter(), len(state.degraded)
    try:
        yield entry
    finally:
        entry.ms = round((time.perf_counter() - start) * 1000, 2)
        entry.degraded = state.degraded[before:]
        state.stages.append(entry)  # type: ignore[arg-type]


def named(stages: list[AnyStage], kind: type[S]) -> S | None:
    """The first stage of that kind, if it ran."""
    return next((s for s in stages if isinstance(s, kind)), None)
