"""The base of every error whose message is meant for the person running the engine, and the one map
from an error to a problem (ADR 0063): each error class carries its own HTTP status, code and retry
time; `problem` reads them; REST (api/app.py), OpenAI (api/openai.py) and MCP (api/mcp_server.py)
only render the problem in their own shape."""

from __future__ import annotations

from typing import Any

#: how long a client should wait before retrying a 503 (the Retry-After header), for every such error
RETRY_AFTER_S = 2
INTERNAL = "internal error; see the server log"


class AssistError(Exception):
    """Raised with a message that says what is wrong and what to do about it.

    `status` is the HTTP status a way in answers with; 500 (the default) keeps the message in the
    server log, since it was not written for a caller. `code` names the problem for machines
    (OpenAI's `error.code`), `reason` too where the REST body says one (a 503's), `retry_after_s`
    says when a retry may succeed (None: it will not)."""

    status = 500
    code: str | None = None
    reason: str | None = None
    retry_after_s: int | None = None


class Unavailable(AssistError):
    """A part the answer needs did not serve the call; nothing was written, so a retry duplicates nothing."""

    status = 503
    code = "service_unavailable"
    retry_after_s = RETRY_AFTER_S


def problem(exc: BaseException) -> dict[str, Any]:
    """The error as a problem: `status`, `code`, `detail` (the message, unless it is an internal error's),
    `reason` and `retry_after_s` (None when they do not apply). Anything not an AssistError is a 500."""
    if not isinstance(exc, AssistError):
        return {"status": 500, "code": None, "detail": INTERNAL, "reason": None, "retry_after_s": None}
    return {
        "status": exc.status,
        "code": exc.code,
        "detail": str(exc) if exc.status < 500 or exc.retry_after_s is not None else INTERNAL,
        "reason": exc.reason,
        "retry_after_s": exc.retry_after_s,
    }
