"""Sessions and intent history: the one store interface both backends implement (ADR 0044, ADR 0061).

Two backends keep the same data with the same guarantees: `DynamoDBStore` (sessions/dynamodb.py, what
deployments and the local stack use) and `SQLiteStore` (sessions/sqlite.py, one SQLite file under
.assist/, the default when no AWS is configured); `sessions/backends.open_store` picks one from the
settings. Everything the engine, the API, the label export and the insights page read or write goes
through `Store`, so each works on both backends.

Both keep two tables keyed (session_id, turn): the sessions table (a header item, turn 0, with the
owner and an atomic turn counter; then one item per turn) and the intent history (one item per turn,
found by day through its export key). The owner and feedback checks, the retry-of-the-same-request
rule and the translation of backend failures into `StoreUnavailable` are written here, once; a
backend supplies reads and conditional writes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec

from assist.contracts import (
    Confidence,
    Degraded,
    Exchange,
    Feedback,
    IntentEntry,
    Layer,
    QueryType,
    Scope,
    TranscriptIntent,
    UncertainReason,
)
from assist.errors import AssistError
from assist.logs import get_logger
from assist.sessions.items import ExportMark, HistoryEntry, Turn
from assist.sessions.keys import HEADER_TURN, LAST_KEY
from assist.tables.base import Backend, guarded

log = get_logger(__name__)
R = TypeVar("R")
HISTORY_WINDOW = 6
TOPIC_CHARS = 60


class SessionNotFound(AssistError, LookupError):
    """No such session for this caller (another owner's session looks exactly like a missing one)."""

    status = 404
    code = "session_not_found"

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} not found")


class TurnNotFound(SessionNotFound):
    """The caller's session has no such turn."""

    def __init__(self, session_id: str, turn: int) -> None:
        AssistError.__init__(self, f"session {session_id!r} has no turn {turn}")


class TurnConflict(RuntimeError):
    """The turn's key holds another request's turn: the counter and the items disagree."""


class ExportBusy(AssistError):
    """Another export holds the watermark (its pending range is not this run's)."""


BUSY = "another export is running (the watermark moved or holds a pending range); retry later"


class StoredItem(msgspec.Struct):
    """A sessions item as the store's rules read it (`item`): whose session it is, which request wrote the turn,
    its feedback's version; for a widget visitor's turn, the site key it came through."""

    owner: str = ""
    request_id: str = ""
    feedback_version: int = 0
    site_key: str | None = None


class TurnRecord(msgspec.Struct):
    """A stored turn as the engine (`recent`) and its owner (`transcript`) read it back."""

    turn: int
    message: str
    answer: str
    type: QueryType
    owner: str = "anonymous"
    layer: Layer = Layer.UNKNOWN
    confidence: float = 0.0
    sources: list[str] = msgspec.field(default_factory=list)
    degraded: list[Degraded] = msgspec.field(default_factory=list)
    created_at: str = ""
    feedback: Feedback | None = None
    request_id: str = ""  # the request that wrote it (a retry of the same request is no conflict)
    scope: Scope | None = None


def remembered_scope(turns: list[TurnRecord]) -> Scope | None:
    """The scope the session's latest scoped turn searched (ADR 0121): a follow-up sent without one keeps it."""
    return next((t.scope for t in reversed(turns) if t.scope), None)


def records(items: list[dict[str, Any]], kind: type[R]) -> list[R]:
    """A backend's plain items (JSON values: no Decimal) as typed records; extra fields are left out."""
    return [msgspec.convert(i, kind, strict=False) for i in items]


class HistoryRecord(msgspec.Struct):
    """An intent-history item (`items.HistoryItem`) as the label export and the insights page read it back, with
    the feedback a person gave since. A field an item lacks (DynamoDB leaves out None) reads as its default."""

    created_at: str
    type: QueryType
    layer: Layer
    session_id: str = ""
    turn: int = 0
    request_id: str = ""
    topic: str = ""
    confidence: float = 0.0
    message: str = ""
    history: list[HistoryEntry] = msgspec.field(default_factory=list)
    retrieval_confidence: Confidence | None = None  # None: the turn did not search the docs
    uncertain: UncertainReason | None = None
    degraded: list[Degraded] = msgspec.field(default_factory=list)
    site_key: str | None = None
    page: str | None = None
    export_key: str = ""
    feedback: Feedback | None = None
    feedback_version: int = 0
    scope: Scope | None = None  # what the turn searched (ADR 0121); None: the whole index


@dataclass
class Page:
    """One page of a day's intent history, and what reading it cost (DynamoDB read units, estimated; a file costs
    none)."""

    items: list[HistoryRecord]
    read_units: float = 0.0
    more: bool = False  # another page of the day follows


def topic_of(message: str) -> str:
    """A message as the intent history keeps its topic: whitespace folded, its first TOPIC_CHARS characters."""
    return " ".join(message.split())[:TOPIC_CHARS]


def intent_entries(turns: list[TurnRecord]) -> list[IntentEntry]:
    """The intent history as the classifier sees it, from the sessions table's turns."""
    return [IntentEntry(t.type, topic_of(t.message), t.layer, t.confidence) for t in turns]


def exchanges(turns: list[TurnRecord]) -> list[Exchange]:
    """The session so far as a CONVERSATIONAL answer sees it: each turn's message, answer and cited sources."""
    return [Exchange(t.message, t.answer, list(t.sources)) for t in turns]


class Store(Backend):
    """What the engine, the API, the export and the insights page rely on, whichever backend keeps the data.

    A backend keeps plain items (JSON values): a sessions item per turn (`items.turn_items`), its intent-history twin,
    and a header (turn 0) per session with its owner and turn counter; readers outside get typed records.
    Guarantees, per backend:
    `begin_turn` is an atomic counter; a turn's two items are written together or not at all and
    only once (`append_turn`: a retry of the same request is recognised, a different request's
    turn is a TurnConflict); another owner's session is SessionNotFound, like a missing one; a
    feedback write replaces the turn's feedback whole, never mixing two writers' halves."""

    #: DynamoDB read units the history reads used so far (estimated); a file costs none
    read_units = 0.0

    # -- what a backend supplies (and `failure`) ------------------------------------------
    @abstractmethod
    def item(self, session_id: str, turn: int) -> StoredItem | None:
        """A sessions item (turn 0: the header), read consistently."""

    @abstractmethod
    def messages(self, session_id: str, limit: int = 20) -> list[TurnRecord]:
        """The session's last `limit` turns, oldest first (no owner check: callers do it)."""

    @abstractmethod
    def intents(self, session_id: str, limit: int = 200) -> list[HistoryRecord]:
        """The session's first `limit` intent-history items, oldest first (no owner check)."""

    @abstractmethod
    def begin_turn(self, session_id: str, owner: str) -> int:
        """Take the session's next turn number; the first turn makes `owner` the session's owner, anyone
        else's call is SessionNotFound (use `refused`)."""

    @abstractmethod
    def insert_turn(self, turn: Turn) -> bool:
        """Write the turn's two items together, each only if its key is new; False when a key is taken."""

    @abstractmethod
    def write_feedback(self, session_id: str, owner: str, turn: int, feedback: Feedback) -> None:
        """Replace the turn's feedback on both items after `feedback_target` passed (see `set_feedback`)."""

    @abstractmethod
    def history_pages(
        self, day: str, after: str = "", before: str = LAST_KEY, newest_first: bool = False
    ) -> Iterator[Page]:
        """The intent-history items whose export day is `day` and export key lies strictly between `after`
        and `before`, page by page in export-key order (newest first if asked): one indexed read per page,
        never a scan."""

    # -- the rules, once -------------------------------------------------------------------
    @staticmethod
    def refused(session_id: str) -> SessionNotFound:
        """Another owner's session, as the caller sees it: not found (logged, so an operator sees the attempt)."""
        log.warning("memory.owner_refused", session_id=session_id)
        return SessionNotFound(session_id)

    def check_owner(self, session_id: str, owner: str) -> None:
        """SessionNotFound unless the session exists and is the caller's (its header item says so)."""
        header = self.item(session_id, HEADER_TURN)
        if not header or header.owner != owner:
            raise SessionNotFound(session_id)

    def feedback_target(self, session_id: str, owner: str, turn: int) -> StoredItem:
        """The turn item feedback goes on: a foreign or missing session is SessionNotFound, a missing turn
        of the caller's own session TurnNotFound."""
        item = self.item(session_id, turn) if turn > HEADER_TURN else None
        if not item:
            self.check_owner(session_id, owner)  # a foreign or missing session is that, not a turn
            raise TurnNotFound(session_id, turn)
        if item.owner != owner:
            raise SessionNotFound(session_id)
        return item

    @guarded
    def transcript(
        self, session_id: str, owner: str, limit: int = 200
    ) -> tuple[list[TurnRecord], list[TranscriptIntent]]:
        """The session's turns and intent entries, oldest first, for its owner only."""
        self.check_owner(session_id, owner)
        intents = self.intents(session_id, limit=limit)
        return self.messages(session_id, limit=limit), [
            msgspec.convert(i, TranscriptIntent, from_attributes=True) for i in intents
        ]

    @guarded
    def recent(self, session_id: str, owner: str, limit: int = HISTORY_WINDOW) -> list[TurnRecord]:
        """The session's last `limit` turns, oldest first: one read serves the classifier's intent
        history and a CONVERSATIONAL answer's memory. Another owner's session is not found."""
        turns = self.messages(session_id, limit=limit)
        if any(t.owner != owner for t in turns):
            raise self.refused(session_id)
        return turns

    @guarded
    def append_turn(self, turn: Turn) -> bool:
        """Write the turn to both tables; False when this very request was already written (a retry)."""
        if self.insert_turn(turn):
            return True
        existing = self.item(turn.session_id, turn.number)
        if existing is not None and existing.request_id == turn.request_id:
            log.info("memory.turn_already_written", session_id=turn.session_id, turn=turn.number)
            return False
        raise TurnConflict(f"session {turn.session_id} turn {turn.number} belongs to another request")

    @guarded
    def set_feedback(self, session_id: str, owner: str, turn: int, feedback: Feedback) -> None:
        """Replace a turn's feedback on both of its items, whole (no lost
        update between two writers), and move its export key to the feedback's time so the next label
        export carries it again. Another owner's or a missing session: SessionNotFound; a missing turn:
        TurnNotFound."""
        self.write_feedback(session_id, owner, turn, feedback)


class ExportWatermark(ABC):
    """How far the label export has read the intent history (ADR 0061): one item per store, moved only by
    claiming a range (`pending`) and then committing it, so two exports never write the same range twice."""

    @abstractmethod
    def export_mark(self) -> ExportMark:
        """The export's watermark item (empty before the first export)."""

    @abstractmethod
    def claim_export(self, current: str | None, start: str, end: str, parts: list[str]) -> None:
        """Record the range as pending, if the watermark is still `current` and nothing is pending (else ExportBusy)."""

    @abstractmethod
    def commit_export(self, end: str) -> None:
        """Move the watermark to `end` and drop the pending range (which must be this one, else ExportBusy)."""


class SessionStore(Store, ExportWatermark):
    """What a backend is: the store, keeping its own export watermark (DynamoDBStore, SQLiteStore)."""
