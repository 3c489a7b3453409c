"""Idempotency records in the embedded store's SQLite file (ADR 0049): Powertools' persistence layer
contract over a table of its own, beside the sessions in SESSION_STORE_FILE.

Powertools' base class owns the policy (key and payload hashes, expiry, in-progress expiry,
payload validation); this backend implements its four storage methods. `_put_record` is the
DynamoDB layer's conditional put as one write transaction: the row is taken only when absent,
expired, or an in-progress claim whose holder died; otherwise the row already there is handed
back (validated against the new payload), as DynamoDB's ReturnValuesOnConditionCheckFailure does.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from aws_lambda_powertools.utilities.idempotency import BasePersistenceLayer
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyItemAlreadyExistsError,
    IdempotencyItemNotFoundError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import STATUS_CONSTANTS, DataRecord

from assist.sessions.sqlite import create_schema, open_database, write_lock

if TYPE_CHECKING:
    import sqlite3

TABLE = "idempotency"
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    id TEXT PRIMARY KEY, status TEXT NOT NULL, expiration INTEGER NOT NULL,
    in_progress_expiration INTEGER, data TEXT, validation TEXT
) WITHOUT ROWID;
"""
COLUMNS = "id, status, expiration, in_progress_expiration, data, validation"


class SQLitePersistenceLayer(BasePersistenceLayer):
    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        self._local = threading.local()
        self._schema_lock = threading.Lock()
        self._ready = False

    def _get_record(self, idempotency_key: str) -> DataRecord:
        record = self._read(self._db(), idempotency_key)
        if record is None:
            raise IdempotencyItemNotFoundError
        return record

    def _put_record(self, data_record: DataRecord) -> None:
        now = time.time()
        with write_lock(self._db()) as db:
            old = self._read(db, data_record.idempotency_key)
            if old is not None and not _free(old, now):
                self._validate_payload(data_payload=data_record, stored_data_record=old)
                raise IdempotencyItemAlreadyExistsError(old_data_record=old)
            db.execute(
                f"INSERT OR REPLACE INTO {TABLE} ({COLUMNS}) VALUES (?, ?, ?, ?, NULL, ?)",
                (
                    data_record.idempotency_key,
                    data_record.status,
                    data_record.expiry_timestamp,
                    data_record.in_progress_expiry_timestamp,
                    data_record.payload_hash or None,
                ),
            )

    def _update_record(self, data_record: DataRecord) -> None:
        with write_lock(self._db()) as db:
            db.execute(
                f"UPDATE {TABLE} SET status = ?, expiration = ?, data = ?, validation = ? WHERE id = ?",
                (
                    data_record.status,
                    data_record.expiry_timestamp,
                    data_record.response_data,
                    data_record.payload_hash or None,
                    data_record.idempotency_key,
                ),
            )

    def _delete_record(self, data_record: DataRecord) -> None:
        with write_lock(self._db()) as db:
            db.execute(f"DELETE FROM {TABLE} WHERE id = ?", (data_record.idempotency_key,))

    @staticmethod
    def _read(db: sqlite3.Connection, key: str) -> DataRecord | None:
        row = db.execute(f"SELECT {COLUMNS} FROM {TABLE} WHERE id = ?", (key,)).fetchone()
        if row is None:
            return None
        key, status, expiration, in_progress, data, validation = row
        return DataRecord(key, status, expiration, in_progress, data or "", validation or "")

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = open_database(self.path)
        if not self._ready:
            with self._schema_lock:
                if not self._ready:
                    create_schema(db, SCHEMA)
                    with write_lock(db) as tx:  # expired records gone, as DynamoDB's TTL does
                        tx.execute(f"DELETE FROM {TABLE} WHERE expiration < ?", (int(time.time()),))
                    self._ready = True
        return db


def _free(record: DataRecord, now: float) -> bool:
    """The conditional put's condition: expired, or in progress past its holder's deadline."""
    if record.expiry_timestamp is not None and record.expiry_timestamp < now:
        return True
    held_until = record.in_progress_expiry_timestamp
    return record.status == STATUS_CONSTANTS["INPROGRESS"] and held_until is not None and held_until < now * 1000
