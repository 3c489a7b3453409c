"""A session as its owner reads it back (`GET /v1/sessions/{id}`) and rates it (feedback on a turn): the
store's typed records, shaped for the API."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import msgspec

from assist.contracts import Feedback, FeedbackRequest, Transcript, TranscriptTurn
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.sessions.store import Store

log = get_logger(__name__)


class Sessions:
    def __init__(self, store: Callable[[], Store]) -> None:
        self._store = store

    def transcript(self, session_id: str, owner: str) -> Transcript:
        turns, intents = self._store().transcript(session_id, owner)
        return Transcript(
            session_id=session_id,
            turns=[msgspec.convert(t, TranscriptTurn, from_attributes=True) for t in turns],
            intents=intents,
        )

    def feedback(self, session_id: str, owner: str, turn: int, req: FeedbackRequest) -> Feedback:
        """Record (or replace) a person's feedback on one of their turns."""
        at = datetime.now(UTC).isoformat(timespec="milliseconds")
        fb = Feedback(rating=req.rating, at=at, type=req.type, comment=req.comment)
        self._store().set_feedback(session_id, owner, turn, fb)
        log.info("feedback.recorded", session_id=session_id, turn=turn, rating=req.rating, type=req.type)
        return fb
