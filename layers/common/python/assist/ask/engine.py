"""One turn in three stages — classify, retrieve (when the type needs it), answer — plus `ask` for all three.

Each stage takes and returns a `TurnState`, so the same code runs in one process (the HTTP
API, the CLI) or as separate Step Functions tasks.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from assist.answer.extractive import extractive_answer, platform_facts
from assist.answer.llm import LLMUnavailable
from assist.answer.prompts import build_messages
from assist.contracts import Answer, AskRequest, IntentEntry, QueryType, Source, TurnState, check_ask
from assist.logs import get_logger
from assist.memory.store import Turn, topic_of
from assist.trace import stage

if TYPE_CHECKING:
    from assist.answer.llm import ModelSlots
    from assist.classify.cascade import Cascade
    from assist.memory.store import SessionStore
    from assist.retrieve.search import Retriever
    from assist.settings import Settings

log = get_logger(__name__)
CONVERSATION_TURNS = 6
NOT_STORED = "(account facts from extra_context, not stored)"


class Engine:
    def __init__(
        self,
        settings: Settings,
        store: SessionStore,
        cascade: Cascade,
        slots: ModelSlots,
        retriever: Callable[[], Retriever],
    ) -> None:
        self.settings = settings
        self._store = store
        self._cascade = cascade
        self._slots = slots
        self._retriever = retriever  # a factory: the index is opened on first use, once

    def warm(self) -> None:
        """Load the embedder, the classifier model and the index now rather than on the first question."""
        self._cascade.warm()
        self._retriever()

    def ask(self, req: AskRequest, owner: str = "anonymous") -> Answer:
        state = self.classify(self.start(req, owner))
        if state.route is not None and state.route.type.needs_retrieval:
            state = self.retrieve(state)
        return self.answer(state)

    def start(self, req: AskRequest, owner: str = "anonymous") -> TurnState:
        s = self.settings
        check_ask(req, s.max_message_chars, s.max_extra_context_chars)
        return TurnState(request=req, request_id=uuid.uuid4().hex, started_at=time.time(), owner=owner)

    def classify(self, state: TurnState) -> TurnState:
        req = state.request
        with stage(state.stages, "history") as st:
            state.turn = self._store.begin_turn(req.session_id, state.owner)
            state.history = self._store.recent_intents(req.session_id)
            st.update(entries=len(state.history), turn=state.turn)
        with stage(state.stages, "classify") as st:
            state.route = self._cascade.classify(req.message, state.history, declared=req.query_type)
            st.update(type=state.route.type.value, layer=state.route.layer, confidence=state.route.confidence)
        if state.route.type.needs_retrieval:
            state.route.retrieval_query = req.message
        return state

    def retrieve(self, state: TurnState) -> TurnState:
        assert state.route is not None, "classify runs before retrieve"
        with stage(state.stages, "retrieve") as st:
            result = self._retriever().search(
                state.route.retrieval_query or state.request.message, k=self.settings.retrieve_top_k
            )
            state.retrieval = result
            state.degraded += result.degraded
            st.update(
                n=len(result.chunks),
                confidence=result.confidence,
                strategies=sorted({f for c in result.chunks for f in c.found_by}),
            )
        return state

    def answer(self, state: TurnState) -> Answer:
        assert state.route is not None, "classify runs before answer"
        req, route = state.request, state.route
        chunks = state.retrieval.chunks if state.retrieval else []
        with stage(state.stages, "generate", slot=route.model_slot) as st:
            conversation = self._conversation(req.session_id) if route.type is QueryType.CONVERSATIONAL else None
            messages = build_messages(
                route.type, req.message, chunks, conversation, req.extra_context, req.editor_content
            )
            try:
                gen = self._slots.chat(route.model_slot, messages)
                text = gen.text
                state.degraded += gen.degraded
                route.model = gen.model
                st.update(
                    model=gen.model, answered_by=gen.slot, **{k: v for k, v in gen.usage.items() if v is not None}
                )
            except LLMUnavailable:
                state.degraded.append("llm_unavailable")
                text = (
                    platform_facts(req.extra_context) if route.type is QueryType.PLATFORM else extractive_answer(chunks)
                )
                st.update(model=None, answered_by="extractive")
        # A PLATFORM answer without a model quotes extra_context verbatim, which is never stored.
        stored = NOT_STORED if route.type is QueryType.PLATFORM and "llm_unavailable" in state.degraded else text

        sources = [Source(id=c.id, doc_id=c.doc_id, title=c.title, heading=c.heading, score=c.score) for c in chunks]
        with stage(state.stages, "persist") as st:
            entry = IntentEntry(
                type=route.type, topic=topic_of(req.message), layer=route.layer, confidence=route.confidence
            )
            turn = Turn(
                session_id=req.session_id,
                number=state.turn,
                request_id=state.request_id,
                message=req.message,
                answer=stored,
                entry=entry,
                owner=state.owner,
                sources=[x.id for x in sources],
                degraded=state.degraded,
            )
            st.update(turn=state.turn, written=self._store.append_turn(turn))

        r = state.retrieval
        retrieval = (
            None
            if r is None
            else {"confidence": r.confidence, "query_kind": r.query_kind, "weights": r.weights, "n": len(r.chunks)}
        )
        trace = {
            "request_id": state.request_id,
            "total_ms": round((time.time() - state.started_at) * 1000, 2),
            "stages": state.stages,
            "history": [f'[{h.type.value}] "{h.topic}"' for h in state.history],
        }
        log.info(
            "ask.completed",
            session_id=req.session_id,
            type=route.type.value,
            layer=route.layer,
            degraded=state.degraded,
            ms=trace["total_ms"],
        )
        return Answer(
            answer=text, sources=sources, route=route, retrieval=retrieval, degraded=state.degraded, trace=trace
        )

    def _conversation(self, session_id: str) -> list[dict[str, str]]:
        msgs: list[dict[str, str]] = []
        for item in self._store.messages(session_id, limit=CONVERSATION_TURNS):
            msgs += [{"role": "user", "content": item["message"]}, {"role": "assistant", "content": item["answer"]}]
        return msgs
