"""An answer (`/v1/ask`'s `Answer`) as the other ways in hand it out: the text with its sources cited
beneath it, and the engine's own fields (session, turn, route, sources, degraded, trace) apart."""

from __future__ import annotations

import msgspec

from assist.contracts import (
    Answer,
    Degraded,
    GenerateStage,
    RetrievalInfo,
    Route,
    Source,
    Trace,
    UncertainReason,
)
from assist.trace import named


def cited(sources: list[Source]) -> str:
    """The sources the answer's [n] markers point at, as a footer of the answer text: each with its chunk id
    (what the session and `get_document` know it by) and the page a reader can follow. Near misses are no
    citations: the fixed answer's text lists them already, each with its page (ADR 0084, ADR 0102)."""
    lines = [
        f"[{i}] {s.title} › {s.heading or s.title} ({s.id})" + (f" {s.url}" if s.url else "")
        for i, s in enumerate((s for s in sources if s.near_miss is not True), 1)
    ]
    if not lines:
        return ""
    return "\n\nSources:\n" + "\n".join(lines)


def usage(answer: Answer) -> dict[str, int | str]:
    """The model's figures for the answer (none when no model answered)."""
    generate = named(answer.trace.stages, GenerateStage)
    return generate.usage if generate is not None else {}


class EngineFields(msgspec.Struct, omit_defaults=True):
    """An answer's fields but its text, and its session: the OpenAI body's `assist`, the MCP `ask` result's. The
    whole trace, or only its request id (a compact tool result)."""

    session_id: str
    turn: int
    route: Route | None  # None: an execution whose classify step failed (ADR 0105)
    sources: list[Source]
    retrieval: RetrievalInfo | None
    degraded: list[Degraded]
    uncertain: bool
    uncertain_reason: UncertainReason | None
    trace: Trace | None = None
    request_id: str | None = None


def engine_fields(answer: Answer, session_id: str, trace: bool = True) -> EngineFields:
    """Everything but the text; `trace=False` keeps only its request id (a compact tool result)."""
    fields = EngineFields(
        session_id, answer.turn, answer.route, answer.sources, answer.retrieval, answer.degraded, answer.uncertain,
        answer.uncertain_reason,
    )  # fmt: skip
    if trace:
        return msgspec.structs.replace(fields, trace=answer.trace)
    return msgspec.structs.replace(fields, request_id=answer.trace.request_id)
