"""What a widget visitor's stream says (ADR 0093): the answer, its route, sources, degraded and uncertain, and
nothing of the trace's internals (no model names, token counts, prompt sizes, rewritten queries, verdict
signals, thinking). A user with a JWT, and the operator, keep the whole trace.

The widget's renderer (web/static/render.js, shared with the chat page) reads the generate stage's
`answered_by` (a slot, `extractive` or `not_covered`, never a model), `answered_from` and `lang` to say how an
answer was made: those three stay, in a trace that holds only that stage.
"""

from __future__ import annotations

from typing import Any

ROUTE = ("type", "layer", "confidence", "model_slot")
SOURCE = ("id", "doc_id", "title", "heading", "url", "passage", "near_miss")  # an uncertain answer's (ADR 0102)
RETRIEVAL = ("confidence", "note", "suggestions")
GENERATE = ("name", "answered_by", "answered_from", "lang")
UNCERTAIN = ("uncertain", "uncertain_reason")
HIDDEN_EVENTS = frozenset({"thinking"})  # the model's own reasoning


def for_visitor(name: str, payload: dict[str, Any]) -> dict[str, Any] | None:
    """The event as a visitor receives it; None when a visitor receives none of it."""
    if name in HIDDEN_EVENTS:
        return None
    if name == "route":
        return {
            **_only(payload, ROUTE),
            "sources": [_only(s, SOURCE) for s in payload.get("sources", [])],
            "degraded": payload.get("degraded", []),
            **_only(payload, UNCERTAIN),
        }
    if name == "done":
        stages = payload.get("trace", {}).get("stages", [])
        # a stage's undecided details are null (ADR 0099): a visitor gets only the ones the answer has
        generate = [
            {k: v for k, v in _only(s, GENERATE).items() if v is not None} for s in stages if s["name"] == "generate"
        ]
        return {
            "answer": payload.get("answer", ""),
            "route": _only(payload.get("route", {}), ROUTE),
            "sources": [_only(s, SOURCE) for s in payload.get("sources", [])],
            "retrieval": _only(payload["retrieval"], RETRIEVAL) if payload.get("retrieval") else None,
            "degraded": payload.get("degraded", []),
            "turn": payload.get("turn", 0),
            **_only(payload, UNCERTAIN),
            "trace": {"stages": generate},
        }
    return payload  # token, error: the text itself


def _only(item: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {k: item[k] for k in names if k in item}
