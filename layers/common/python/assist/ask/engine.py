"""One turn in three stages — classify, retrieve (when the type needs it), answer — plus `ask` for all three
and `stream` for the two-phase streamed variant.

Each stage takes and returns a `TurnState`, so the same code runs in one process (the HTTP
API, the CLI) or as separate Step Functions tasks.
"""

from __future__ import annotations

import contextvars
import time
import uuid
from collections.abc import AsyncGenerator, Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import msgspec

from assist import metrics
from assist.answer import marker
from assist.answer.budget import Material, Prompt, fit, token_counter
from assist.answer.extractive import conversation_recap, extractive_answer, platform_facts
from assist.answer.llm import Generation, LLMUnavailable, Thought
from assist.answer.marker import MarkerFilter
from assist.answer.phrases import language, phrase
from assist.answer.prefetch import Prefetched
from assist.contracts import (
    Answer,
    AskRequest,
    Chunk,
    Exchange,
    Feedback,
    FeedbackRequest,
    IntentEntry,
    QueryType,
    RetrievalResult,
    Route,
    Source,
    Transcript,
    TranscriptIntent,
    TranscriptTurn,
    TurnState,
    check_ask,
)
from assist.deadline import after, sooner
from assist.logs import get_logger
from assist.memory.rewrite import deterministic_rewrite, leans_on_history, llm_rewrite
from assist.memory.store import Turn, intent_entries, topic_of
from assist.memory.translate import llm_translate
from assist.retrieve.analysis import analyze
from assist.retrieve.language import foreign
from assist.thinking import strip_thinking
from assist.trace import stage

if TYPE_CHECKING:
    from assist.answer.llm import ModelSlots
    from assist.classify.cascade import Cascade
    from assist.embed.base import Embedder
    from assist.memory.store import Store
    from assist.retrieve.corpus import Corpus
    from assist.retrieve.search import Retriever
    from assist.settings import Settings

log = get_logger(__name__)
MEMORY_SOURCES = 8
NOT_STORED = "(account facts from extra_context, not stored)"
TRANSCRIPT_TURN = ("turn", "message", "answer", "type", "sources", "degraded", "created_at", "feedback")
TRANSCRIPT_INTENT = ("turn", "type", "topic", "layer", "confidence")


@dataclass
class Context:
    """What the model sees besides the message: passages, and for CONVERSATIONAL the session so far."""

    chunks: list[Chunk]
    turns: list[Exchange] = field(default_factory=list)
    corpus: str = ""  # the `<corpus>` section of a question about the corpus itself (ADR 0042)
    corpus_answer: str | None = None  # its answer from the manifest alone, for when no model can answer
    documents: int = 0  # the first chunks are a named document's, given whole (ADR 0042)

    @property
    def conversation(self) -> list[dict[str, str]]:
        """The session's turns as chat messages; an answer stored before thinking was kept apart loses it here."""
        msgs: list[dict[str, str]] = []
        for t in self.turns:
            msgs += [{"role": "user", "content": t.message}, {"role": "assistant", "content": strip_thinking(t.answer)}]
        return msgs


class Engine:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        cascade: Cascade,
        slots: ModelSlots,
        retriever: Callable[[], Retriever],
        corpus: Callable[[], Corpus | None] | None = None,
        embedder: Callable[[], Embedder] | None = None,
    ) -> None:
        self.settings = settings
        self.embedder = embedder  # the classifier's and the retriever's, shared with the insights page
        self._store = store
        self._cascade = cascade
        self._slots = slots
        self._retriever = retriever  # a factory: the index is opened on first use, once
        self._corpus = corpus  # the index's manifest, read on the first corpus question, once
        # per turn: the message's embedding, the turn counter, the search; for a few turns at once
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="engine")

    def manifest(self) -> list[Any] | None:
        """The corpus manifest's entries (ADR 0042); None when the index has none."""
        corpus = self._corpus() if self._corpus else None
        return corpus.entries if corpus is not None else None

    def warm(self) -> None:
        """Load the embedder, the classifier model and the index (and, when configured, both model
        slots) now rather than on the first question."""
        self._cascade.warm()
        self._retriever()
        if self.settings.ollama.warm_up:
            self._slots.warm_up()

    def retriever(self) -> Retriever:
        """The index, opened on first use (a search or a lookup outside a turn: the MCP tools)."""
        return self._retriever()

    def transcript(self, session_id: str, owner: str) -> Transcript:
        turns, intents = self._store.transcript(session_id, owner)
        return Transcript(
            session_id=session_id,
            turns=[_convert(t, TRANSCRIPT_TURN, TranscriptTurn) for t in turns],
            intents=[_convert(i, TRANSCRIPT_INTENT, TranscriptIntent) for i in intents],
        )

    def feedback(self, session_id: str, owner: str, turn: int, req: FeedbackRequest) -> Feedback:
        """Record (or replace) a person's feedback on one of their turns."""
        fb = Feedback(rating=req.rating, at=_now(), type=req.type, comment=req.comment)
        self._store.set_feedback(session_id, owner, turn, msgspec.to_builtins(fb))
        log.info("feedback.recorded", session_id=session_id, turn=turn, rating=req.rating, type=req.type)
        return fb

    # -- the stages ----------------------------------------------------------------
    def start(self, req: AskRequest, owner: str = "anonymous", deadline: float | None = None) -> TurnState:
        """`deadline` (epoch seconds): the request's, when it was set upstream; else API_DEADLINE_S from now."""
        check_ask(req, self.settings)
        now = time.time()
        deadline = deadline if deadline is not None else now + self.settings.api.deadline_s
        return TurnState(request=req, request_id=uuid.uuid4().hex, started_at=now, owner=owner, deadline=deadline)

    def classify(self, state: TurnState, take_turn: bool = True) -> TurnState:
        """History and type. `take_turn=False` leaves the turn number to the answer stage, which takes
        it while the model answers (one process); a state that travels to another process takes it here."""
        req = state.request
        ahead = self._cascade.ahead(req.message, req.query_type)
        embedding = self._submit(ahead) if ahead is not None else None  # computed while the session is read
        with stage(state.stages, "history") as st:
            recent = self._store.recent(req.session_id, state.owner)  # one read: history, memory, owner
            state.history = intent_entries(recent)
            st["entries"] = len(state.history)
        turn = self._submit(self._store.begin_turn, req.session_id, state.owner) if take_turn else None
        with stage(state.stages, "classify") as st:
            if embedding is not None:
                wait([embedding])  # a failure is classify's to meet and report, as without the head start
            state.route = self._cascade.classify(req.message, state.history, declared=req.query_type)
            st.update(type=state.route.type.value, layer=state.route.layer, confidence=state.route.confidence)
        if state.route.type is QueryType.CONVERSATIONAL:
            state.conversation = [Exchange(i["message"], i["answer"], list(i.get("sources", []))) for i in recent]
        if turn is not None:
            state.turn = turn.result()
        if state.route.type.needs_retrieval:
            state.route.retrieval_query = req.message
            if leans_on_history(req.message, state.history):
                with stage(state.stages, "rewrite") as st:
                    rewritten = llm_rewrite(self._slots, req.message, state.history, self._light_deadline(state))
                    st["by"] = "llm" if rewritten else "history"
                    state.route.retrieval_query = rewritten or deterministic_rewrite(req.message, state.history)
                    st["query"] = state.route.retrieval_query
            state.route.lexical_query = self._translate(state, state.route.retrieval_query)
        return state

    def _light_deadline(self, state: TurnState) -> float | None:
        """A search-query call (rewrite, translate) waits at most the LLM classifier's budget, and never past the
        turn's deadline: the answer still needs the rest."""
        return sooner(state.deadline, after(self.settings.classifier.llm_timeout_s))

    def _translate(self, state: TurnState, query: str) -> str | None:
        """A question in another language than the index gets a translation to search by (only with a
        configured LLM)."""
        if not self.settings.ollama.host_explicit:
            return None
        lang = foreign(query, self.settings.index.language)
        if lang is None:
            return None
        with stage(state.stages, "translate") as st:
            translated = llm_translate(self._slots, query, self.settings.index.language, self._light_deadline(state))
            st.update({"from": lang, "to": self.settings.index.language, "by": "llm" if translated else "none"})
            if translated:
                st["query"] = translated
        return translated

    def retrieve(self, state: TurnState) -> TurnState:
        assert state.route is not None, "classify runs before retrieve"
        with stage(state.stages, "retrieve") as st:
            query = state.route.retrieval_query or state.request.message
            search = self._submit(self._search, query, state.route.lexical_query)
            try:
                result = search.result(timeout=self.settings.retrieve.timeout_s)
            except FutureTimeout:  # a slow index (S3 latency): the answer goes on without passages, and says so
                log.warning("retrieve.timeout", budget_s=self.settings.retrieve.timeout_s)
                result = RetrievalResult(chunks=[], confidence="none", degraded=["index_timeout"])
            state.retrieval = result
            state.degraded += result.degraded
            st.update(
                n=len(result.chunks),
                confidence=result.confidence,
                query_kind=result.query_kind,
                strategies=result.strategies,
            )
        if state.route.type is QueryType.RETRIEVAL:  # "write code that lists all files" is not about the corpus
            self._recognize(state, state.request.message)
            if state.corpus is None:
                self._judge(state, query, state.route.lexical_query, st)
        return state

    def _judge(self, state: TurnState, query: str, translated: str | None, st: dict[str, Any]) -> None:
        """Does the documentation cover the question (ADR 0055)? Uncertain: the answer says it does not,
        with the nearest topics (`retrieval.suggestions`), and no model is asked. An index that could not
        be searched says nothing about the documentation: no verdict then. The verdict and its signals go
        to the retrieve stage's `verdict` (a few microseconds: no stage of its own)."""
        from assist.answer.not_covered import nearest_topics
        from assist.retrieve.verdict import Weights, judge

        result = state.retrieval
        if result is None or {"index_unavailable", "index_timeout"} & set(result.degraded):
            return
        readable = translated is not None or foreign(query, self.settings.index.language) is None
        weights = Weights.from_settings(self.settings)
        verdict = judge(translated or query, result, weights, readable, self._retriever().unknown)
        st["verdict"] = verdict.detail()
        if verdict.uncertain and state.request.force_answer:  # asked anyway: the model answers, the trace says so
            st["verdict"]["forced"] = True
        elif verdict.uncertain:
            state.uncertain_reason = verdict.reason
            result.suggestions = nearest_topics(result.chunks, result.suggestions)

    def _recognize(self, state: TurnState, question: str) -> None:
        """Is this a question about the corpus itself? Ids travel on (`state.corpus`), the answer stage
        renders the entries and fetches the documents. A `corpus` stage appears only when it is."""
        if self._corpus is None:
            return
        from assist.retrieve.corpus import recognize  # the classify function, importing this module, never needs it

        start = time.perf_counter()
        try:
            match = recognize(question, self._corpus, self.settings.retrieve.corpus_chars)
        except Exception as exc:  # a manifest that cannot be read: an ordinary question, and the log says why
            log.warning("retrieve.corpus_failed", error=f"{type(exc).__name__}: {str(exc)[:200]}")
            return
        if match is None:
            return
        state.corpus = match
        state.stages.append(
            {
                "name": "corpus",
                "ms": round((time.perf_counter() - start) * 1000, 2),
                "kind": match.kind,
                "subject": match.subject,
                "matched": match.matched,
                "entries": len(match.entries),
                "documents": match.documents,
                **({"found_by": match.found_by} if match.found_by else {}),
                **({"missing": match.missing} if match.missing else {}),
            }
        )

    def _submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """Run in the engine's pool with this request's log context (request id, function)."""
        return self._pool.submit(contextvars.copy_context().run, fn, *args)

    def _search(self, query: str, translated: str | None = None) -> RetrievalResult:
        """`translated`: the query in the index's language (`translate` stage). The full-text side searches
        it; so does the vector side when the embedder is the English-only local one (ADR 0038 measures
        both), while a multilingual embedder gets the question as asked."""
        try:
            if translated is None:
                return self._retriever().search(query, k=self.settings.retrieve.top_k)
            if self.settings.embed.embedder == "minilm":
                query = translated
            return self._retriever().search(query, k=self.settings.retrieve.top_k, analysis=analyze(translated))
        except Exception as exc:  # any index failure (S3 down, corrupt data): answer without passages, say so
            log.warning("retrieve.failed", error=f"{type(exc).__name__}: {str(exc)[:200]}")
            return RetrievalResult(chunks=[], confidence="none", degraded=["index_unavailable"])

    def prepare(self, req: AskRequest, owner: str = "anonymous", deadline: float | None = None) -> TurnState:
        """Phase 1: everything up to the model — classify, then retrieve or recall as the type needs."""
        state = self.classify(self.start(req, owner, deadline), take_turn=False)
        if self._route(state).type.needs_retrieval:
            state = self.retrieve(state)
        elif self._route(state).type is QueryType.CONVERSATIONAL:
            state = self.recall(state)
        return state

    def recall(self, state: TurnState) -> TurnState:
        """The passages cited earlier in the session (a cumulative source map: a lookup by id, not a search)."""
        with stage(state.stages, "memory") as st:
            cited = list(dict.fromkeys(i for t in state.conversation for i in t.sources))[-MEMORY_SOURCES:]
            state.memory = self._retriever().fetch(cited) if cited else []
            st.update(turns=len(state.conversation), sources=len(state.memory))
        return state

    def ask(self, req: AskRequest, owner: str = "anonymous") -> Answer:
        return self.answer(self.prepare(req, owner))

    def answer(self, state: TurnState) -> Answer:
        ctx = self._context(state)
        turn = self._take_turn(state)
        if state.uncertain_reason:
            return self._finish(state, self._not_covered(state), [], turn)
        slot = self._route(state).model_slot
        prompt = self._prompt(state, ctx)
        with stage(state.stages, "generate", slot=slot) as st:
            st["prompt"] = prompt.trace()
            try:
                gen: Generation | LLMUnavailable = self._slots.chat(slot, prompt.messages, deadline=state.deadline)
            except LLMUnavailable as exc:
                gen = exc
            text = self._generated(state, st, gen, ctx)
        return self._finish(state, text, ctx.chunks, turn)

    async def stream(self, state: TurnState) -> AsyncGenerator[tuple[str, dict[str, Any]], None]:
        """Phase 2 of a prepared turn: the `route` event at once, then `token`s, then `done`.

        The model is requested before the route event is yielded, so its request overlaps the
        route's delivery (ADR 0037). If the consumer goes away mid-stream, the model stream is
        closed and the turn is still written (with what was generated so far and `client_disconnected`).
        """
        import anyio
        import msgspec

        req = state.request
        route = self._route(state)
        ctx = self._context(state)  # `prepare` retrieved or recalled; a named document is read here, whole
        prompt = None if state.uncertain_reason else self._prompt(state, ctx)  # the sources the model will see
        # with each source's passage, so a reader (the web chat) can see what the answer is built from
        sources = [
            {**msgspec.to_builtins(s), "passage": c.text} for s, c in zip(_sources(ctx.chunks), ctx.chunks, strict=True)
        ]
        uncertain = {"uncertain": bool(state.uncertain_reason), "uncertain_reason": state.uncertain_reason}
        if state.uncertain_reason:  # no model: the fixed answer, written first (a reader leaving loses nothing)
            text = self._not_covered(state)
            answer = await anyio.to_thread.run_sync(self._finish, state, text, [], self._take_turn(state))
            yield "route", {**msgspec.to_builtins(route), "sources": [], "degraded": list(state.degraded), **uncertain}
            yield "token", {"text": text}
            yield "done", {**msgspec.to_builtins(answer), "usage": {}}
            return
        # requested now, read after the route event: the request travels while the route goes out
        assert prompt is not None
        model = Prefetched(self._slots.stream(route.model_slot, prompt.messages, deadline=state.deadline))
        thinking = self._slots.thinks(route.model_slot)  # the model's thinking is shown apart, only when asked for
        turn: Future[int] | None = None
        parts: list[str] = []
        gen: Generation | LLMUnavailable | None = None
        st: dict[str, Any] = {}
        writing = False
        try:
            route_event = {**msgspec.to_builtins(route), "sources": sources, "degraded": list(state.degraded)}
            yield "route", route_event | uncertain
            turn = self._take_turn(state)  # after the route event, while the model starts: needed only to write
            with stage(state.stages, "generate", slot=route.model_slot) as st:
                st["prompt"] = prompt.trace()
                shown = MarkerFilter()  # the model's "not covered" marker never reaches the reader, even in pieces
                try:
                    async for item in model:
                        if isinstance(item, Generation):
                            gen = item
                        elif isinstance(item, Thought):
                            if thinking:
                                yield "thinking", {"text": item.text}
                        elif piece := shown.feed(item):
                            parts.append(piece)
                            yield "token", {"text": piece}
                except LLMUnavailable as exc:
                    gen = exc
                if rest := shown.close():
                    parts.append(rest)
                    yield "token", {"text": rest}
                text = self._generated(state, st, gen, ctx)
            if isinstance(gen, LLMUnavailable):
                yield "token", {"text": text}
            elif len(text) > len(said := "".join(parts)):  # the note of an answer cut at its output limit
                yield "token", {"text": text[len(said) :]}
            writing = True  # from here the turn is written here (or fails loudly), never a second time below
            answer = await anyio.to_thread.run_sync(self._finish, state, text, ctx.chunks, turn)
            yield "done", {**msgspec.to_builtins(answer), "usage": st.get("usage", {})}
        finally:
            if not writing:
                state.degraded.append("client_disconnected")
                log.info("answer.stream_cancelled", session_id=req.session_id, tokens=len(parts))
                with anyio.CancelScope(shield=True):
                    await model.aclose()
                    await anyio.to_thread.run_sync(self._finish, state, "".join(parts), ctx.chunks, turn)

    # -- shared by answer() and stream() -----------------------------------------------
    @staticmethod
    def _route(state: TurnState) -> Route:
        assert state.route is not None, "classify runs before answer"
        return state.route

    def _take_turn(self, state: TurnState) -> Future[int] | None:
        """The turn number, taken now (while the model answers) unless classify took it already."""
        if state.turn:
            return None
        return self._submit(self._store.begin_turn, state.request.session_id, state.owner)

    def _not_covered(self, state: TurnState) -> str:
        from assist.answer.not_covered import links, not_covered

        with stage(state.stages, "generate") as st:
            st.update(model=None, answered_by="not_covered")
            r = state.retrieval
            return not_covered(state.request.message, r.suggestions if r else [], links(r.chunks) if r else {})

    def _context(self, state: TurnState) -> Context:
        """Retrieved passages; or for CONVERSATIONAL the session's turns (read with the history) and the
        passages cited in them (recalled here when no earlier stage did, as on the state machine's path)."""
        if self._route(state).type is not QueryType.CONVERSATIONAL:
            ctx = Context(state.retrieval.chunks if state.retrieval else [])
            return self._corpus_context(state, ctx) if state.corpus is not None else ctx
        if state.memory is None:
            self.recall(state)
        return Context(state.memory or [], state.conversation)

    def _corpus_context(self, state: TurnState, ctx: Context) -> Context:
        """A corpus question's context: the named documents whole and first (then the other passages),
        and the `<corpus>` section. The budgets used go to the trace's `corpus` stage."""
        from assist.retrieve.corpus import extractive, section
        from assist.retrieve.documents import whole_document

        match = state.corpus
        assert match is not None
        try:
            corpus = self._corpus() if self._corpus is not None else None
        except Exception as exc:  # the retrieve stage read it; here (another process) it may fail: passages only
            log.warning("answer.corpus_failed", error=f"{type(exc).__name__}: {str(exc)[:200]}")
            corpus = None
        if corpus is None:
            state.degraded.append("corpus_unavailable")
            return ctx
        whole: list[Chunk] = []
        budget = self.settings.retrieve.document_chars
        for doc_id in match.documents:
            left = budget - sum(len(c.text) for c in whole)
            if left <= 0 and whole:
                break
            whole += whole_document(corpus.table, doc_id, max(left, 1), (match.found_by,) if match.found_by else ())
        named = set(match.documents)
        chunks = whole + [c for c in ctx.chunks if c.doc_id not in named]
        text = section(match, corpus)
        for st in state.stages:
            if st.get("name") == "corpus":
                st.update(
                    corpus_chars=len(text), document_chunks=len(whole), document_chars=sum(len(c.text) for c in whole)
                )
        lang = language(state.request.message)
        return Context(chunks, ctx.turns, text, extractive(match, corpus, lang), documents=len(whole))

    def _prompt(self, state: TurnState, ctx: Context) -> Prompt:
        """The prompt, built to fit the window the slot's call asks for (ADR 0079): what it leaves out goes to
        the trace (`generate.prompt.dropped`) and `context_trimmed`; `ctx.chunks` become the sources it numbers."""
        req, qtype = state.request, self._route(state).type
        material = Material(
            qtype,
            req.message,
            passages=ctx.chunks[ctx.documents :],
            documents=ctx.chunks[: ctx.documents],
            corpus=ctx.corpus,
            conversation=ctx.conversation if qtype is QueryType.CONVERSATIONAL else [],
            extra_context=req.extra_context if qtype is QueryType.PLATFORM else None,
            editor_content=req.editor_content if qtype is QueryType.CODE_GENERATION else None,
        )
        window = self._slots.window(self._route(state).model_slot, state.deadline)
        counter = token_counter(self.settings)
        prompt = fit(material, window, counter)
        ctx.chunks = prompt.chunks
        if prompt.dropped:
            state.degraded.append("context_trimmed")
            log.info("answer.context_trimmed", dropped=prompt.dropped, tokens=prompt.tokens, limit=window.limit())
        return prompt

    def _generated(
        self,
        state: TurnState,
        st: dict[str, Any],
        gen: Generation | LLMUnavailable | None,
        ctx: Context,
    ) -> str:
        """The answer text, from the model or — when every slot is down or too slow — without one."""
        route = self._route(state)
        lang = language(state.request.message)
        if missing := (gen.missing if isinstance(gen, Generation | LLMUnavailable) else []):
            state.degraded.append("model_missing")
            st["missing"] = missing  # the models a host said it does not have (`ollama pull` them)
        if isinstance(gen, Generation):
            state.degraded += gen.degraded
            route.model = gen.model
            st.update(model=gen.model, answered_by=gen.slot, model_ms=round(gen.model_ms, 2), usage=gen.usage)
            st["asked"] = gen.request
            if state.request.force_answer:
                st["forced"] = True
            said_not_covered, text = marker.split(gen.text)
            if said_not_covered:  # the model's own verdict (ADR 0083): uncertain, its explanation kept
                state.uncertain_reason = marker.MODEL_NOT_COVERED
                st["verdict"] = marker.MODEL_NOT_COVERED
            if gen.truncated:  # cut at num_predict: the reader is told, not handed half an answer as whole
                return f"{text}\n\n{phrase('truncated', lang)}"
            return text
        state.degraded.append(gen.reason if isinstance(gen, LLMUnavailable) else "llm_unavailable")
        # `answered_from` says what the answer quotes, so a client can say so (the web chat's notice)
        st.update(model=None, answered_by="extractive")
        if route.type is QueryType.PLATFORM:
            st.update(answered_from="account_data")
            return platform_facts(state.request.extra_context, lang)
        if route.type is QueryType.CONVERSATIONAL:
            st.update(answered_from="conversation")
            return conversation_recap(ctx.turns, lang)
        if ctx.corpus_answer is not None:
            st.update(answered_from="manifest")
            return ctx.corpus_answer
        st.update(answered_from="passages")
        index_down = bool({"index_unavailable", "index_timeout"} & set(state.degraded))
        return extractive_answer(ctx.chunks, index_down=index_down, lang=lang)

    def _finish(self, state: TurnState, text: str, chunks: list[Chunk], turn: Future[int] | None = None) -> Answer:
        req, route = state.request, self._route(state)
        sources = _sources(chunks)
        # A PLATFORM answer without a model quotes extra_context verbatim, which is never stored.
        without_model = {"llm_unavailable", "llm_timeout", "deadline"} & set(state.degraded)
        stored = NOT_STORED if route.type is QueryType.PLATFORM and without_model else text
        with stage(state.stages, "persist") as st:
            if turn is not None:
                state.turn = turn.result()
            elif not state.turn:  # the caller went away before it was taken
                state.turn = self._store.begin_turn(req.session_id, state.owner)
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
                history=state.history,
                retrieval_confidence=state.retrieval.confidence if state.retrieval else None,
                uncertain=state.uncertain_reason,
            )
            st.update(turn=state.turn, written=self._store.append_turn(turn))
        r = state.retrieval
        retrieval = (
            None
            if r is None
            else {
                "confidence": r.confidence,
                "query_kind": r.query_kind,
                "weights": r.weights,
                "n": len(r.chunks),
                "strategies": r.strategies,
                **({"note": r.note} if r.note else {}),
                **({"suggestions": r.suggestions} if r.suggestions else {}),
            }
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
            uncertain=state.uncertain_reason,
            ms=trace["total_ms"],
        )
        metrics.turn(route.type.value, route.layer, state.degraded, trace["total_ms"], metrics.tokens(state.stages))
        return Answer(
            answer=text,
            sources=sources,
            route=route,
            retrieval=retrieval,
            degraded=state.degraded,
            trace=trace,
            turn=state.turn,
            uncertain=bool(state.uncertain_reason),
            uncertain_reason=state.uncertain_reason,
        )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _sources(chunks: list[Chunk]) -> list[Source]:
    return [
        Source(id=c.id, doc_id=c.doc_id, title=c.title, heading=c.heading, score=c.score, url=c.url) for c in chunks
    ]


def _convert(item: dict[str, Any], keys: tuple[str, ...], typ: type) -> Any:
    """DynamoDB numbers arrive as Decimal; turns are ints, confidences floats."""
    plain = {k: (float(v) if isinstance(v, Decimal) else v) for k in keys if (v := item.get(k)) is not None}
    return msgspec.convert(plain, typ, strict=False)
