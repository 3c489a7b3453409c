"""Which session store a process uses: the one SESSION_STORE names (ADR 0044, ADR 0061).

Apart from sessions/store.py so that neither backend module imports the other, nor the interface
its implementations: no package or module imports another that imports it (ADR 0071).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assist.aws.clients import client
from assist.logs import get_logger
from assist.sessions.dynamodb import DynamoDBStore
from assist.sessions.sqlite import SQLiteStore

if TYPE_CHECKING:
    from assist.sessions.store import SessionStore
    from assist.settings import Settings

log = get_logger(__name__)


def open_store(settings: Settings, dynamodb: Any = None) -> SessionStore:
    """DynamoDB through `dynamodb` (a client, or a callable that builds one), or the embedded SQLite
    file. boto3 is not imported for the file store."""
    if settings.session_backend == "file":
        log.info("memory.store_opened", backend="file", path=settings.sessions.store_file)
        return SQLiteStore(settings.sessions.store_file, settings.sessions.ttl_days)

    if dynamodb is None or callable(dynamodb):
        dynamodb = dynamodb() if callable(dynamodb) else client("dynamodb", settings)
    return DynamoDBStore(
        dynamodb, settings.sessions.table, settings.sessions.intent_history_table, settings.sessions.ttl_days
    )
