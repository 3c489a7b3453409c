"""What a widget visitor's stream says (ADR 0093): the answer, its route, sources, degraded and uncertain, and
nothing of the trace's internals (no model names, token counts, prompt sizes, rewritten queries, verdict
signals, thinking). A user with a JWT, and the operator, keep the whole trace.

The widget's renderer (web/static/render.js, shared with the chat page) reads the generate stage's
`answered_by` (a slot, `extractive` or `not_covered`, never a model), `answered_from` and `lang` to say how an
answer was made: those three stay, in a trace that holds only that stage.

What a visitor may see is a type of its own for each event (ADR 0105): a field is shown because its struct here
names it, so a field added to the answer stays hidden until it is added here.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from assist.contracts import (
    AnsweredBy,
    AnsweredFrom,
    AnswerEvent,
    Confidence,
    Degraded,
    DoneEvent,
    Event,
    GenerateStage,
    Layer,
    QueryType,
    RouteEvent,
    Slot,
    ThinkingEvent,
    UncertainReason,
)


class SeenRoute(msgspec.Struct):
    type: QueryType
    layer: Layer
    confidence: float
    model_slot: Slot


class SeenSource(msgspec.Struct):
    id: str
    doc_id: str
    title: str
    heading: str
    url: str
    passage: str | UnsetType = UNSET
    near_miss: bool | UnsetType = UNSET  # an uncertain answer's (ADR 0102)


class SeenRetrieval(msgspec.Struct):
    confidence: Confidence
    note: str | UnsetType = UNSET
    suggestions: list[str] | UnsetType = UNSET


class SeenStage(msgspec.Struct, tag_field="name", tag="generate", omit_defaults=True):
    """The generate stage's three details a notice is written from; those it did not decide are left out."""

    answered_by: AnsweredBy | None = None
    answered_from: AnsweredFrom | None = None
    lang: str | None = None


class SeenTrace(msgspec.Struct):
    stages: list[SeenStage]


class SeenAnswer(msgspec.Struct):
    answer: str
    route: SeenRoute
    sources: list[SeenSource]
    retrieval: SeenRetrieval | None
    degraded: list[Degraded]
    turn: int
    uncertain: bool
    uncertain_reason: UncertainReason | None
    trace: SeenTrace


class SeenRouteEvent(RouteEvent):
    route: SeenRoute  # type: ignore[assignment]
    sources: list[SeenSource]  # type: ignore[assignment]


class SeenDoneEvent(DoneEvent):
    answer: SeenAnswer  # type: ignore[assignment]
    # `usage` stays unset: a visitor gets no token counts


def for_visitor(event: AnswerEvent) -> Event | None:
    """The event as a visitor receives it; None when a visitor receives none of it (the model's own reasoning)."""
    if isinstance(event, ThinkingEvent):
        return None
    if isinstance(event, RouteEvent):
        return _seen(event, SeenRouteEvent)
    if isinstance(event, DoneEvent):
        a = event.answer
        generate = [
            SeenStage(s.answered_by, s.answered_from, s.lang) for s in a.trace.stages if isinstance(s, GenerateStage)
        ]
        seen = SeenAnswer(
            answer=a.answer,
            route=_seen(a.route, SeenRoute),
            sources=_seen(a.sources, list[SeenSource]),
            retrieval=_seen(a.retrieval, SeenRetrieval | None),
            degraded=a.degraded,
            turn=a.turn,
            uncertain=a.uncertain,
            uncertain_reason=a.uncertain_reason,
            trace=SeenTrace(generate),
        )
        return SeenDoneEvent(seen)
    return event  # a token: the text itself


def _seen(value: object, seen: Any) -> Any:
    """`value`'s fields that `seen` names, read as that type (a field `value` leaves unset stays unset)."""
    return msgspec.convert(msgspec.to_builtins(value), seen)
