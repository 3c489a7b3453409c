"""The items both session backends keep, built here once (ADR 0061, ADR 0101): a turn as the engine writes it
(`Turn`), its sessions item and its intent-history twin (`turn_items`), what a feedback write sets on them
(`FeedbackMark`), and the export's watermark (`ExportMark`). The backends store them as they are (SQLite: JSON;
DynamoDB: attribute values, None left out) and differ only in how they write them atomically."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import msgspec

from assist.contracts import Confidence, Degraded, Feedback, IntentEntry, Layer, QueryType, Scope, UncertainReason
from assist.sessions.keys import export_key


@dataclass
class Turn:
    session_id: str
    number: int
    request_id: str
    message: str
    answer: str
    entry: IntentEntry
    owner: str = "anonymous"
    sources: list[str] = field(default_factory=list)
    degraded: list[Degraded] = field(default_factory=list)
    history: list[IntentEntry] = field(default_factory=list)  # what the classifier saw (kept for labels)
    retrieval_confidence: Confidence | None = None  # None: the turn did not search the docs
    uncertain: UncertainReason | None = None  # why the docs do not cover the question (ADR 0055); None: they do
    site_key: str | None = None  # a widget visitor's question: the site key it came through (docs/widget.md)
    page: str | None = None  # and the page of the site it was asked on
    scope: Scope | None = None  # what it searched (ADR 0121): the session's next turn searches it too


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class SessionItem(msgspec.Struct):
    """A turn in the sessions table: what the next turn's single read (`recent`) and its transcript need."""

    session_id: str
    turn: int
    request_id: str
    owner: str
    message: str
    answer: str
    type: QueryType
    # the intent entry again: the next turn's single read then yields its history (no second query)
    layer: Layer
    confidence: float
    sources: list[str]
    degraded: list[Degraded]
    # an anonymous widget visitor's turn: the site key it came through (None otherwise: not written to DynamoDB)
    site_key: str | None
    created_at: str
    expires_at: int
    scope: Scope | None = None  # what the turn searched (None: everything; not written to DynamoDB)


class HistoryEntry(msgspec.Struct):
    type: QueryType
    topic: str


class HistoryItem(msgspec.Struct):
    """A turn in the intent history: the label export's and the insights page's record of it."""

    session_id: str
    turn: int
    request_id: str
    owner: str
    type: QueryType
    topic: str
    layer: Layer
    confidence: float
    created_at: str
    expires_at: int
    history: list[HistoryEntry]
    # the message again: the label export then reads one Query per day and no second table
    message: str
    # for the insights page: how well the docs answered, and what went wrong
    retrieval_confidence: Confidence | None
    uncertain: UncertainReason | None
    degraded: list[Degraded]
    # and where a widget's visitors asked from (None otherwise: not written to DynamoDB)
    site_key: str | None
    page: str | None
    # the export index: "entries of day D after key K" is one Query, never a scan
    export_day: str
    export_key: str
    scope: Scope | None = None  # what the turn searched: the insights break the gaps down by it


def turn_items(turn: Turn, at: datetime | None = None, ttl_s: int = 30 * 86400) -> tuple[SessionItem, HistoryItem]:
    """The turn's sessions item and intent-history item."""
    when = at or datetime.now(UTC)
    now = when.isoformat(timespec="milliseconds")
    expires = int(when.timestamp()) + ttl_s
    entry, confidence = turn.entry, round(turn.entry.confidence, 4)
    session_item = SessionItem(
        turn.session_id, turn.number, turn.request_id, turn.owner, turn.message, turn.answer, entry.type,
        entry.layer, confidence, turn.sources, turn.degraded, turn.site_key, now, expires, turn.scope,
    )  # fmt: skip
    history_item = HistoryItem(
        turn.session_id, turn.number, turn.request_id, turn.owner, entry.type, entry.topic, entry.layer,
        confidence, now, expires, [HistoryEntry(h.type, h.topic) for h in turn.history], turn.message,
        turn.retrieval_confidence, turn.uncertain, turn.degraded, turn.site_key, turn.page,
        now[:10], export_key(now, turn.session_id, turn.number), turn.scope,
    )  # fmt: skip
    return session_item, history_item


class FeedbackMark(msgspec.Struct):
    """What a feedback write sets: `feedback` and `feedback_version` on the turn's sessions item, all four fields
    on its intent-history item, whose export key moves to the feedback's time so the next export carries it."""

    feedback: Feedback
    feedback_version: int
    export_day: str
    export_key: str

    @classmethod
    def after(cls, version: int, feedback: Feedback, session_id: str, turn: int) -> FeedbackMark:
        """The write that follows the turn's feedback version `version` (0: none yet)."""
        at = feedback.at
        return cls(feedback, version + 1, at[:10], export_key(at, session_id, turn))

    def on_session(self) -> dict[str, Any]:
        return {"feedback": msgspec.to_builtins(self.feedback), "feedback_version": self.feedback_version}

    def on_history(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)


class Pending(msgspec.Struct):
    """The range an export claimed: from `start` to `end`, written as `parts`."""

    start: str
    end: str
    parts: list[str]


class ExportMark(msgspec.Struct, omit_defaults=True):
    """The export's watermark item: how far the export has read, the range it holds (if any), and when it last
    committed one. Moved only by claiming a range and committing it (`ExportWatermark`)."""

    watermark: str | None = None
    pending: Pending | None = None
    exported_at: str | None = None

    def claimable(self, current: str | None) -> bool:
        """Whether a claim from `current` may be taken: nothing pending, and the watermark still there."""
        return self.pending is None and self.watermark == current

    def claimed(self, start: str, end: str, parts: list[str]) -> ExportMark:
        return msgspec.structs.replace(self, pending=Pending(start, end, parts))

    def committed(self, end: str) -> ExportMark:
        return ExportMark(watermark=end, exported_at=now_iso())
