"""Which widget store a process uses: the session store's backend (SESSION_STORE), apart from
widget/store/store.py so that neither backend module imports the other (ADR 0071)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assist.aws.clients import client
from assist.widget.store.dynamodb import DynamoDBWidgetStore
from assist.widget.store.sqlite import SQLiteWidgetStore

if TYPE_CHECKING:
    from assist.settings import Settings
    from assist.widget.store.store import WidgetStore


def open_widget_store(settings: Settings, dynamodb: Any = None) -> WidgetStore:
    """The widget's table (site keys, counters) in the same backend as the sessions: WIDGET_TABLE on DynamoDB,
    or a table of the embedded store's file."""
    if settings.session_backend == "file":
        return SQLiteWidgetStore(settings.sessions.store_file)
    return DynamoDBWidgetStore(dynamodb or client("dynamodb", settings), settings.widget.table)
