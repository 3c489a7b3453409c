"""Phase 2 of a prepared turn, streamed (`POST /v1/ask/stream`): the `route` event at once, then `token`s, then
`done`.

The model is requested before the route event is yielded, so its request overlaps the route's delivery
(ADR 0037). If the consumer goes away mid-stream, the model stream is closed and the turn is still written,
with what was generated so far and `client_disconnected`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from assist.answer.marker import MarkerFilter
from assist.answer.not_covered import fixed_answer, near_misses
from assist.answer.prefetch import Prefetched
from assist.ask.context import answer_text, budget_spent, fit_to_model_window, traced
from assist.ask.recorder import sources_of
from assist.contracts import Chunk, Degraded, GenerateStage, Source, TurnState
from assist.llm.charge import charging
from assist.llm.slots import Generation, LLMUnavailable, Thought
from assist.logs import get_logger
from assist.trace import stage

if TYPE_CHECKING:
    from assist.answer.budget import Prompt
    from assist.ask.context import Context
    from assist.ask.engine import Engine

log = get_logger(__name__)
Event = tuple[str, dict[str, Any]]


async def stream(engine: Engine, state: TurnState) -> AsyncGenerator[Event, None]:
    assert state.route is not None, "prepare runs before the stream"
    route = state.route
    ctx = engine.context(state)  # `prepare` retrieved or recalled; a named document is read here, whole
    uncertain = {"uncertain": bool(state.uncertain_reason), "uncertain_reason": state.uncertain_reason}
    if state.uncertain_reason:  # no model: the fixed answer, written first (a reader leaving loses nothing)
        text, near = fixed_answer(state), near_misses(state)
        turn = engine.recorder.take(state)
        answer = await anyio.to_thread.run_sync(engine.recorder.finish, state, text, [], turn, near)
        sources = _with_passages(sources_of(near, near_miss=True), near)  # what the docs hold nearest (ADR 0102)
        yield "route", {**msgspec.to_builtins(route), "sources": sources, "degraded": list(state.degraded), **uncertain}
        yield "token", {"text": text}
        yield "done", {**msgspec.to_builtins(answer), "usage": {}}
        return
    slots = engine.parts.slots()
    # the sources the model will see; past a site key's budget the model host is asked nothing, not even its window
    fitted = fit_to_model_window(state, ctx, slots, engine.settings) if engine.prepay(state) else None
    # requested now, read after the route event: the request travels while the route goes out
    calls = _no_model() if fitted is None else slots.stream(route.model_slot, fitted.messages, deadline=state.deadline)
    with charging(engine.charge(state), paid=1):  # the task that makes the calls counts them on the turn's budget
        model = Prefetched(calls)
    sources = _with_passages(sources_of(ctx.chunks), ctx.chunks)
    first = {**msgspec.to_builtins(route), "sources": sources, "degraded": list(state.degraded)} | uncertain
    # the model's thinking is shown apart, only when asked for
    async for event in _generate(engine, state, ctx, model, fitted, slots.thinks(route.model_slot), ("route", first)):
        yield event


async def _generate(
    engine: Engine,
    state: TurnState,
    ctx: Context,
    model: Prefetched,
    fitted: Prompt | None,
    thinking: bool,
    route_event: Event,
) -> AsyncGenerator[Event, None]:
    """The route event, the model's tokens as they come, then `done` once the turn is written; a consumer gone at
    any point still gets the turn written (`finally`)."""
    turn = None
    parts: list[str] = []
    gen: Generation | LLMUnavailable | None = None
    written = False
    try:
        yield route_event
        turn = engine.recorder.take(state)  # after the route event, while the model starts: needed only to write
        assert state.route is not None
        with stage(state, GenerateStage(slot=state.route.model_slot, skipped=fitted is None)) as st:
            if fitted is not None:
                traced(st, fitted)
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
            text = answer_text(state, st, gen, ctx)
        if isinstance(gen, LLMUnavailable):
            yield "token", {"text": text}
        elif len(text) > len(said := "".join(parts)):  # the note of an answer cut at its output limit
            yield "token", {"text": text[len(said) :]}
        written = True  # from here the turn is written here (or fails loudly), never a second time below
        answer = await anyio.to_thread.run_sync(engine.recorder.finish, state, text, ctx.chunks, turn)
        yield "done", {**msgspec.to_builtins(answer), "usage": st.usage}
    finally:
        if not written:
            state.degraded.append(Degraded.CLIENT_DISCONNECTED)
            log.info("answer.stream_cancelled", session_id=state.request.session_id, tokens=len(parts))
            with anyio.CancelScope(shield=True):
                await model.aclose()
                await anyio.to_thread.run_sync(engine.recorder.finish, state, "".join(parts), ctx.chunks, turn)


def _with_passages(sources: list[Source], chunks: Sequence[Chunk]) -> list[dict[str, Any]]:
    """Each source with its passage, so a reader (the web chat) can see what the answer is built from."""
    return [{**msgspec.to_builtins(s), "passage": c.text} for s, c in zip(sources, chunks, strict=True)]


async def _no_model() -> AsyncIterator[Any]:
    """The model stream of a turn past its site key's budget: it ends before any call, as an unavailable model's."""
    raise budget_spent()
    yield  # makes this an async generator
