"""Which session store a process uses: the one SESSION_STORE names (ADR 0044, ADR 0061).

Apart from memory/store.py so that neither backend module imports the other, nor the interface
its implementations: the library's import graph has no cycles (tests/unit/test_import_cycles.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.memory.store import Store
    from assist.memory.widget_store import WidgetStore
    from assist.settings import Settings

log = get_logger(__name__)


def open_store(settings: Settings, dynamodb: Any = None) -> Store:
    """DynamoDB through `dynamodb` (a client, or a callable that builds one), or the embedded SQLite
    file. boto3 is not imported for the file store."""
    if settings.session_backend == "file":
        from assist.memory.sqlite import SQLiteStore

        log.info("memory.store_opened", backend="file", path=settings.sessions.store_file)
        return SQLiteStore(settings.sessions.store_file, settings.sessions.ttl_days)
    from assist.memory.dynamodb import DynamoDBStore

    if dynamodb is None or callable(dynamodb):
        from assist.aws.clients import client

        dynamodb = dynamodb() if callable(dynamodb) else client("dynamodb", settings)
    return DynamoDBStore(
        dynamodb, settings.sessions.table, settings.sessions.intent_history_table, settings.sessions.ttl_days
    )


def open_widget_store(settings: Settings, dynamodb: Any = None) -> WidgetStore:
    """The widget's table (site keys, counters) in the same backend as the sessions: WIDGET_TABLE on DynamoDB,
    or a table of the embedded store's file."""
    if settings.session_backend == "file":
        from assist.memory.widget_sqlite import SQLiteWidgetStore

        return SQLiteWidgetStore(settings.sessions.store_file)
    from assist.memory.widget_dynamodb import DynamoDBWidgetStore

    if dynamodb is None:
        from assist.aws.clients import client

        dynamodb = client("dynamodb", settings)
    return DynamoDBWidgetStore(dynamodb, settings.widget.table)
