"""The embedded stores' file: one SQLite file (SESSION_STORE_FILE) holding the sessions, the widget's table and
the idempotency records, each in tables of its own (ADR 0044, ADR 0093, ADR 0101).

`SQLiteFile` is what each of them opens: a connection per thread (sqlite3 connections are not shared), in
autocommit mode so that every write takes the file's write lock first (`write_lock`: BEGIN IMMEDIATE); its
tables made and its expired rows (the TTL) removed once per process; and its failures as `StoreUnavailable`
with advice. WAL journaling lets readers run while a write holds the lock.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from assist.logs import get_logger
from assist.tables.base import Backend

log = get_logger(__name__)
BUSY_TIMEOUT_S = 10.0  # another process holding the write lock longer than this is a fault, not a queue


class SQLiteFile(Backend):
    """Tables of the embedded store's file, as one store uses them.

    `schema`: its `CREATE … IF NOT EXISTS` statements; `expiring`: each table's expiry column (epoch seconds),
    whose past rows go when a process first opens the tables, as DynamoDB's TTL removes items; `synchronous`:
    FULL makes every commit durable (an fsync each), NORMAL may lose the last commits to a power cut (WAL keeps
    the file consistent either way); `what`: how a failure's advice names them."""

    def __init__(
        self,
        path: str | Path,
        schema: str,
        expiring: dict[str, str],
        synchronous: str = "FULL",
        what: str = "session file",
    ) -> None:
        self.path = Path(path)
        self._schema = schema
        self._expiring = expiring
        self._synchronous = synchronous
        self._what = what
        self._local = threading.local()
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
            f"cannot use the {self._what} {self.path} ({detail}): check that its directory is "
            "writable and the file is an assist session store, or set SESSION_STORE_FILE to another path"
        )

    def connection(self) -> sqlite3.Connection:
        """This thread's connection, the tables ready."""
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = open_database(self.path, self._synchronous)
        if not self._ready:
            self._prepare(db)
        return db

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, holding the write lock from its start: the reads inside it (on this
        thread's connection) see what no other writer can change before it commits."""
        with write_lock(self.connection()) as db:
            yield db

    def _prepare(self, db: sqlite3.Connection) -> None:
        """Tables on first use, and expired rows gone (the TTL), once per process."""
        with self._schema_lock:
            if self._ready:
                return
            create_schema(db, self._schema)
            now = int(time.time())
            with write_lock(db) as tx:
                removed = sum(
                    tx.execute(f"DELETE FROM {table} WHERE {column} < ?", (now,)).rowcount
                    for table, column in self._expiring.items()
                )
            if removed:
                log.info("memory.expired_removed", items=removed, path=str(self.path))
            self._ready = True


def open_database(path: Path, synchronous: str = "FULL") -> sqlite3.Connection:
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
    db.execute(f"PRAGMA synchronous = {synchronous}")
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
