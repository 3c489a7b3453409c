"""Sessions and intent history in one SQLite file: the embedded store (ADR 0044).

`assist ask` from a checkout needs no cloud and no running stack: with no AWS configured,
SESSION_STORE=auto keeps sessions here (SESSION_STORE_FILE, default .assist/sessions.sqlite3).
The two tables mirror the DynamoDB ones — same keys, same items (stored as JSON) — and every
write is a transaction that takes the database's write lock first (BEGIN IMMEDIATE), which
gives the DynamoDB store's guarantees across threads and processes:

- `begin_turn`: read-and-increment of the header's counter under the lock, so two turns of one
  session never get the same number; the first turn sets the owner, anyone else is not found;
- `append_turn`: both items inserted in one transaction, on primary keys that refuse a second
  insert: a retry of the same request is recognised by its request id, any other is a conflict.

WAL journaling lets readers run while a turn is written; synchronous=FULL makes each committed
turn durable. Expired items (expires_at, as DynamoDB's TTL) are removed when a process first
opens the file.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from assist.logs import get_logger
from assist.memory.store import (
    EXPORT_DAY,
    EXPORT_KEY,
    HEADER_TURN,
    SessionNotFound,
    Store,
    StoreUnavailable,
    Turn,
    TurnConflict,
    TurnNotFound,
    export_key,
    turn_items,
)

log = get_logger(__name__)
P = ParamSpec("P")
R = TypeVar("R")
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


def file_guarded(method: Callable[P, R]) -> Callable[P, R]:
    """SQLite failures as StoreUnavailable: a lock held too long is transient; a file that cannot be
    opened or written is configuration, and the message says which file and what to do."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except sqlite3.Error as exc:
            store: FileSessionStore = args[0]  # type: ignore[assignment]
            detail = str(exc)
            hint = None
            if "locked" not in detail and "busy" not in detail:
                hint = (
                    f"cannot use the session file {store.path} ({detail}): check that its directory is "
                    "writable and the file is an assist session store, or set SESSION_STORE_FILE to another path"
                )
            log.warning("memory.store_unavailable", operation=method.__name__, code=type(exc).__name__, error=detail)
            raise StoreUnavailable(method.__name__, type(exc).__name__, hint) from exc

    return wrapper


class FileSessionStore(Store):
    """The embedded backend: the `Store` interface over one SQLite file."""

    def __init__(self, path: str | Path, ttl_days: int = 30) -> None:
        self.path = Path(path)
        self._ttl_s = ttl_days * 86400
        self._local = threading.local()  # a connection per thread: sqlite3 connections are not shared
        self._schema_lock = threading.Lock()
        self._ready = False

    # -- reads -------------------------------------------------------------------
    @file_guarded
    def messages(self, session_id: str, limit: int = 20) -> list[dict[str, Any]]:
        rows = self.connection().execute(
            f"SELECT item FROM {SESSIONS} WHERE session_id = ? AND turn > ? ORDER BY turn DESC LIMIT ?",
            (session_id, HEADER_TURN, limit),
        )
        return [json.loads(r[0]) for r in reversed(rows.fetchall())]

    @file_guarded
    def transcript(self, session_id: str, owner: str, limit: int = 200) -> tuple[list[dict], list[dict]]:
        header = self.item(self.connection(), SESSIONS, session_id, HEADER_TURN)
        if not header or header.get("owner") != owner:
            raise SessionNotFound(session_id)
        rows = self.connection().execute(
            f"SELECT item FROM {HISTORY} WHERE session_id = ? ORDER BY turn LIMIT ?", (session_id, limit)
        )
        return self.messages(session_id, limit=limit), [json.loads(r[0]) for r in rows.fetchall()]

    # -- writes ------------------------------------------------------------------
    @file_guarded
    def begin_turn(self, session_id: str, owner: str) -> int:
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        with self.transaction() as db:
            header = self.item(db, SESSIONS, session_id, HEADER_TURN)
            if header is not None and header.get("owner") != owner:
                log.warning("memory.owner_refused", session_id=session_id)
                raise SessionNotFound(session_id)
            header = header or {"session_id": session_id, "turn": HEADER_TURN, "owner": owner, "created_at": now}
            header["turns"] = int(header.get("turns", 0)) + 1
            header["expires_at"] = int(time.time()) + self._ttl_s
            db.execute(
                f"INSERT INTO {SESSIONS} (session_id, turn, expires_at, item) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (session_id, turn) DO UPDATE SET expires_at = excluded.expires_at, item = excluded.item",
                (session_id, HEADER_TURN, header["expires_at"], _dump(header)),
            )
        return header["turns"]

    @file_guarded
    def append_turn(self, turn: Turn) -> bool:
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
            pass  # the key is taken: by this very request (a retry), or by another one
        existing = self.item(self.connection(), SESSIONS, *key) or {}
        if existing.get("request_id") == turn.request_id:
            log.info("memory.turn_already_written", session_id=turn.session_id, turn=turn.number)
            return False
        raise TurnConflict(f"session {turn.session_id} turn {turn.number} belongs to another request")

    @file_guarded
    def set_feedback(self, session_id: str, owner: str, turn: int, feedback: dict[str, Any]) -> None:
        # one write transaction holds the file's write lock from its first read: no other writer interleaves
        with self.transaction() as db:
            header = self.item(db, SESSIONS, session_id, HEADER_TURN)
            if not header or header.get("owner") != owner:
                raise SessionNotFound(session_id)
            item = self.item(db, SESSIONS, session_id, turn) if turn > HEADER_TURN else None
            history = self.item(db, HISTORY, session_id, turn) if item else None
            if item is None or history is None:
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

    # -- the file ----------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, holding the write lock from its start: the reads inside it see
        what no other writer can change before it commits."""
        with write_lock(self.connection()) as db:
            yield db

    @staticmethod
    def item(db: sqlite3.Connection, table: str, session_id: str, turn: int) -> dict[str, Any] | None:
        row = db.execute(f"SELECT item FROM {table} WHERE session_id = ? AND turn = ?", (session_id, turn)).fetchone()
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
            db.executescript(SCHEMA)
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
    autocommit mode: every write opens its own BEGIN IMMEDIATE (`write_lock`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = FULL")
    return db


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
    return json.dumps(item, ensure_ascii=False, default=float)  # Decimal confidences as numbers
