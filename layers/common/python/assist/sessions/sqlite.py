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

import contextlib
import json
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assist.logs import get_logger
from assist.sessions.keys import EXPORT_DAY, EXPORT_KEY, HEADER_TURN, LAST_KEY, WATERMARK, export_key
from assist.sessions.store import (
    BUSY,
    ExportBusy,
    Page,
    SessionStore,
    Turn,
    TurnNotFound,
    guarded,
    turn_items,
)

log = get_logger(__name__)
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
BUSY_TIMEOUT_S = 10.0  # another process holding the write lock longer than this is a fault, not a queue
PAGE_ROWS = 1000  # a history page: the size of a DynamoDB page of small items
NEVER = 2**62  # the export's watermark row never expires


class SQLiteStore(SessionStore):
    """The `Store` interface over one SQLite file."""

    def __init__(self, path: str | Path, ttl_days: int = 30) -> None:
        self.path = Path(path)
        self._ttl_s = ttl_days * 86400
        self._local = threading.local()  # a connection per thread: sqlite3 connections are not shared
        self._schema_lock = threading.Lock()
        self._ready = False

    def failure(self, exc: Exception) -> tuple[str, str | None] | None:
        """A lock held too long is transient; a file that cannot be opened or written is configuration,
        and the advice says which file and what to do."""
        if not isinstance(exc, sqlite3.Error):
            return None
        detail = str(exc)
        if "locked" in detail or "busy" in detail:
            return type(exc).__name__, None
        return type(exc).__name__, (
            f"cannot use the session file {self.path} ({detail}): check that its directory is "
            "writable and the file is an assist session store, or set SESSION_STORE_FILE to another path"
        )

    # -- reads -------------------------------------------------------------------
    def item(self, session_id: str, turn: int) -> dict[str, Any] | None:
        return self._row(SESSIONS, session_id, turn)

    @guarded
    def messages(self, session_id: str, limit: int = 20) -> list[dict[str, Any]]:
        rows = self.connection().execute(
            f"SELECT item FROM {SESSIONS} WHERE session_id = ? AND turn > ? ORDER BY turn DESC LIMIT ?",
            (session_id, HEADER_TURN, limit),
        )
        return [json.loads(r[0]) for r in reversed(rows.fetchall())]

    def intents(self, session_id: str, limit: int = 200) -> list[dict[str, Any]]:
        rows = self.connection().execute(
            f"SELECT item FROM {HISTORY} WHERE session_id = ? ORDER BY turn LIMIT ?", (session_id, limit)
        )
        return [json.loads(r[0]) for r in rows.fetchall()]

    def history_pages(
        self, day: str, after: str = "", before: str = LAST_KEY, newest_first: bool = False
    ) -> Iterator[Page]:
        # the day's keys start with the day (`export_key`): its range of the index, then `after`/`before`
        low, high = max(after, day), min(before, day + LAST_KEY)
        while True:
            items = self._page(low, high, newest_first)
            yield Page(items, more=len(items) == PAGE_ROWS)
            if len(items) < PAGE_ROWS:
                return
            if newest_first:
                high = items[-1][EXPORT_KEY]
            else:
                low = items[-1][EXPORT_KEY]

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
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        with self.transaction() as db:
            header = self.item(session_id, HEADER_TURN)
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
                    (*key, session_item["expires_at"], _dump(session_item)),
                )
                db.execute(
                    f"INSERT INTO {HISTORY} (session_id, turn, expires_at, export_key, item) VALUES (?, ?, ?, ?, ?)",
                    (*key, history_item["expires_at"], history_item[EXPORT_KEY], _dump(history_item)),
                )
            return True
        except sqlite3.IntegrityError:
            return False  # the key is taken: by this very request (a retry), or by another one

    def write_feedback(self, session_id: str, owner: str, turn: int, feedback: dict[str, Any]) -> None:
        # one write transaction holds the file's write lock from its first read: no other writer interleaves
        with self.transaction() as db:
            item = self.feedback_target(session_id, owner, turn)
            history = self._row(HISTORY, session_id, turn)
            if history is None:
                raise TurnNotFound(session_id, turn)
            version = int(item.get("feedback_version", 0)) + 1
            key = export_key(feedback["at"], session_id, turn)
            item |= {"feedback": feedback, "feedback_version": version}
            history |= {
                "feedback": feedback,
                "feedback_version": version,
                EXPORT_DAY: feedback["at"][:10],
                EXPORT_KEY: key,
            }
            db.execute(
                f"UPDATE {SESSIONS} SET item = ? WHERE session_id = ? AND turn = ?", (_dump(item), session_id, turn)
            )
            db.execute(
                f"UPDATE {HISTORY} SET item = ?, export_key = ? WHERE session_id = ? AND turn = ?",
                (_dump(history), key, session_id, turn),
            )

    # -- the export's watermark: a row of its own, claimed and committed under the write lock ------
    @guarded
    def export_mark(self) -> dict[str, Any]:
        return self._row(HISTORY, *WATERMARK) or {}

    @guarded
    def claim_export(self, current: str | None, start: str, end: str, parts: list[str]) -> None:
        with self.transaction():
            mark = self._row(HISTORY, *WATERMARK) or {}
            if "pending" in mark or mark.get("watermark") != current:
                raise ExportBusy(BUSY)
            self._put_mark({**mark, "pending": {"start": start, "end": end, "parts": parts}})

    @guarded
    def commit_export(self, end: str) -> None:
        with self.transaction():
            mark = self._row(HISTORY, *WATERMARK) or {}
            if mark.get("pending", {}).get("end") != end:
                raise ExportBusy("the export's pending range changed under it; run the export again")
            mark.pop("pending")
            self._put_mark(
                {**mark, "watermark": end, "exported_at": datetime.now(UTC).isoformat(timespec="milliseconds")}
            )

    def _put_mark(self, mark: dict[str, Any]) -> None:
        columns = "session_id, turn, expires_at, export_key, item"
        self.connection().execute(
            f"INSERT OR REPLACE INTO {HISTORY} ({columns}) VALUES (?, ?, ?, NULL, ?)",
            (*WATERMARK, NEVER, json.dumps(mark)),
        )

    # -- the file ----------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, holding the write lock from its start: the reads inside it (on this
        thread's connection) see what no other writer can change before it commits."""
        with write_lock(self.connection()) as db:
            yield db

    def _row(self, table: str, session_id: str, turn: int) -> dict[str, Any] | None:
        row = (
            self.connection()
            .execute(f"SELECT item FROM {table} WHERE session_id = ? AND turn = ?", (session_id, turn))
            .fetchone()
        )
        return json.loads(row[0]) if row else None

    def connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = open_database(self.path)
        if not self._ready:
            self._prepare(db)
        return db

    def _prepare(self, db: sqlite3.Connection) -> None:
        """Tables on first use, and expired items gone (the TTL), once per process."""
        with self._schema_lock:
            if self._ready:
                return
            create_schema(db, SCHEMA)
            now = int(time.time())
            with write_lock(db) as tx:
                removed = sum(
                    tx.execute(f"DELETE FROM {t} WHERE expires_at < ?", (now,)).rowcount for t in (SESSIONS, HISTORY)
                )
            if removed:
                log.info("memory.expired_removed", items=removed, path=str(self.path))
            self._ready = True


def open_database(path: Path) -> sqlite3.Connection:
    """A connection to the store's file (one per thread: sqlite3 connections are not shared), in
    autocommit mode: every write opens its own BEGIN IMMEDIATE (`write_lock`).

    The busy timeout is the first thing set (by `connect`, before any statement), and nothing here needs a
    lock: the journal mode is the file's own, set once when it was made (`_create`). Switching it on every
    connection, as before, takes an exclusive lock and could fail with "database is locked" when several
    connections opened at once (1 run in 25 of the concurrent-turns test; ADR 0093)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        _create(path)
    db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    db.execute("PRAGMA synchronous = FULL")
    return db


def _create(path: Path) -> None:
    """A new store file, already in WAL mode (which SQLite keeps in the file): made under a name of its own and
    linked into place, so no connection ever sees the file in another mode and two processes creating it at the
    same moment never race to switch it; the one that links second finds the first's file and uses it."""
    fd, made = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".new")
    os.close(fd)
    try:
        db = sqlite3.connect(made, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode = WAL")
        finally:
            db.close()
        with contextlib.suppress(FileExistsError):  # another process made it first: the same empty WAL file
            os.link(made, path)
    finally:
        os.unlink(made)


def create_schema(db: sqlite3.Connection, schema: str) -> None:
    """`CREATE … IF NOT EXISTS` statements inside one write transaction: BEGIN IMMEDIATE waits for the write
    lock under the busy timeout, where a bare DDL statement (a read that turns into a write) can fail at once
    with SQLITE_BUSY when another connection writes."""
    with write_lock(db):
        for statement in schema.split(";"):
            if statement.strip():
                db.execute(statement)


@contextmanager
def write_lock(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction holding the file's write lock from its first statement."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _dump(item: dict[str, Any]) -> str:
    return json.dumps(item, ensure_ascii=False)
