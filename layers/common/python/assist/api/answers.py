"""An answer (`/v1/ask`'s `Answer`) as the other ways in hand it out: the text with its sources cited
beneath it, and the engine's own fields (session, turn, route, sources, degraded, trace) apart."""

from __future__ import annotations

from typing import Any

import msgspec

from assist.contracts import Answer, GenerateStage, Source
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


def engine_fields(answer: Answer, session_id: str, trace: bool = True) -> dict[str, Any]:
    """Everything but the text; `trace=False` keeps only its request id (a compact tool result)."""
    fields = {
        "session_id": session_id,
        "turn": answer.turn,
        "route": answer.route,
        "sources": answer.sources,
        "retrieval": answer.retrieval,
        "degraded": answer.degraded,
        "uncertain": answer.uncertain,
        "uncertain_reason": answer.uncertain_reason,
    }
    fields |= {"trace": answer.trace} if trace else {"request_id": answer.trace.request_id}
    return msgspec.to_builtins(fields)
