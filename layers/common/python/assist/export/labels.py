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
import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from assist import metrics
from assist.aws.capacity import batch_get_units, query_units
from assist.errors import AssistError
from assist.export.redact import redact
from assist.logs import get_logger
from assist.memory.file import HISTORY, FileSessionStore
from assist.memory.store import EXPORT_DAY, EXPORT_INDEX, EXPORT_KEY

if TYPE_CHECKING:
    from assist.export.sink import Sink
    from assist.settings import Settings

log = get_logger(__name__)
WATERMARK = ("#export", 0)  # '#' never starts a user session id
WATERMARK_KEY = {"session_id": {"S": WATERMARK[0]}, "turn": {"N": str(WATERMARK[1])}}
NEVER = 2**62  # the embedded store's watermark row never expires
BUSY = "another export is running (the watermark moved or holds a pending range); retry later"
SCHEMA_VERSION = 1


class ExportBusy(AssistError):
    """Another export holds the watermark (its pending range is not this run's)."""


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


def session_hash(session_id: str, key: str) -> str:
    return hmac.new(key.encode(), session_id.encode(), hashlib.sha256).hexdigest()[:20]


def part_name(day: str, start: str, end: str) -> str:
    digest = hashlib.sha256(f"{start}|{end}".encode()).hexdigest()[:16]
    return f"date={day}/part-{digest}.jsonl"


class LabelExporter:
    """`dynamodb`: the client of the DynamoDB tables; `history` instead, another store's history
    (`FileHistory`: the embedded store)."""

    def __init__(self, settings: Settings, dynamodb: Any, sink: Sink, history: History | None = None) -> None:
        self._s = settings
        self._history = history or DynamoHistory(settings, dynamodb)
        self._sink = sink

    @property
    def read_units(self) -> float:
        return self._history.read_units

    def run(self, force: bool = False, now: datetime | None = None) -> ExportResult:
        t0 = time.perf_counter()
        now = now or datetime.now(UTC)
        mark = self._history.watermark()
        pending = mark.get("pending")
        start = (
            pending["start"]
            if pending
            else mark.get("watermark") or _iso(now - timedelta(days=self._s.session_ttl_days))
        )
        end = pending["end"] if pending else _iso(now - timedelta(seconds=self._s.export_settle_s))
        entries = self._history.entries(start, end) if end > start else []
        sessions = {e["session_id"] for e in entries}
        result = ExportResult(
            sessions=len(sessions),
            records=0,
            files=[],
            watermark=mark.get("watermark", ""),
            exported=False,
            threshold=self._s.classifier_export_threshold,
            resumed=bool(pending),
        )
        below = not force and len(sessions) < self._s.classifier_export_threshold
        if not pending and (not entries or below):  # a pending range is always finished, even if empty
            return self._done(result, t0)

        records = self._records(entries)
        parts: dict[str, list[str]] = {}
        for rec in records:
            parts.setdefault(part_name(rec["time"][:10], start, end), []).append(json.dumps(rec, ensure_ascii=False))
        if not pending:
            self._history.claim(mark.get("watermark"), start, end, sorted(parts))
        for name, lines in sorted(parts.items()):
            result.files.append(self._sink.write(name, ("\n".join(lines) + "\n").encode()))
            log.info("export.part_written", part=name, records=len(lines))
        self._history.commit(end)
        result.records, result.watermark, result.exported = len(records), end, True
        return self._done(result, t0)

    def _records(self, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        from assist.export.hash_key import hash_key

        records, key = [], hash_key(self._s)
        for e in sorted(entries, key=lambda e: e[EXPORT_KEY]):
            sid = session_hash(e["session_id"], key)
            records.append(
                {
                    "schema": SCHEMA_VERSION,
                    "id": f"{sid}:{int(e['turn'])}",
                    "session": sid,
                    "turn": int(e["turn"]),
                    "time": e["created_at"],
                    "message": redact(e["message"]),
                    "type": e["type"],
                    "layer": e["layer"],
                    "confidence": float(e["confidence"]),
                    # the embedding layer's own decisions: training leaves them out (no learning from its guesses)
                    "self_labeled": e["layer"] == "embedding",
                    "history": [{"type": h["type"], "topic": redact(h["topic"])} for h in e.get("history", [])],
                    **user_label(e),
                }
            )
        return records

    def _done(self, result: ExportResult, t0: float) -> ExportResult:
        result.read_units = round(self.read_units, 2)
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


class History:
    """Where the export reads entries and keeps its watermark: the intent history of one store."""

    read_units = 0.0  # DynamoDB read capacity used (estimated); a file costs none

    def watermark(self) -> dict[str, Any]:
        raise NotImplementedError

    def entries(self, start: str, end: str) -> list[dict[str, Any]]:
        """Intent-history items whose export key lies strictly between start and end, as plain values."""
        raise NotImplementedError

    def claim(self, current: str | None, start: str, end: str, parts: list[str]) -> None:
        """Record the range as pending, if the watermark is still `current` and nothing is pending (else ExportBusy)."""
        raise NotImplementedError

    def commit(self, end: str) -> None:
        """Move the watermark to `end` and drop the pending range (which must be this one)."""
        raise NotImplementedError


class DynamoHistory(History):
    """The intent-history table: a Query per day on its export index, the watermark as an item."""

    def __init__(self, settings: Settings, dynamodb: Any) -> None:
        from boto3.dynamodb.types import TypeDeserializer

        self._s = settings
        self._db = dynamodb
        self._de = TypeDeserializer()
        self.read_units = 0.0

    def watermark(self) -> dict[str, Any]:
        item = self._db.get_item(
            TableName=self._s.intent_history_table,
            Key=WATERMARK_KEY,
            ConsistentRead=True,
        )
        self.read_units += batch_get_units([item["Item"]], consistent=True) if "Item" in item else 1.0
        return self._plain(item.get("Item", {}))

    def entries(self, start: str, end: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        day = datetime.fromisoformat(start[:10]).date()
        while day.isoformat() <= end[:10]:
            kwargs: dict[str, Any] = {
                "TableName": self._s.intent_history_table,
                "IndexName": EXPORT_INDEX,
                "KeyConditionExpression": "#d = :d AND #k BETWEEN :a AND :b",
                "ExpressionAttributeNames": {"#d": EXPORT_DAY, "#k": EXPORT_KEY},
                "ExpressionAttributeValues": {":d": {"S": day.isoformat()}, ":a": {"S": start}, ":b": {"S": end}},
            }
            while True:
                page = self._db.query(**kwargs)
                self.read_units += query_units(page.get("Items", []))
                out += [self._plain(i) for i in page.get("Items", []) if start < i[EXPORT_KEY]["S"] < end]
                if "LastEvaluatedKey" not in page:
                    break
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
            day += timedelta(days=1)
        return out

    def _plain(self, item: dict[str, Any]) -> dict[str, Any]:
        return {k: self._de.deserialize(v) for k, v in item.items()}

    def claim(self, current: str | None, start: str, end: str, parts: list[str]) -> None:
        cond = "attribute_not_exists(pending) AND " + (
            "watermark = :current" if current else "attribute_not_exists(watermark)"
        )
        values: dict[str, Any] = {
            ":p": {"M": {"start": {"S": start}, "end": {"S": end}, "parts": {"L": [{"S": p} for p in parts]}}}
        }
        if current:
            values[":current"] = {"S": current}
        try:
            self._db.update_item(
                TableName=self._s.intent_history_table,
                Key=WATERMARK_KEY,
                UpdateExpression="SET pending = :p",
                ConditionExpression=cond,
                ExpressionAttributeValues=values,
            )
        except self._db.exceptions.ConditionalCheckFailedException as exc:
            raise ExportBusy(BUSY) from exc

    def commit(self, end: str) -> None:
        self._db.update_item(
            TableName=self._s.intent_history_table,
            Key=WATERMARK_KEY,
            UpdateExpression="SET watermark = :end, exported_at = :now REMOVE pending",
            ConditionExpression="pending.#e = :end",
            ExpressionAttributeNames={"#e": "end"},
            ExpressionAttributeValues={":end": {"S": end}, ":now": {"S": _iso(datetime.now(UTC))}},
        )


class FileHistory(History):
    """The embedded store's intent history (ADR 0044): entries in export-key order from the file's
    index on that column, the watermark a row of its own, claimed and committed in transactions
    with the same conditions as the DynamoDB item's."""

    def __init__(self, store: FileSessionStore) -> None:
        self._store = store

    def watermark(self) -> dict[str, Any]:
        return self._store.item(self._store.connection(), HISTORY, *WATERMARK) or {}

    def entries(self, start: str, end: str) -> list[dict[str, Any]]:
        rows = self._store.connection().execute(
            f"SELECT item FROM {HISTORY} WHERE export_key > ? AND export_key < ? ORDER BY export_key", (start, end)
        )
        return [json.loads(r[0]) for r in rows.fetchall()]

    def claim(self, current: str | None, start: str, end: str, parts: list[str]) -> None:
        with self._store.transaction() as db:
            mark = self._store.item(db, HISTORY, *WATERMARK) or {}
            if "pending" in mark or mark.get("watermark") != current:
                raise ExportBusy(
                    "another export is running (the watermark moved or holds a pending range); retry later"
                )
            self._put(db, {**mark, "pending": {"start": start, "end": end, "parts": parts}})

    def commit(self, end: str) -> None:
        with self._store.transaction() as db:
            mark = self._store.item(db, HISTORY, *WATERMARK) or {}
            if mark.get("pending", {}).get("end") != end:
                raise ExportBusy("the export's pending range changed under it; run the export again")
            mark.pop("pending")
            self._put(db, {**mark, "watermark": end, "exported_at": _iso(datetime.now(UTC))})

    def _put(self, db: Any, mark: dict[str, Any]) -> None:
        columns = "session_id, turn, expires_at, export_key, item"
        db.execute(
            f"INSERT OR REPLACE INTO {HISTORY} ({columns}) VALUES (?, ?, ?, NULL, ?)",
            (*WATERMARK, NEVER, json.dumps(mark)),
        )


def user_label(entry: dict[str, Any]) -> dict[str, Any]:
    """What a person said about the turn. A type they picked is the record's label (`label_source: "user"`), the
    router's stays as `routed_type`; `revision` grows with each feedback, so a reader keeps an id's highest one
    (feedback moves the turn's export key: the next export carries the turn again). Comments are redacted."""
    feedback = entry.get("feedback")
    if not feedback:
        return {"label_source": "router", "revision": 0}
    out: dict[str, Any] = {
        "label_source": "router",
        "revision": int(entry.get("feedback_version", 0)),
        "feedback": {
            "rating": feedback["rating"],
            "type": feedback.get("type"),
            "at": feedback["at"],
            **({"comment": redact(feedback["comment"])} if feedback.get("comment") else {}),
        },
    }
    if feedback.get("type"):
        out.update(label_source="user", type=feedback["type"], routed_type=entry["type"])
    return out


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat(timespec="milliseconds")


def run_export(settings: Settings, force: bool = False) -> ExportResult:
    """The export as the CLI, the scheduled function and its HTTP route run it: clients from the settings."""
    from assist.aws.clients import client
    from assist.export.sink import open_sink

    uri = settings.classifier_export_dir
    sink = open_sink(uri, client("s3", settings) if uri.startswith("s3://") else None)
    if settings.session_backend == "file":  # the embedded store (SESSION_STORE)
        from assist.memory.file import FileSessionStore

        store = FileSessionStore(settings.session_store_file, settings.session_ttl_days)
        return LabelExporter(settings, None, sink, FileHistory(store)).run(force=force)
    return LabelExporter(settings, client("dynamodb", settings), sink).run(force=force)
