"""One turn in three stages — classify, retrieve (when the type needs it), answer — plus `ask` for all three
and `events` for the answer stage's typed events, which the stream renders and `answer` drains (ADR 0105).

Each stage takes and returns a `TurnState`, so the same code runs in one process (the HTTP API, the CLI) or as
separate Step Functions tasks. This module runs the stages, whose rules live in their packages (ADR 0098); what the
answer is built from is `context.py`, the answer stage's events `answering.py`, the turn's record (store, trace,
metrics) `recorder.py`, a session read back `sessions.py` (ADR 0073).

Outside `ask/` an engine is used through its methods and its `settings`; its parts are its own.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from concurrent.futures import TimeoutError as FutureTimeout
from functools import partial
from typing import TYPE_CHECKING, Any

from assist import contracts
from assist.ask.answering import Answering, Events, drained
from assist.ask.context import Context, context_for
from assist.ask.recorder import TurnRecorder
from assist.ask.sessions import Sessions
from assist.contracts import (
    Answer,
    AskRequest,
    Degraded,
    Feedback,
    FeedbackRequest,
    QueryType,
    RetrievalResult,
    Route,
    Scope,
    Site,
    Transcript,
    TurnState,
    check_ask,
)
from assist.deadline import PERSIST_RESERVE_S, left
from assist.embed.build import lazy_embedder
from assist.llm.charge import Charge, charging
from assist.logs import get_logger
from assist.query.first_turn import first_turn_route, readable, unanchored
from assist.query.recall import RecallBank
from assist.query.search_query import resolve_search_query
from assist.retrieve.corpus import recognize_turn
from assist.retrieve.elsewhere import look_elsewhere
from assist.retrieve.verdict import judge_turn
from assist.sessions.store import exchanges, intent_entries, remembered_scope
from assist.trace import stage

if TYPE_CHECKING:
    from assist.ask.parts import Parts
    from assist.embed.base import Embedder
    from assist.retrieve.corpus import Corpus
    from assist.retrieve.search import Retriever
    from assist.sessions.store import Store
    from assist.settings import Settings
    from assist.widget.gate import Gate

log = get_logger(__name__)
MEMORY_SOURCES = 8


class Engine:
    def __init__(self, settings: Settings, parts: Parts) -> None:
        self.settings = settings
        self._parts = parts
        # per turn: the message's embedding, the turn counter, the search; for a few turns at once
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="engine")
        # set once the index is open: until then a search also copies or opens it (its cold budget)
        self._index_open = threading.Event()
        self._opening: Future[None] | None = None
        self._opening_lock = threading.Lock()
        self._recorder = TurnRecorder(parts.store, self._submit)
        self._sessions = Sessions(parts.store)
        self._answering = Answering(self.context, self._recorder, parts.slots, self.prepay, self.charge, settings)
        self._recall = RecallBank(self.embedder)

    # -- what the ways in read besides a turn -----------------------------------------
    def transcript(self, session_id: str, owner: str) -> Transcript:
        """The session as its owner reads it back (`sessions.py`)."""
        return self._sessions.transcript(session_id, owner)

    def feedback(self, session_id: str, owner: str, turn: int, req: FeedbackRequest) -> Feedback:
        """A person's verdict on one of their turns, recorded (or replaced)."""
        return self._sessions.feedback(session_id, owner, turn, req)

    def gate(self) -> Gate:
        """The widget's gate (site keys, visitors' limits, each key's daily model budget): the one this engine
        meters a visitor's model calls with, for the widget's routes to guard visitors with (one cache of keys)."""
        if self._parts.gate is None:
            raise RuntimeError("this engine was built without a widget gate (build_parts gives one)")
        return self._parts.gate()

    def store(self) -> Store:
        """The session store (the one SESSION_STORE names), opened on first use: the insights page reads it."""
        return self._parts.store()

    def embedder(self) -> Embedder:
        """The classifier's and the retriever's embedder, loaded on first use (the insights page, the doctor)."""
        return (self._parts.embedder or lazy_embedder(self.settings))()

    def manifest(self) -> list[Any] | None:
        """The corpus manifest's entries (ADR 0042); None when the index has none."""
        corpus = self._parts.corpus() if self._parts.corpus else None
        return corpus.entries if corpus is not None else None

    def warm(self) -> None:
        """Load the embedder, the classifier model and the index (and, when configured, both model
        slots) now rather than on the first question."""
        self._parts.cascade().warm()
        self._open_index()  # open: the next search has the warm budget
        if self.settings.ollama.warm_up:
            self._parts.slots().warm_up()

    def retriever(self) -> Retriever:
        """The index, opened on first use (a search or a lookup outside a turn: the MCP tools)."""
        return self._parts.retriever()

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
        req, store, cascade = state.request, self._parts.store(), self._parts.cascade()
        ahead = cascade.ahead(req.message, req.query_type)
        embedding = self._submit(ahead) if ahead is not None else None  # computed while the session is read
        with stage(state, contracts.HistoryStage()) as st:
            recent = store.recent(req.session_id, state.owner)  # one read: history, memory, owner
            state.history = intent_entries(recent)
            # a widget visitor's is its site key's (ADR 0121); a turn sent without one keeps its session's
            state.scope = (state.site.scope if state.site else req.scope) or remembered_scope(recent)
            st.entries = len(state.history)
        turn = self._submit(store.begin_turn, req.session_id, state.owner) if take_turn else None
        charge = self.charge(state)
        with stage(state, contracts.ClassifyStage()) as st, charging(charge):
            if embedding is not None:
                wait([embedding])  # a failure is classify's to meet and report, as without the head start
            may_call = partial(self.model_call, state)  # asked only if the LLM layer would run
            state.route = cascade.classify(req.message, state.history, declared=req.query_type, llm=may_call)
            st.type, st.layer, st.confidence = state.route.type, state.route.layer, state.route.confidence
        unmoored = unanchored(state.route, state.history, req.extra_context)
        if state.route.type.needs_retrieval or unmoored:
            with charging(charge):
                resolve_search_query(state, self._parts.slots, self.settings, may_call)
        if unmoored:
            self._judge_unanchored(state)
        if state.route.type is QueryType.CONVERSATIONAL:
            state.conversation = exchanges(recent)
        if turn is not None:
            state.turn = turn.result()
        return state

    def _judge_unanchored(self, state: TurnState) -> None:
        """A turn with nothing to answer from is searched and judged as RETRIEVAL (`query/first_turn.py`)."""
        route = _route(state)
        text = readable(route, state.request.message, self.settings)
        state.route = first_turn_route(route, text, self._recall.refers_to_conversation, self.settings)
        if state.route is not route:
            log.info("classify.judged_as_retrieval", routed=route.type.value, layer=route.layer)

    def model_call(self, state: TurnState) -> bool:
        """May this turn still ask a model? False once a call found a widget key's daily budget spent: no later
        stage asks any (`TurnState.budget_spent`, ADR 0092). The calls are counted where they are made (`charge`)."""
        return not state.budget_spent

    def charge(self, state: TurnState) -> Charge | None:
        """What each model call of the turn is counted on (`assist.llm.charge`, ADR 0115): a widget visitor's key's
        daily budget through the widget's gate (`Gate.spend`); its first refusal ends the turn's model calls. None:
        nothing to count."""
        site = state.site
        if site is None or self._parts.gate is None:
            return None
        meter = self._parts.gate().spend

        def spend() -> bool:
            site.models = site.models and meter(site.key)
            return site.models

        return spend

    def prepay(self, state: TurnState) -> bool:
        """May the turn's answer ask a model? Its first call is counted now, before its prompt is fitted to the
        model's window: past the budget the host is asked nothing, not even that window. The call then draws on it
        (`charging(..., paid=1)`)."""
        charge = self.charge(state)
        return self.model_call(state) and (charge is None or charge())

    def retrieve(self, state: TurnState) -> TurnState:
        """The retrieve stage: the routed turn searched within its budget (a cold index gets the longer one), the
        verdict on what was found, or, for a CONVERSATIONAL turn, the passages its session cited. Never raises
        for a slow or failing index: the result is empty and `degraded` says why."""
        route = _route(state)
        with stage(state, contracts.RetrieveStage()) as st:
            query = route.retrieval_query or state.request.message
            cold = not self._index_open.is_set()
            budget = self._search_budget(state, cold)
            search = self._submit(self._search, query, route.lexical_query, state.scope)
            try:
                result = search.result(timeout=budget)
            except FutureTimeout:  # a slow index (S3 latency): the answer goes on without passages, and says so
                log.warning("retrieve.timeout", budget_s=round(budget, 2), loading=cold)
                result = RetrievalResult.failed(Degraded.INDEX_LOADING if cold else Degraded.INDEX_TIMEOUT)
            state.retrieval = result
            state.degraded += result.degraded
            st.n, st.confidence, st.query_kind = len(result.chunks), result.confidence, result.query_kind
            st.strategies = result.strategies
        if route.type is QueryType.RETRIEVAL:  # "write code that lists all files" is not about the corpus
            recognize_turn(state, self._corpus(state), self.settings.retrieve.corpus_chars)
            if state.corpus is None:
                judge_turn(state, query, route.lexical_query, st, self._parts.retriever, self.settings)
                look_elsewhere(state, query, route.lexical_query, self._parts.retriever, self.settings)
        return state

    def _search_budget(self, state: TurnState, cold: bool) -> float:
        """RETRIEVE_TIMEOUT_S; the first search, which also copies or opens the index, RETRIEVE_COLD_TIMEOUT_S
        as far as the request's deadline allows (never less than a warm search's)."""
        warm = self.settings.retrieve.timeout_s
        if not cold:
            return warm
        return max(warm, min(self.settings.retrieve.cold_timeout_s, left(state.deadline) - PERSIST_RESERVE_S))

    def _open_index_ahead(self) -> None:
        """A process's first turn opens the index (imports LanceDB, copies or connects) beside its classification,
        not after it: on a busy machine that is most of a first search's time. Once, in the processes that run
        whole turns (the classify function never opens the index); a failure is the search's to meet and name."""
        if self._index_open.is_set():
            return
        with self._opening_lock:
            if self._opening is None:
                self._opening = self._submit(self._open_index)

    def _open_index(self) -> None:
        self._parts.retriever()
        self._index_open.set()

    def close(self) -> None:
        """Let the turns' work in flight end before the process does: a search still opening the index would
        otherwise meet the interpreter's shutdown (its copy's thread pool refuses new work then)."""
        self._pool.shutdown(wait=True)

    def _submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """Run in the engine's pool with this request's log context (request id, function)."""
        return self._pool.submit(contextvars.copy_context().run, fn, *args)

    def _search(self, query: str, translated: str | None = None, scope: Scope | None = None) -> RetrievalResult:
        """`translated`: the query in the index's language (`translate` stage); the search picks which side reads it.
        `scope`: the turn's (ADR 0121), searched inside."""
        try:
            top_k = self.settings.retrieve.top_k
            result = self._parts.retriever().search(query, k=top_k, translated=translated, scope=scope)
            self._index_open.set()
            return result
        except Exception as exc:  # any index failure (S3 down, corrupt data): answer without passages, say so
            log.warning("retrieve.failed", error=f"{type(exc).__name__}: {str(exc)[:200]}")
            return RetrievalResult.failed(Degraded.INDEX_UNAVAILABLE)

    def prepare(
        self, req: AskRequest, owner: str = "anonymous", deadline: float | None = None, site: Site | None = None
    ) -> TurnState:
        """Phase 1: everything up to the model — classify, then retrieve or recall as the type needs."""
        self._open_index_ahead()
        state = self.classify(self.start(req, owner, deadline, site), take_turn=False)
        if _route(state).type.needs_retrieval:
            state = self.retrieve(state)
        elif _route(state).type is QueryType.CONVERSATIONAL:
            state = self.recall(state)
        return state

    def recall(self, state: TurnState) -> TurnState:
        """The passages cited earlier in the session (a cumulative source map: a lookup by id, not a search)."""
        with stage(state, contracts.MemoryStage()) as st:
            cited = list(dict.fromkeys(i for t in state.conversation for i in t.sources))[-MEMORY_SOURCES:]
            state.memory = self._parts.retriever().fetch(cited, state.scope) if cited else []
            st.turns, st.sources = len(state.conversation), len(state.memory)
        return state

    def ask(self, req: AskRequest, owner: str = "anonymous") -> Answer:
        """One turn in this process: prepared (classified, searched where routed) and answered whole."""
        return self.answer(self.prepare(req, owner))

    def answer(self, state: TurnState) -> Answer:
        """The answer stage, whole: its events (`answering.py`) read to the end in a loop of this call's own (asyncio's
        own runner: anyio's would load its asyncio backend, 27 ms of the answer function's cold start)."""
        return asyncio.run(drained(self._answering.events(state, streamed=False)))

    def events(self, state: TurnState) -> Events:
        """Phase 2 of a prepared turn, streamed: the answer stage's events as the model writes (`answering.py`)."""
        return self._answering.events(state)

    def context(self, state: TurnState) -> Context:
        """What the answer is built from (`context.py`), the cited passages recalled if no stage did."""
        return context_for(state, self._corpus(state), self.settings, self.recall)

    def _corpus(self, state: TurnState) -> Callable[[], Corpus | None] | None:
        """The corpus manifest as the turn's scope sees it (ADR 0121); None when the index has none."""
        corpus = self._parts.corpus
        if corpus is None or not state.scope:
            return corpus
        return lambda: c.within(state.scope) if (c := corpus()) is not None else None


def _route(state: TurnState) -> Route:
    assert state.route is not None, "classify runs before this stage"
    return state.route
