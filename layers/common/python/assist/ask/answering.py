"""The answer stage as one generator of typed events (ADR 0105): the `route` event at once, then the model's
`thinking` and `token`s, then `done` with the written turn's `Answer`. The stream renders each as it comes;
`Engine.answer` drains it and keeps the answer, so both run the same steps.

Streamed, the model is requested before the route event is yielded, so its request overlaps the route's delivery
(ADR 0037); drained, the model's whole reply is read at once (a slot that fails is followed by the next, whenever
it fails). If the consumer goes away mid-stream, the model stream is closed and the turn is still written, with what
was generated so far and `client_disconnected`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from msgspec.structs import asdict

from assist.answer.marker import MarkerFilter
from assist.answer.not_covered import fixed_answer, near_misses
from assist.answer.phrases import language, phrase
from assist.answer.prefetch import Prefetched
from assist.ask.context import answer_text, budget_spent, fit_to_model_window, traced
from assist.ask.recorder import TurnRecorder, sources_of
from assist.contracts import (
    Answer,
    AnswerEvent,
    Chunk,
    Degraded,
    DoneEvent,
    GenerateStage,
    PassageSource,
    RouteEvent,
    Slot,
    Source,
    ThinkingEvent,
    TokenEvent,
    TurnState,
)
from assist.llm.charge import Charge, charging
from assist.llm.slots import Generation, LLMUnavailable, Thought
from assist.logs import get_logger
from assist.query.first_turn import without_account_data
from assist.trace import stage

if TYPE_CHECKING:
    from assist.answer.budget import Prompt
    from assist.ask.context import Context
    from assist.llm.slots import ModelSlots
    from assist.settings import Settings

log = get_logger(__name__)
Events = AsyncGenerator[AnswerEvent, None]
Model = AsyncIterator[str | Thought | Generation]


@dataclass(frozen=True)
class Answering:
    """What the answer stage works with: the turn's context, the recorder, the model slots, whether the turn may ask
    a model now (`prepay`: its first call counted on a widget key's daily budget before the prompt is fitted), and
    what each of its model calls is charged to (`charge`, ADR 0115)."""

    context: Callable[[TurnState], Context]
    recorder: TurnRecorder
    slots: Callable[[], ModelSlots]
    prepay: Callable[[TurnState], bool]
    charge: Callable[[TurnState], Charge | None]
    settings: Settings

    async def events(self, state: TurnState, streamed: bool = True) -> Events:
        """The stage's events for a prepared turn; `streamed=False` reads the model's reply whole."""
        assert state.route is not None, "classify runs before the answer stage"
        route = state.route
        ctx = self.context(state)  # `prepare` retrieved or recalled; a named document is read here, whole
        if state.uncertain_reason:  # no model: the fixed answer, written first (a reader leaving loses nothing)
            text, near = account_note(state) + fixed_answer(state), near_misses(state)
            turn = self.recorder.take(state)
            answer = await self._finish(streamed, state, text, [], turn, near)
            sources = with_passages(sources_of(near, near_miss=True), near)  # what the docs hold nearest (ADR 0102)
            yield RouteEvent(route, sources, list(state.degraded), True, state.uncertain_reason)
            yield TokenEvent(text)
            yield DoneEvent(answer, usage={})
            return
        slots = self.slots()
        # the sources the model will see; past a site key's budget the model host is asked nothing, not even its window
        fitted = fit_to_model_window(state, ctx, slots, self.settings) if self.prepay(state) else None
        # streamed, requested now and read after the route event: the request travels while the route goes out
        model = _model(state, slots, fitted, streamed, self.charge(state))
        sources = with_passages(sources_of(ctx.chunks), ctx.chunks)
        first = RouteEvent(route, sources, list(state.degraded), False, None)
        # the model's thinking is shown apart, only when asked for
        async for event in self._generate(state, ctx, model, fitted, slots.thinks(route.model_slot), first, streamed):
            yield event

    async def _generate(
        self,
        state: TurnState,
        ctx: Context,
        model: Model,
        fitted: Prompt | None,
        thinking: bool,
        route_event: RouteEvent,
        streamed: bool,
    ) -> Events:
        """The route event, the model's tokens as they come, then `done` once the turn is written; a consumer gone
        at any point still gets the turn written (`finally`)."""
        turn = None
        note = account_note(state)
        parts: list[str] = [note] if note else []
        gen: Generation | LLMUnavailable | None = None
        written = False
        try:
            yield route_event
            if note:
                yield TokenEvent(note)
            turn = self.recorder.take(state)  # after the route event, while the model starts: needed only to write
            with stage(state, GenerateStage(slot=route_event.route.model_slot, skipped=fitted is None)) as st:
                if fitted is not None:
                    traced(st, fitted)
                shown = MarkerFilter()  # the model's "not covered" marker never reaches the reader, even in pieces
                try:
                    async for item in model:
                        if isinstance(item, Generation):
                            gen = item
                        elif isinstance(item, Thought):
                            if thinking:
                                yield ThinkingEvent(item.text)
                        elif piece := shown.feed(item):
                            parts.append(piece)
                            yield TokenEvent(piece)
                except LLMUnavailable as exc:
                    gen = exc
                if rest := shown.close():
                    parts.append(rest)
                    yield TokenEvent(rest)
                text = note + answer_text(state, st, gen, ctx)
            if isinstance(gen, LLMUnavailable):
                yield TokenEvent(text[len(note) :])
            elif len(text) > len(said := "".join(parts)):  # a whole reply; or the note of an answer cut at its limit
                yield TokenEvent(text[len(said) :])
            written = True  # from here the turn is written here (or fails loudly), never a second time below
            answer = await self._finish(streamed, state, text, ctx.chunks, turn)
            yield DoneEvent(answer, usage=st.usage)
        finally:
            if not written:
                state.degraded.append(Degraded.CLIENT_DISCONNECTED)
                log.info("answer.stream_cancelled", session_id=state.request.session_id, tokens=len(parts))
                with anyio.CancelScope(shield=True):
                    await model.aclose()  # type: ignore[attr-defined]
                    await self._finish(streamed, state, "".join(parts), ctx.chunks, turn)

    async def _finish(self, streamed: bool, *turn: Any) -> Answer:
        """The turn written (`TurnRecorder.finish`). Streamed, in a worker thread: the loop goes on serving other
        readers while the store is written. Drained, here: that loop is the call's own (`Engine.answer`), and a
        thread would load anyio's asyncio backend, 27 ms of the answer function's cold start."""
        if streamed:
            return await anyio.to_thread.run_sync(self.recorder.finish, *turn)
        return self.recorder.finish(*turn)


def account_note(state: TurnState) -> str:
    """What an answer says first when it came as PLATFORM without account data (`query/first_turn.py`): that
    it has none, so it answers from the documentation only."""
    assert state.route is not None
    if not without_account_data(state.route):
        return ""
    return phrase("without_account_data", language(state.request.message)) + "\n\n"


async def drained(events: Events) -> Answer:
    """The answer of the `done` event, every event before it read (and dropped)."""
    answer = None
    async for event in events:
        if isinstance(event, DoneEvent):
            answer = event.answer
    assert answer is not None, "the answer stage ends with its done event"
    return answer


def with_passages(sources: list[Source], chunks: Sequence[Chunk]) -> list[PassageSource]:
    """Each source with its passage, so a reader (the web chat) can see what the answer is built from."""
    return [PassageSource(**asdict(s), passage=c.text) for s, c in zip(sources, chunks, strict=True)]


def _model(state: TurnState, slots: ModelSlots, fitted: Prompt | None, streamed: bool, charge: Charge | None) -> Model:
    """The model's reply as the generator reads it: streamed (prefetched), whole, or none past a key's budget. Its
    calls are charged to `charge`, the first one already paid (`prepay`)."""
    assert state.route is not None
    if fitted is None:
        return _no_model()
    if streamed:
        with charging(charge, paid=1):  # the task that makes the calls counts them on the turn's budget
            return Prefetched(slots.stream(state.route.model_slot, fitted.messages, deadline=state.deadline))
    return _whole(slots, state.route.model_slot, fitted.messages, state.deadline, charge)


async def _whole(
    slots: ModelSlots, slot: Slot, messages: list[dict[str, str]], deadline: float | None, charge: Charge | None
) -> Model:
    """The model's whole reply, as one item: the drained answer runs in a loop of its own, so the call may block."""
    with charging(charge, paid=1):  # set and reset within this step: the context is never held across a yield
        reply = slots.chat(slot, messages, deadline=deadline)
    yield reply


async def _no_model() -> Model:
    """The model stream of a turn past its site key's budget: it ends before any call, as an unavailable model's."""
    raise budget_spent()
    yield  # makes this an async generator
