"""Incremental export of classified turns as labeled JSONL (the data flywheel's first half).

"New since the watermark" is a Query per day on the intent-history table's `by-export-day`
index, never a scan. Exactly one copy of every record, whatever crashes:

1. the range to export (watermark → now − settle time) and its part names are recorded as
   `pending` on the watermark item, with a conditional update;
2. the parts are written (names are derived from the range, so a re-run overwrites them);
3. the watermark moves to the end of the range and `pending` is removed, conditionally.

A run that finds `pending` redoes exactly that range. The settle time keeps entries whose
index copy may still be on its way (GSIs are eventually consistent) for the next run.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import msgspec
from msgspec import UNSET, UnsetType

from assist import metrics
from assist.aws.clients import client
from assist.contracts import Layer, QueryType, UncertainReason
from assist.export.hash_key import hash_key
from assist.export.redact import redact
from assist.export.sink import open_sink
from assist.logs import get_logger
from assist.sessions.backends import open_store
from assist.sessions.items import HistoryEntry

if TYPE_CHECKING:
    from assist.export.sink import Sink
    from assist.sessions.store import ExportWatermark, HistoryRecord, SessionStore, Store
    from assist.settings import Settings

log = get_logger(__name__)
SCHEMA_VERSION = 1


@dataclass
class ExportResult:
    sessions: int
    records: int
    files: list[str]
    watermark: str
    exported: bool
    read_units: float = 0.0
    seconds: float = 0.0
    resumed: bool = False
    threshold: int = 0


class LabelFeedback(msgspec.Struct):
    """What a person said of the turn, its comment redacted (unset: none, or an empty one)."""

    rating: str
    type: QueryType | None  # the type they say the question was
    at: str
    comment: str | UnsetType = UNSET


class LabelRecord(msgspec.Struct):
    """One line of the export: a turn, its session hashed and its text redacted, labelled by the router or by a
    person. A type a person picked is the label (`label_source: "user"`), the router's stays as `routed_type`;
    `revision` grows with each feedback, so a reader keeps an id's highest one. Unset fields are not written."""

    schema: int
    id: str
    session: str
    turn: int
    time: str
    message: str
    type: QueryType
    layer: Layer
    confidence: float
    # the embedding layer's own decisions: training leaves them out (no learning from its guesses)
    self_labeled: bool
    history: list[HistoryEntry]
    label_source: str = "router"
    revision: int = 0
    feedback: LabelFeedback | UnsetType = UNSET
    routed_type: QueryType | UnsetType = UNSET
    # the docs did not cover it (the evidence's verdict or the model's own): a gap, and a signal
    uncertain: UncertainReason | UnsetType = UNSET
    # an anonymous widget visitor's turn, by its site key: training leaves it out unless asked
    site_key: str | UnsetType = UNSET


def session_hash(session_id: str, key: str) -> str:
    return hmac.new(key.encode(), session_id.encode(), hashlib.sha256).hexdigest()[:20]


def part_name(day: str, start: str, end: str) -> str:
    digest = hashlib.sha256(f"{start}|{end}".encode()).hexdigest()[:16]
    return f"date={day}/part-{digest}.jsonl"


class LabelExporter:
    """The export of one session store's intent history (either backend) into a sink, from where its
    `ExportWatermark` says the last export ended."""

    def __init__(self, settings: Settings, store: SessionStore, sink: Sink) -> None:
        self._s = settings
        self._store: Store = store
        self._mark: ExportWatermark = store
        self._sink = sink
        self._units_before = 0.0

    def run(self, force: bool = False, now: datetime | None = None) -> ExportResult:
        t0 = time.perf_counter()
        self._units_before = self._store.read_units
        now = now or datetime.now(UTC)
        mark = self._mark.export_mark()
        pending = mark.pending
        start = pending.start if pending else mark.watermark or _iso(now - timedelta(days=self._s.sessions.ttl_days))
        end = pending.end if pending else _iso(now - timedelta(seconds=self._s.export.settle_s))
        entries = self.entries(start, end) if end > start else []
        sessions = {e.session_id for e in entries}
        result = ExportResult(
            sessions=len(sessions),
            records=0,
            files=[],
            watermark=mark.watermark or "",
            exported=False,
            threshold=self._s.export.threshold,
            resumed=bool(pending),
        )
        below = not force and len(sessions) < self._s.export.threshold
        if not pending and (not entries or below):  # a pending range is always finished, even if empty
            return self._done(result, t0)

        records = self._records(entries)
        parts: dict[str, list[str]] = {}
        for rec in records:
            parts.setdefault(part_name(rec.time[:10], start, end), []).append(msgspec.json.encode(rec).decode())
        if not pending:
            self._mark.claim_export(mark.watermark, start, end, sorted(parts))
        for name, lines in sorted(parts.items()):
            result.files.append(self._sink.write(name, ("\n".join(lines) + "\n").encode()))
            log.info("export.part_written", part=name, records=len(lines))
        self._mark.commit_export(end)
        result.records, result.watermark, result.exported = len(records), end, True
        return self._done(result, t0)

    def entries(self, start: str, end: str) -> list[HistoryRecord]:
        """Intent-history items whose export key lies strictly between start and end: the days' pages."""
        out: list[HistoryRecord] = []
        day = datetime.fromisoformat(start[:10]).date()
        while day.isoformat() <= end[:10]:
            for page in self._store.history_pages(day.isoformat(), after=start, before=end):
                out += page.items
            day += timedelta(days=1)
        return out

    def _records(self, entries: list[HistoryRecord]) -> list[LabelRecord]:
        records, key = [], hash_key(self._s)
        for e in sorted(entries, key=lambda e: e.export_key):
            sid = session_hash(e.session_id, key)
            record = LabelRecord(
                SCHEMA_VERSION, f"{sid}:{e.turn}", sid, e.turn, e.created_at, redact(e.message), e.type, e.layer,
                e.confidence, e.layer == Layer.EMBEDDING, [HistoryEntry(h.type, redact(h.topic)) for h in e.history],
                uncertain=e.uncertain or UNSET, site_key=e.site_key or UNSET,
            )  # fmt: skip
            records.append(user_label(record, e))
        return records

    def _done(self, result: ExportResult, t0: float) -> ExportResult:
        result.read_units = round(self._store.read_units - self._units_before, 2)
        result.seconds = round(time.perf_counter() - t0, 3)
        log.info(
            "export.finished",
            exported=result.exported,
            sessions=result.sessions,
            records=result.records,
            files=len(result.files),
            watermark=result.watermark,
            read_units=result.read_units,
        )
        metrics.exported(result.records)
        return result


def user_label(record: LabelRecord, entry: HistoryRecord) -> LabelRecord:
    """The record with what a person said about the turn (feedback moves the turn's export key: the next export
    carries the turn again, one revision on). Comments are redacted."""
    fb = entry.feedback
    if fb is None:
        return record
    said = LabelFeedback(fb.rating, fb.type, fb.at, redact(fb.comment) if fb.comment else UNSET)
    labelled = msgspec.structs.replace(record, revision=entry.feedback_version, feedback=said)
    if fb.type:
        return msgspec.structs.replace(labelled, label_source="user", type=fb.type, routed_type=record.type)
    return labelled


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat(timespec="milliseconds")


def run_export(settings: Settings, force: bool = False) -> ExportResult:
    """The export as the CLI, the scheduled function and its HTTP route run it: clients from the settings."""
    uri = settings.export.dir

    sink = open_sink(uri, client("s3", settings) if uri.startswith("s3://") else None)
    return LabelExporter(settings, open_store(settings), sink).run(force=force)
