"""One turn in three stages — classify, retrieve (when the type needs it), answer — plus `ask` for all three
and `stream` for the two-phase streamed variant.

Each stage takes and returns a `TurnState`, so the same code runs in one process (the HTTP API, the CLI) or as
separate Step Functions tasks. The stage runner is this module; what the answer is built from is `context.py`, the
streamed answer `streaming.py`, the turn's record (store, trace, metrics) `recorder.py`, a session read back
`sessions.py` (ADR 0073).
"""

from __future__ import annotations

import contextvars
import time
import uuid
from collections.abc import AsyncGenerator, Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from concurrent.futures import TimeoutError as FutureTimeout
from functools import partial
from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from assist.answer.not_covered import links, nearest_topics, not_covered
from assist.ask.context import Context, answer_text, chat, prompt, with_corpus
from assist.ask.recorder import TurnRecorder
from assist.ask.sessions import Sessions
from assist.ask.streaming import Event, stream
from assist.contracts import (
    Answer,
    AskRequest,
    Confidence,
    Degraded,
    Exchange,
    QueryType,
    RetrievalResult,
    Route,
    Site,
    Stage,
    TurnState,
    check_ask,
)
from assist.deadline import after, sooner
from assist.language import foreign
from assist.logs import get_logger
from assist.query.rewrite import deterministic_rewrite, leans_on_history, llm_rewrite
from assist.query.translate import llm_translate
from assist.retrieve.analysis import analyze
from assist.retrieve.corpus import recognize
from assist.retrieve.verdict import Weights, judge
from assist.sessions.store import intent_entries
from assist.trace import stage

if TYPE_CHECKING:
    from assist.ask.parts import Parts
    from assist.retrieve.search import Retriever
    from assist.settings import Settings

log = get_logger(__name__)
MEMORY_SOURCES = 8


class Engine:
    def __init__(self, settings: Settings, parts: Parts) -> None:
        self.settings = settings
        self.parts = parts
        self.embedder = parts.embedder  # the classifier's and the retriever's, shared with the insights page
        # per turn: the message's embedding, the turn counter, the search; for a few turns at once
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="engine")
        self.recorder = TurnRecorder(parts.store, self._submit)
        self.sessions = Sessions(parts.store)
        #: a widget visitor's model calls: one call on its site key's daily budget, False when spent (the widget
        #: sets it where visitors are served; elsewhere a visitor's turn follows `Site.models` alone)
        self.meter: Callable[[str], bool] | None = None

    def manifest(self) -> list[Any] | None:
        """The corpus manifest's entries (ADR 0042); None when the index has none."""
        corpus = self.parts.corpus() if self.parts.corpus else None
        return corpus.entries if corpus is not None else None

    def warm(self) -> None:
        """Load the embedder, the classifier model and the index (and, when configured, both model
        slots) now rather than on the first question."""
        self.parts.cascade().warm()
        self.parts.retriever()
        if self.settings.ollama.warm_up:
            self.parts.slots().warm_up()

    def retriever(self) -> Retriever:
        """The index, opened on first use (a search or a lookup outside a turn: the MCP tools)."""
        return self.parts.retriever()

    # -- the stages ----------------------------------------------------------------
    def start(
        self, req: AskRequest, owner: str = "anonymous", deadline: float | None = None, site: Site | None = None
    ) -> TurnState:
        """`deadline` (epoch seconds): the request's, when it was set upstream; else API_DEADLINE_S from now.
        `site`: a widget visitor's question (its key and page; no model call at all past the key's budget)."""
        check_ask(req, self.settings)
        now = time.time()
        deadline = deadline if deadline is not None else now + self.settings.api.deadline_s
        return TurnState(
            request=req, request_id=uuid.uuid4().hex, started_at=now, owner=owner, deadline=deadline, site=site
        )

    def classify(self, state: TurnState, take_turn: bool = True) -> TurnState:
        """History and type. `take_turn=False` leaves the turn number to the answer stage, which takes
        it while the model answers (one process); a state that travels to another process takes it here."""
        req, store, cascade = state.request, self.parts.store(), self.parts.cascade()
        ahead = cascade.ahead(req.message, req.query_type)
        embedding = self._submit(ahead) if ahead is not None else None  # computed while the session is read
        with stage(state.stages, "history") as st:
            recent = store.recent(req.session_id, state.owner)  # one read: history, memory, owner
            state.history = intent_entries(recent)
            st.entries = len(state.history)
        turn = self._submit(store.begin_turn, req.session_id, state.owner) if take_turn else None
        with stage(state.stages, "classify") as st:
            if embedding is not None:
                wait([embedding])  # a failure is classify's to meet and report, as without the head start
            may_call = partial(self.model_call, state)  # asked (and counted) only if the LLM layer would run
            state.route = cascade.classify(req.message, state.history, declared=req.query_type, llm=may_call)
            st.type, st.layer, st.confidence = state.route.type, state.route.layer, state.route.confidence
        if state.route.type is QueryType.CONVERSATIONAL:
            state.conversation = [Exchange(r.message, r.answer, list(r.sources)) for r in recent]
        if turn is not None:
            state.turn = turn.result()
        if state.route.type.needs_retrieval:
            self._search_query(state)
        return state

    def _search_query(self, state: TurnState) -> None:
        """What the search looks for: the message, rewritten when it leans on the history, and translated when
        it is in another language than the index (only with a configured LLM, and no site key's budget spent)."""
        route, message = _route(state), state.request.message
        route.retrieval_query = message
        if leans_on_history(message, state.history):
            with stage(state.stages, "rewrite") as st:
                rewritten = None
                if self.model_call(state):
                    rewritten = llm_rewrite(self.parts.slots(), message, state.history, self._light_deadline(state))
                st.by = "llm" if rewritten else "history"
                route.retrieval_query = rewritten or deterministic_rewrite(message, state.history)
                st.query = route.retrieval_query
        lang = foreign(route.retrieval_query, self.settings.index.language)
        if lang is None or not self.settings.ollama.host_explicit or not self.model_call(state):
            return
        with stage(state.stages, "translate") as st:
            to, deadline = self.settings.index.language, self._light_deadline(state)
            route.lexical_query = llm_translate(self.parts.slots(), route.retrieval_query, to, deadline)
            st.source_language, st.to, st.by = lang, to, "llm" if route.lexical_query else "none"
            st.query = route.lexical_query or UNSET

    def model_call(self, state: TurnState) -> bool:
        """May this turn ask a model now? Counted as one call on a widget key's daily budget (ADR 0092); past it,
        no stage of the turn asks any model (`TurnState.budget_spent`)."""
        if state.budget_spent:
            return False
        if state.site is None or self.meter is None or self.meter(state.site.key):
            return True
        state.site.models = False
        return False

    def _light_deadline(self, state: TurnState) -> float | None:
        """A search-query call (rewrite, translate) waits at most the LLM classifier's budget, and never past the
        turn's deadline: the answer still needs the rest."""
        return sooner(state.deadline, after(self.settings.classifier.llm_timeout_s))

    def retrieve(self, state: TurnState) -> TurnState:
        route = _route(state)
        with stage(state.stages, "retrieve") as st:
            query = route.retrieval_query or state.request.message
            search = self._submit(self._search, query, route.lexical_query)
            try:
                result = search.result(timeout=self.settings.retrieve.timeout_s)
            except FutureTimeout:  # a slow index (S3 latency): the answer goes on without passages, and says so
                log.warning("retrieve.timeout", budget_s=self.settings.retrieve.timeout_s)
                result = RetrievalResult(chunks=[], confidence=Confidence.NONE, degraded=[Degraded.INDEX_TIMEOUT])
            state.retrieval = result
            state.degraded += result.degraded
            st.n, st.confidence, st.query_kind = len(result.chunks), result.confidence, result.query_kind
            st.strategies = result.strategies
        if route.type is QueryType.RETRIEVAL:  # "write code that lists all files" is not about the corpus
            self._recognize(state, state.request.message)
            if state.corpus is None:
                self._judge(state, query, route.lexical_query, st)
        return state

    def _judge(self, state: TurnState, query: str, translated: str | None, st: Stage) -> None:
        """Does the documentation cover the question (ADR 0055)? Uncertain: the answer says it does not,
        with the nearest topics (`retrieval.suggestions`), and no model is asked. An index that could not
        be searched says nothing about the documentation: no verdict then. The verdict and its signals go
        to the retrieve stage's `verdict` (a few microseconds: no stage of its own)."""
        result = state.retrieval
        if result is None or any(d.without_index for d in result.degraded):
            return
        readable = translated is not None or foreign(query, self.settings.index.language) is None
        weights = Weights.from_settings(self.settings)
        verdict = judge(translated or query, result, weights, readable, self.parts.retriever().unknown)
        st.verdict = verdict.detail()
        if verdict.uncertain and state.request.force_answer:  # asked anyway: the model answers, the trace says so
            st.verdict.forced = True
        elif verdict.uncertain:
            state.uncertain_reason = verdict.reason
            result.suggestions = nearest_topics(result.chunks, result.suggestions)

    def _recognize(self, state: TurnState, question: str) -> None:
        """Is this a question about the corpus itself? Ids travel on (`state.corpus`), the answer stage
        renders the entries and fetches the documents. A `corpus` stage appears only when it is."""
        if self.parts.corpus is None:
            return
        start = time.perf_counter()
        try:
            match = recognize(question, self.parts.corpus, self.settings.retrieve.corpus_chars)
        except Exception as exc:  # a manifest that cannot be read: an ordinary question, and the log says why
            log.warning("retrieve.corpus_failed", error=f"{type(exc).__name__}: {str(exc)[:200]}")
            return
        if match is None:
            return
        state.corpus = match
        state.stages.append(
            Stage(
                name="corpus",
                ms=round((time.perf_counter() - start) * 1000, 2),
                kind=match.kind,
                subject=match.subject,
                matched=match.matched,
                entries=len(match.entries),
                documents=match.documents,
                found_by=match.found_by or UNSET,
                missing=match.missing or UNSET,
            )
        )

    def _submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """Run in the engine's pool with this request's log context (request id, function)."""
        return self._pool.submit(contextvars.copy_context().run, fn, *args)

    def _search(self, query: str, translated: str | None = None) -> RetrievalResult:
        """`translated`: the query in the index's language (`translate` stage). The full-text side searches
        it; so does the vector side when the embedder is the English-only local one (ADR 0038 measures
        both), while a multilingual embedder gets the question as asked."""
        k = self.settings.retrieve.top_k
        try:
            if translated is None:
                return self.parts.retriever().search(query, k=k)
            if self.settings.embed.embedder == "minilm":
                query = translated
            return self.parts.retriever().search(query, k=k, analysis=analyze(translated))
        except Exception as exc:  # any index failure (S3 down, corrupt data): answer without passages, say so
            log.warning("retrieve.failed", error=f"{type(exc).__name__}: {str(exc)[:200]}")
            return RetrievalResult(chunks=[], confidence=Confidence.NONE, degraded=[Degraded.INDEX_UNAVAILABLE])

    def prepare(
        self, req: AskRequest, owner: str = "anonymous", deadline: float | None = None, site: Site | None = None
    ) -> TurnState:
        """Phase 1: everything up to the model — classify, then retrieve or recall as the type needs."""
        state = self.classify(self.start(req, owner, deadline, site), take_turn=False)
        if _route(state).type.needs_retrieval:
            state = self.retrieve(state)
        elif _route(state).type is QueryType.CONVERSATIONAL:
            state = self.recall(state)
        return state

    def recall(self, state: TurnState) -> TurnState:
        """The passages cited earlier in the session (a cumulative source map: a lookup by id, not a search)."""
        with stage(state.stages, "memory") as st:
            cited = list(dict.fromkeys(i for t in state.conversation for i in t.sources))[-MEMORY_SOURCES:]
            state.memory = self.parts.retriever().fetch(cited) if cited else []
            st.turns, st.sources = len(state.conversation), len(state.memory)
        return state

    def ask(self, req: AskRequest, owner: str = "anonymous") -> Answer:
        return self.answer(self.prepare(req, owner))

    def answer(self, state: TurnState) -> Answer:
        ctx = self.context(state)
        turn = self.recorder.take(state)
        if state.uncertain_reason:
            return self.recorder.finish(state, self.not_covered(state), [], turn)
        slot = _route(state).model_slot
        # past a site key's budget the model host is asked nothing, not even the window a prompt is built for
        fitted = prompt(state, ctx, self.parts.slots(), self.settings) if self.model_call(state) else None
        with stage(state.stages, "generate", slot=slot) as st:
            text = answer_text(state, st, chat(state, st, self.parts.slots(), fitted), ctx)
        return self.recorder.finish(state, text, ctx.chunks, turn)

    def stream(self, state: TurnState) -> AsyncGenerator[Event, None]:
        """Phase 2 of a prepared turn, streamed: `streaming.py`."""
        return stream(self, state)

    def not_covered(self, state: TurnState) -> str:
        """The fixed answer of a question the documentation does not cover (ADR 0055): no model is asked."""
        with stage(state.stages, "generate") as st:
            st.model, st.answered_by = None, "not_covered"
            r = state.retrieval
            return not_covered(state.request.message, r.suggestions if r else [], links(r.chunks) if r else {})

    def context(self, state: TurnState) -> Context:
        """Retrieved passages; or for CONVERSATIONAL the session's turns (read with the history) and the
        passages cited in them (recalled here when no earlier stage did, as on the state machine's path)."""
        if _route(state).type is not QueryType.CONVERSATIONAL:
            ctx = Context(state.retrieval.chunks if state.retrieval else [])
            return with_corpus(state, ctx, self.parts.corpus, self.settings) if state.corpus is not None else ctx
        if state.memory is None:
            self.recall(state)
        return Context(state.memory or [], state.conversation)


def _route(state: TurnState) -> Route:
    assert state.route is not None, "classify runs before this stage"
    return state.route
