"""An answer (`/v1/ask`'s JSON) as the other ways in hand it out: the text with its sources cited
beneath it, and the engine's own fields (session, turn, route, sources, degraded, trace) apart."""

from __future__ import annotations

from typing import Any


def cited(sources: list[dict[str, Any]]) -> str:
    """The sources the answer's [n] markers point at, as a footer of the answer text: each with its chunk id
    (what the session and `get_document` know it by) and the page a reader can follow. Near misses are no
    citations: the fixed answer's text lists them already, each with its page (ADR 0084, ADR 0102)."""
    lines = [
        f"[{i}] {s['title']} › {s['heading'] or s['title']} ({s['id']})" + (f" {s['url']}" if s.get("url") else "")
        for i, s in enumerate((s for s in sources if not s.get("near_miss")), 1)
    ]
    if not lines:
        return ""
    return "\n\nSources:\n" + "\n".join(lines)


def stage_detail(trace: dict[str, Any], name: str) -> dict[str, Any]:
    return next((s for s in trace.get("stages", []) if s.get("name") == name), {})


def engine_fields(answer: dict[str, Any], session_id: str, trace: bool = True) -> dict[str, Any]:
    """Everything but the text; `trace=False` keeps only its request id (a compact tool result)."""
    fields = {
        "session_id": session_id,
        "turn": stage_detail(answer["trace"], "persist").get("turn"),
        "route": answer["route"],
        "sources": answer["sources"],
        "retrieval": answer.get("retrieval"),
        "degraded": answer["degraded"],
        "uncertain": answer.get("uncertain", False),
        "uncertain_reason": answer.get("uncertain_reason"),
    }
    return fields | ({"trace": answer["trace"]} if trace else {"request_id": answer["trace"].get("request_id")})
