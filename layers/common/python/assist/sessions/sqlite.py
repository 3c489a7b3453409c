"""The embedded backend of the session store (`Store`, sessions/store.py): one SQLite file (ADR 0044).

`assist ask` from a checkout needs no cloud and no running stack: with no AWS configured,
SESSION_STORE=auto keeps sessions here (SESSION_STORE_FILE, default .assist/sessions.sqlite3).
The two tables mirror the DynamoDB ones — same keys, same items (stored as JSON) — and every
write is a transaction that takes the database's write lock first (BEGIN IMMEDIATE), which
gives the DynamoDB store's guarantees across threads and processes:

- `begin_turn`: read-and-increment of the header's counter under the lock, so two turns of one
  session never get the same number; the first turn sets the owner, anyone else is not found;
- `append_turn`: both items inserted in one transaction, on primary keys that refuse a second
  insert: a retry of the same request is recognised by its request id, any other is a conflict;
- `set_feedback`, the export's claim and commit: read and write in one transaction under the lock.

WAL journaling lets readers run while a turn is written; synchronous=FULL makes each committed
turn durable. Expired items (expires_at, as DynamoDB's TTL) are removed when a process first
opens the file.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from assist.contracts import Feedback
from assist.sessions.items import ExportMark, FeedbackMark, Turn, now_iso, turn_items
from assist.sessions.keys import HEADER_TURN, LAST_KEY, WATERMARK
from assist.sessions.store import (
    BUSY,
    ExportBusy,
    HistoryRecord,
    Page,
    SessionStore,
    StoredItem,
    TurnNotFound,
    TurnRecord,
    records,
)
from assist.tables.base import guarded
from assist.tables.sqlite import SQLiteFile

SESSIONS, HISTORY = "sessions", "intent_history"
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {SESSIONS} (
    session_id TEXT NOT NULL, turn INTEGER NOT NULL, expires_at INTEGER NOT NULL, item TEXT NOT NULL,
    PRIMARY KEY (session_id, turn)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS {HISTORY} (
    session_id TEXT NOT NULL, turn INTEGER NOT NULL, expires_at INTEGER NOT NULL, item TEXT NOT NULL,
    export_key TEXT, PRIMARY KEY (session_id, turn)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS {HISTORY}_by_export_key ON {HISTORY} (export_key) WHERE export_key IS NOT NULL;
"""
PAGE_ROWS = 1000  # a history page: the size of a DynamoDB page of small items
NEVER = 2**62  # the export's watermark row never expires


class SQLiteStore(SQLiteFile, SessionStore):
    """The `Store` interface over one SQLite file."""

    def __init__(self, path: str | Path, ttl_days: int = 30) -> None:
        super().__init__(path, SCHEMA, expiring={SESSIONS: "expires_at", HISTORY: "expires_at"})
        self._ttl_s = ttl_days * 86400

    # -- reads -------------------------------------------------------------------
    def item(self, session_id: str, turn: int) -> StoredItem | None:
        row = self._row(SESSIONS, session_id, turn)
        return msgspec.convert(row, StoredItem, strict=False) if row is not None else None

    @guarded
    def messages(self, session_id: str, limit: int = 20) -> list[TurnRecord]:
        rows = self.connection().execute(
            f"SELECT item FROM {SESSIONS} WHERE session_id = ? AND turn > ? ORDER BY turn DESC LIMIT ?",
            (session_id, HEADER_TURN, limit),
        )
        return records([json.loads(r[0]) for r in reversed(rows.fetchall())], TurnRecord)

    def intents(self, session_id: str, limit: int = 200) -> list[HistoryRecord]:
        rows = self.connection().execute(
            f"SELECT item FROM {HISTORY} WHERE session_id = ? ORDER BY turn LIMIT ?", (session_id, limit)
        )
        return records([json.loads(r[0]) for r in rows.fetchall()], HistoryRecord)

    def history_pages(
        self, day: str, after: str = "", before: str = LAST_KEY, newest_first: bool = False
    ) -> Iterator[Page]:
        # the day's keys start with the day (`export_key`): its range of the index, then `after`/`before`
        low, high = max(after, day), min(before, day + LAST_KEY)
        while True:
            items = records(self._page(low, high, newest_first), HistoryRecord)
            yield Page(items, more=len(items) == PAGE_ROWS)
            if len(items) < PAGE_ROWS:
                return
            if newest_first:
                high = items[-1].export_key
            else:
                low = items[-1].export_key

    @guarded
    def _page(self, low: str, high: str, newest_first: bool) -> list[dict[str, Any]]:
        rows = self.connection().execute(
            f"SELECT item FROM {HISTORY} WHERE export_key > ? AND export_key < ? "
            f"ORDER BY export_key {'DESC' if newest_first else 'ASC'} LIMIT ?",
            (low, high, PAGE_ROWS),
        )
        return [json.loads(r[0]) for r in rows.fetchall()]

    # -- writes ------------------------------------------------------------------
    @guarded
    def begin_turn(self, session_id: str, owner: str) -> int:
        now = now_iso()
        with self.transaction() as db:
            header = self._row(SESSIONS, session_id, HEADER_TURN)
            if header is not None and header.get("owner") != owner:
                raise self.refused(session_id)
            header = header or {"session_id": session_id, "turn": HEADER_TURN, "owner": owner, "created_at": now}
            header["turns"] = int(header.get("turns", 0)) + 1
            header["expires_at"] = int(time.time()) + self._ttl_s
            db.execute(
                f"INSERT INTO {SESSIONS} (session_id, turn, expires_at, item) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (session_id, turn) DO UPDATE SET expires_at = excluded.expires_at, item = excluded.item",
                (session_id, HEADER_TURN, header["expires_at"], _dump(header)),
            )
        return header["turns"]

    def insert_turn(self, turn: Turn) -> bool:
        session_item, history_item = turn_items(turn, ttl_s=self._ttl_s)
        key = (turn.session_id, turn.number)
        try:
            with self.transaction() as db:
                db.execute(
                    f"INSERT INTO {SESSIONS} (session_id, turn, expires_at, item) VALUES (?, ?, ?, ?)",
                    (*key, session_item.expires_at, _dump(msgspec.to_builtins(session_item))),
                )
                db.execute(
                    f"INSERT INTO {HISTORY} (session_id, turn, expires_at, export_key, item) VALUES (?, ?, ?, ?, ?)",
                    (*key, history_item.expires_at, history_item.export_key, _dump(msgspec.to_builtins(history_item))),
                )
            return True
        except sqlite3.IntegrityError:
            return False  # the key is taken: by this very request (a retry), or by another one

    def write_feedback(self, session_id: str, owner: str, turn: int, feedback: Feedback) -> None:
        # one write transaction holds the file's write lock from its first read: no other writer interleaves
        with self.transaction() as db:
            version = self.feedback_target(session_id, owner, turn).feedback_version
            item, history = self._row(SESSIONS, session_id, turn), self._row(HISTORY, session_id, turn)
            if item is None or history is None:
                raise TurnNotFound(session_id, turn)
            mark = FeedbackMark.after(version, feedback, session_id, turn)
            db.execute(
                f"UPDATE {SESSIONS} SET item = ? WHERE session_id = ? AND turn = ?",
                (_dump(item | mark.on_session()), session_id, turn),
            )
            db.execute(
                f"UPDATE {HISTORY} SET item = ?, export_key = ? WHERE session_id = ? AND turn = ?",
                (_dump(history | mark.on_history()), mark.export_key, session_id, turn),
            )

    # -- the export's watermark: a row of its own, claimed and committed under the write lock ------
    @guarded
    def export_mark(self) -> ExportMark:
        row = self._row(HISTORY, *WATERMARK)
        return msgspec.convert(row, ExportMark) if row else ExportMark()

    @guarded
    def claim_export(self, current: str | None, start: str, end: str, parts: list[str]) -> None:
        with self.transaction():
            mark = self.export_mark()
            if not mark.claimable(current):
                raise ExportBusy(BUSY)
            self._put_mark(mark.claimed(start, end, parts))

    @guarded
    def commit_export(self, end: str) -> None:
        with self.transaction():
            mark = self.export_mark()
            if mark.pending is None or mark.pending.end != end:
                raise ExportBusy("the export's pending range changed under it; run the export again")
            self._put_mark(mark.committed(end))

    def _put_mark(self, mark: ExportMark) -> None:
        columns = "session_id, turn, expires_at, export_key, item"
        self.connection().execute(
            f"INSERT OR REPLACE INTO {HISTORY} ({columns}) VALUES (?, ?, ?, NULL, ?)",
            (*WATERMARK, NEVER, msgspec.json.encode(mark).decode()),
        )

    # -- the file ----------------------------------------------------------------
    def _row(self, table: str, session_id: str, turn: int) -> dict[str, Any] | None:
        row = (
            self.connection()
            .execute(f"SELECT item FROM {table} WHERE session_id = ? AND turn = ?", (session_id, turn))
            .fetchone()
        )
        return json.loads(row[0]) if row else None


def _dump(item: dict[str, Any]) -> str:
    return json.dumps(item, ensure_ascii=False)
