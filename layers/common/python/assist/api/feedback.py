"""POST /v1/sessions/{id}/turns/{turn}/feedback: a person's verdict on one answer (ADR 0045)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from litestar import Request, post

from assist.api.identity import VISITOR_SCOPE_KEY, caller
from assist.contracts import SESSION_ID_PATTERN, Feedback, FeedbackRequest, InvalidRequest

if TYPE_CHECKING:
    from assist.ask.engine import Engine


def feedback_routes(engine: Engine) -> list[Any]:
    @post(
        "/v1/sessions/{session_id:str}/turns/{turn:str}/feedback",
        sync_to_thread=True,
        status_code=200,
        opt={"visitor": True},
        summary="Rate an answer (up/down), optionally with the type it should have had; a repeat replaces it",
    )
    def feedback(session_id: str, turn: str, data: FeedbackRequest, request: Request) -> Feedback:
        # `turn` is read as text so that "x" is a 400 naming the problem, not a route that does not exist
        if not re.match(SESSION_ID_PATTERN, session_id):
            raise InvalidRequest("session_id must be 1-128 of letters, digits and _ . : -")
        if not re.fullmatch(r"[1-9][0-9]{0,8}", turn):
            raise InvalidRequest(f"turn {turn[:20]!r} is not a turn number: turns count from 1 (an answer's `turn`)")
        owner = caller(request, engine.settings)
        if data.type is not None and VISITOR_SCOPE_KEY in request.scope:  # anonymous labels would train the router
            raise InvalidRequest("a visitor rates an answer up or down; the type it should have had is for users")
        return engine.feedback(session_id, owner, int(turn), data)

    return [feedback]
