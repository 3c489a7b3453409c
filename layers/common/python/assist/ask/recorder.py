"""The end of a turn: its number taken while the model answers, then the turn written once to the session store,
and its trace, log event and metrics (ADR 0073)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from assist import metrics
from assist.contracts import (
    Answer,
    Chunk,
    IntentEntry,
    PersistStage,
    QueryType,
    RetrievalInfo,
    Source,
    Trace,
    TurnState,
)
from assist.logs import get_logger
from assist.sessions.items import Turn
from assist.sessions.store import topic_of
from assist.trace import stage

if TYPE_CHECKING:
    from assist.sessions.store import Store

log = get_logger(__name__)
NOT_STORED = "(account facts from extra_context, not stored)"
Submit = Callable[..., "Future[Any]"]


def sources_of(chunks: Sequence[Chunk], near_miss: bool = False) -> list[Source]:
    """The answer's sources; `near_miss`: passages found but not cited, each marked so (ADR 0102)."""
    mark = True if near_miss else UNSET
    return [
        Source(id=c.id, doc_id=c.doc_id, title=c.title, heading=c.heading, score=c.score, url=c.url, near_miss=mark)
        for c in chunks
    ]


class TurnRecorder:
    """`submit` runs a call in the engine's pool (the turn number is taken beside the model's answer)."""

    def __init__(self, store: Callable[[], Store], submit: Submit) -> None:
        self._store = store
        self._submit = submit

    def take(self, state: TurnState) -> Future[int] | None:
        """The turn number, taken now (while the model answers) unless classify took it already."""
        if state.turn:
            return None
        return self._submit(self._store().begin_turn, state.request.session_id, state.owner)

    def finish(
        self,
        state: TurnState,
        text: str,
        chunks: list[Chunk],
        turn: Future[int] | None = None,
        near_misses: Sequence[Chunk] = (),
    ) -> Answer:
        """Write the turn (its `persist` stage), then the answer with its trace; log and count it. `near_misses`:
        an uncertain answer's passages, listed after the cited ones (none) and not stored as cited (ADR 0102)."""
        assert state.route is not None, "classify runs before answer"
        sources = sources_of(chunks)
        self._persist(state, text, sources, turn)
        trace = Trace(
            request_id=state.request_id,
            total_ms=round((time.time() - state.started_at) * 1000, 2),
            stages=state.stages,
            history=[f'[{h.type.value}] "{h.topic}"' for h in state.history],
        )
        route = state.route
        log.info(
            "ask.completed",
            session_id=state.request.session_id,
            type=route.type.value,
            layer=route.layer,
            degraded=state.degraded,
            uncertain=state.uncertain_reason,
            ms=trace.total_ms,
        )
        metrics.turn(route.type.value, route.layer, state.degraded, trace.total_ms, metrics.tokens(state.stages))
        return Answer(
            answer=text,
            sources=sources + sources_of(near_misses, near_miss=True),
            route=route,
            retrieval=RetrievalInfo.of(state.retrieval) if state.retrieval is not None else None,
            degraded=state.degraded,
            trace=trace,
            turn=state.turn,
            uncertain=bool(state.uncertain_reason),
            uncertain_reason=state.uncertain_reason,
        )

    def _persist(self, state: TurnState, text: str, sources: list[Source], turn: Future[int] | None) -> None:
        req, route = state.request, state.route
        assert route is not None
        # A PLATFORM answer without a model quotes extra_context verbatim, which is never stored.
        without_model = any(d.without_model for d in state.degraded)
        stored = NOT_STORED if route.type is QueryType.PLATFORM and without_model else text
        with stage(state, PersistStage()) as st:
            if turn is not None:
                state.turn = turn.result()
            elif not state.turn:  # the caller went away before it was taken
                state.turn = self._store().begin_turn(req.session_id, state.owner)
            record = Turn(
                session_id=req.session_id,
                number=state.turn,
                request_id=state.request_id,
                message=req.message,
                answer=stored,
                entry=IntentEntry(route.type, topic_of(req.message), route.layer, route.confidence),
                owner=state.owner,
                sources=[x.id for x in sources],
                degraded=state.degraded,
                history=state.history,
                retrieval_confidence=state.retrieval.confidence if state.retrieval else None,
                uncertain=state.uncertain_reason,
                site_key=state.site.key if state.site else None,
                page=state.site.page if state.site else None,
                scope=state.scope,
            )
            st.turn, st.written = state.turn, self._store().append_turn(record)
