"""The embedded backend of the widget's table (`WidgetStore`, widget/store/store.py): a table of the embedded
store's file, beside the sessions (ADR 0089).

Every counter step reads and writes its row inside one write transaction (BEGIN IMMEDIATE takes the file's
write lock first), so concurrent steps from any thread or process sharing the file are serialised: the
pure steps of widget_store.py decide, nothing interleaves. Expired rows (expires_at, as DynamoDB's TTL)
are removed when a process first opens the table.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import msgspec

from assist.sessions.sqlite import create_schema, open_database, write_lock
from assist.sessions.store import guarded
from assist.widget.store.store import (
    DENIED_PARTITION,
    KEYS_PARTITION,
    SiteKey,
    Taken,
    WidgetStore,
    rate_step,
    window_step,
)

TABLE = "widget"
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    pk TEXT NOT NULL, sk TEXT NOT NULL, expires_at INTEGER, item TEXT NOT NULL, PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
"""
COUNTER = "-"  # a counter's sort key: one row per counter name
GRACE_S = 60  # a counter row outlives its window a little, so a late reader still sees its end


class SQLiteWidgetStore(WidgetStore):
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._schema_lock = threading.Lock()
        self._ready = False

    def failure(self, exc: Exception) -> tuple[str, str | None] | None:
        """A lock held too long is transient; a file that cannot be used is configuration, as for the sessions."""
        if not isinstance(exc, sqlite3.Error):
            return None
        if "locked" in str(exc) or "busy" in str(exc):
            return type(exc).__name__, None
        return type(exc).__name__, f"cannot use the widget's table in {self.path} ({exc}): check SESSION_STORE_FILE"

    # -- keys ------------------------------------------------------------------------
    @guarded
    def put_key(self, key: SiteKey) -> None:
        with write_lock(self._db()) as db:
            db.execute(
                f"INSERT INTO {TABLE} (pk, sk, expires_at, item) VALUES (?, ?, NULL, ?)",
                (KEYS_PARTITION, key.key, msgspec.json.encode(key).decode()),
            )

    @guarded
    def get_key(self, key: str) -> SiteKey | None:
        row = self._db().execute(f"SELECT item FROM {TABLE} WHERE pk = ? AND sk = ?", (KEYS_PARTITION, key)).fetchone()
        return msgspec.json.decode(row[0], type=SiteKey) if row else None

    @guarded
    def all_keys(self) -> list[SiteKey]:
        rows = self._db().execute(f"SELECT item FROM {TABLE} WHERE pk = ?", (KEYS_PARTITION,)).fetchall()
        return sorted((msgspec.json.decode(r[0], type=SiteKey) for r in rows), key=lambda k: k.created_at)

    @guarded
    def revoke_key(self, key: str, at: str) -> SiteKey | None:
        with write_lock(self._db()) as db:
            found = self.get_key(key)
            if found is None or found.revoked_at:
                return found
            revoked = msgspec.structs.replace(found, revoked_at=at)
            db.execute(
                f"UPDATE {TABLE} SET item = ? WHERE pk = ? AND sk = ?",
                (msgspec.json.encode(revoked).decode(), KEYS_PARTITION, key),
            )
            return revoked

    # -- counters --------------------------------------------------------------------
    @guarded
    def window(self, name: str, limit: int, window_s: float, now_ms: int) -> Taken:
        with write_lock(self._db()) as db:
            state = self._counter(db, name)
            taken, count, end = window_step(state.get("n", 0), state.get("window_end"), now_ms, limit, window_s)
            if taken.allowed:
                self._put_counter(db, name, {"n": count, "window_end": end}, end)
            return taken

    @guarded
    def rate(self, name: str, rate_per_s: float, burst: int, now_ms: int) -> Taken:
        with write_lock(self._db()) as db:
            taken, tat = rate_step(self._counter(db, name).get("tat"), now_ms, rate_per_s, burst)
            if tat is not None:
                self._put_counter(db, name, {"tat": tat}, tat)
            return taken

    @guarded
    def count(self, name: str, now_ms: int) -> int:
        state = self._counter(self._db(), name)
        return int(state.get("n", 0)) if state.get("window_end", 0) > now_ms else 0

    @guarded
    def deny_visitor(self, visitor: str, at: str) -> str:
        with write_lock(self._db()) as db:
            db.execute(
                f"INSERT OR IGNORE INTO {TABLE} (pk, sk, expires_at, item) VALUES (?, ?, NULL, ?)",
                (DENIED_PARTITION, visitor, json.dumps({"denied_at": at})),
            )
        return self.denied(visitor) or at

    @guarded
    def denied(self, visitor: str) -> str | None:
        row = self._db().execute(f"SELECT item FROM {TABLE} WHERE pk = ? AND sk = ?", (DENIED_PARTITION, visitor))
        found = row.fetchone()
        return str(json.loads(found[0])["denied_at"]) if found else None

    @staticmethod
    def _counter(db: Any, name: str) -> dict[str, Any]:
        row = db.execute(f"SELECT item FROM {TABLE} WHERE pk = ? AND sk = ?", (name, COUNTER)).fetchone()
        return json.loads(row[0]) if row else {}

    @staticmethod
    def _put_counter(db: Any, name: str, state: dict[str, Any], until_ms: int) -> None:
        db.execute(
            f"INSERT OR REPLACE INTO {TABLE} (pk, sk, expires_at, item) VALUES (?, ?, ?, ?)",
            (name, COUNTER, until_ms // 1000 + GRACE_S, json.dumps(state)),
        )

    def _db(self) -> Any:
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = open_database(self.path)
            # a counter is not a turn: losing the last hits to a power cut is harmless, an fsync per hit is not
            # (6 ms a step with FULL here, 1 ms with NORMAL; WAL keeps the file consistent either way)
            db.execute("PRAGMA synchronous = NORMAL")
        if not self._ready:
            with self._schema_lock:
                if not self._ready:
                    create_schema(db, SCHEMA)
                    with write_lock(db) as tx:
                        tx.execute(f"DELETE FROM {TABLE} WHERE expires_at < ?", (int(time.time()),))
                    self._ready = True
        return db
