"""Which session store a process uses: the one SESSION_STORE names (ADR 0044, ADR 0061).

Apart from memory/store.py so that neither backend module imports the other, nor the interface
its implementations: no package or module imports another that imports it (ADR 0071).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assist.aws.clients import client
from assist.logs import get_logger
from assist.memory.dynamodb import DynamoDBStore
from assist.memory.sqlite import SQLiteStore
from assist.memory.widget_dynamodb import DynamoDBWidgetStore
from assist.memory.widget_sqlite import SQLiteWidgetStore

if TYPE_CHECKING:
    from assist.memory.store import SessionStore
    from assist.memory.widget_store import WidgetStore
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


def open_widget_store(settings: Settings, dynamodb: Any = None) -> WidgetStore:
    """The widget's table (site keys, counters) in the same backend as the sessions: WIDGET_TABLE on DynamoDB,
    or a table of the embedded store's file."""
    if settings.session_backend == "file":
        return SQLiteWidgetStore(settings.sessions.store_file)
    return DynamoDBWidgetStore(dynamodb or client("dynamodb", settings), settings.widget.table)
