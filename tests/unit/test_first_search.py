"""A process's first search also opens the index: it gets the cold budget, within the request's deadline, and
past it the turn says the index was still loading; once open, a search has the warm budget (ADR 0110). The
index here is a stand-in whose opening and searches take set times: the budgets are the logic under test."""

from __future__ import annotations

import time

from assist.ask.engine import Engine
from assist.ask.parts import Parts
from assist.contracts import (
    AskRequest,
    Confidence,
    Degraded,
    Layer,
    QueryType,
    RetrievalResult,
    Route,
    Slot,
    TurnState,
)
from assist.lazy import once
from assist.settings import Settings


class SlowIndex:
    """Searches that take `search_s`; opening (the first `retriever()` call) takes `open_s`."""

    def __init__(self, search_s: float) -> None:
        self.search_s = search_s

    def search(self, query: str, k: int, translated: str | None = None, scope: object = None) -> RetrievalResult:
        time.sleep(self.search_s)
        return RetrievalResult(chunks=[], confidence=Confidence.NONE)


def engine(open_s: float, search_s: float, warm_s: float = 0.2, cold_s: float = 1.5) -> tuple[Engine, SlowIndex]:
    index = SlowIndex(search_s)

    def opened() -> SlowIndex:
        time.sleep(open_s)
        return index

    settings = Settings().with_(retrieve={"timeout_s": warm_s, "cold_timeout_s": cold_s})
    parts = Parts(store=None, cascade=None, slots=None, retriever=once(opened))  # type: ignore[arg-type]
    return Engine(settings, parts), index


def turn(deadline_s: float = 28.0) -> TurnState:
    state = TurnState(
        request=AskRequest(session_id="s", message="write a loop"),
        request_id="r",
        started_at=time.time(),
        deadline=time.time() + deadline_s,
    )
    state.route = Route(QueryType.CODE_GENERATION, Layer.DECLARED, 1.0, "declared", Slot.MAIN)  # no verdict
    return state


def test_the_first_search_waits_for_the_index_to_open_and_the_next_has_the_warm_budget():
    e, index = engine(open_s=0.6, search_s=0.01)
    first = e.retrieve(turn())
    assert first.degraded == []  # 0.6 s past the warm 0.2 s, inside the cold 1.5 s
    index.search_s = 0.5
    second = e.retrieve(turn())
    assert second.degraded == [Degraded.INDEX_TIMEOUT]  # open now: the warm budget
    e.close()


def test_an_index_still_opening_past_the_cold_budget_is_named_loading():
    e, _ = engine(open_s=2.5, search_s=0.01)
    state = e.retrieve(turn())
    assert state.degraded == [Degraded.INDEX_LOADING]
    e.close()


def test_the_cold_budget_ends_with_the_request_deadline():
    e, _ = engine(open_s=1.2, search_s=0.01, cold_s=10.0)
    started = time.monotonic()
    state = e.retrieve(turn(deadline_s=1.5))  # 1.5 s left, less the persist reserve (1 s): the warm 0.2 s floor
    assert state.degraded == [Degraded.INDEX_LOADING]
    assert time.monotonic() - started < 1.0
    e.close()
