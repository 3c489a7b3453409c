"""One turn end to end: history → classify → retrieve (when the type needs it) → answer → persist."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from assist.answer.extractive import extractive_answer, platform_facts
from assist.answer.llm import LLMUnavailable
from assist.answer.prompts import build_messages
from assist.contracts import Answer, AskRequest, Chunk, IntentEntry, QueryType, Source, check_ask
from assist.logs import get_logger
from assist.memory.store import Turn, topic_of
from assist.trace import Trace

if TYPE_CHECKING:
    from assist.answer.llm import ModelSlots
    from assist.classify.cascade import Cascade
    from assist.memory.store import SessionStore
    from assist.retrieve.search import Retriever
    from assist.settings import Settings

log = get_logger(__name__)
CONVERSATION_TURNS = 6


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
        """Open the index and load the embedder now rather than on the first question."""
        self._retriever()

    def ask(self, req: AskRequest, owner: str = "anonymous") -> Answer:
        s = self.settings
        check_ask(req, s.max_message_chars, s.max_extra_context_chars)
        trace = Trace()
        degraded: list[str] = []

        with trace.stage("history") as st:
            history, last_turn = self._store.recent_intents(req.session_id)
            st["entries"] = len(history)
        trace.extra["history"] = [f'[{h.type.value}] "{h.topic}"' for h in history]

        with trace.stage("classify") as st:
            route = self._cascade.classify(req.message, history, declared=req.query_type)
            st.update(type=route.type.value, layer=route.layer, confidence=route.confidence)

        chunks: list[Chunk] = []
        retrieval = None
        if route.type.needs_retrieval:
            route.retrieval_query = req.message
            with trace.stage("retrieve") as st:
                result = self._retriever().search(route.retrieval_query, k=s.retrieve_top_k)
                chunks = result.chunks
                degraded += result.degraded
                st.update(
                    n=len(chunks),
                    confidence=result.confidence,
                    strategies=sorted({f for c in chunks for f in c.found_by}),
                )
            retrieval = {
                "confidence": result.confidence,
                "query_kind": result.query_kind,
                "weights": result.weights,
                "n": len(chunks),
            }

        with trace.stage("generate", slot=route.model_slot) as st:
            conversation = self._conversation(req.session_id) if route.type is QueryType.CONVERSATIONAL else None
            messages = build_messages(
                route.type, req.message, chunks, conversation, req.extra_context, req.editor_content
            )
            try:
                gen = self._slots.chat(route.model_slot, messages)
                text, degraded = gen.text, degraded + gen.degraded
                st.update(
                    model=gen.model, answered_by=gen.slot, **{k: v for k, v in gen.usage.items() if v is not None}
                )
                route.model = gen.model
            except LLMUnavailable:
                degraded.append("llm_unavailable")
                text = (
                    platform_facts(req.extra_context) if route.type is QueryType.PLATFORM else extractive_answer(chunks)
                )
                st.update(model=None, answered_by="extractive")

        sources = [Source(id=c.id, doc_id=c.doc_id, title=c.title, heading=c.heading, score=c.score) for c in chunks]
        with trace.stage("persist") as st:
            entry = IntentEntry(
                type=route.type, topic=topic_of(req.message), layer=route.layer, confidence=route.confidence
            )
            turn = Turn(
                session_id=req.session_id,
                message=req.message,
                answer=text,
                entry=entry,
                owner=owner,
                sources=[x.id for x in sources],
                degraded=degraded,
            )
            st["turn"] = self._store.append_turn(turn, after=last_turn)

        out = Answer(
            answer=text, sources=sources, route=route, retrieval=retrieval, degraded=degraded, trace=trace.to_dict()
        )
        log.info(
            "ask.completed",
            session_id=req.session_id,
            type=route.type.value,
            layer=route.layer,
            degraded=degraded,
            ms=out.trace["total_ms"],
        )
        return out

    def _conversation(self, session_id: str) -> list[dict[str, str]]:
        msgs: list[dict[str, str]] = []
        for item in self._store.messages(session_id, limit=CONVERSATION_TURNS):
            msgs += [{"role": "user", "content": item["message"]}, {"role": "assistant", "content": item["answer"]}]
        return msgs
