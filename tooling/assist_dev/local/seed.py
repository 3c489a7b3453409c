"""N turns written into the session tables as the engine writes them (the store's own item shapes), in batches:
the data the export and report benchmarks and the deploy rehearsal's export flow read back."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from assist.contracts import IntentEntry, QueryType
from assist.sessions.dynamodb import DynamoDBStore
from assist.sessions.items import Turn
from assist.settings import Settings


def populate(
    settings: Settings,
    ddb: Any,
    entries: int,
    sessions: int,
    start: datetime,
    span: timedelta,
    tag: str = "bench",
    confidences: tuple[str, ...] = (),
) -> None:
    """Write N turns as the engine does (the store's own item shapes), in batches; with `confidences`, the
    turns' retrieval confidences cycle through them."""
    store = DynamoDBStore(
        ddb, settings.sessions.table, settings.sessions.intent_history_table, settings.sessions.ttl_days
    )
    step = span / max(1, entries)
    pending: dict[str, list[dict[str, Any]]] = {settings.sessions.table: [], settings.sessions.intent_history_table: []}

    def flush() -> None:
        for table, items in pending.items():
            for i in range(0, len(items), 25):
                request = {table: [{"PutRequest": {"Item": it}} for it in items[i : i + 25]]}
                while request:
                    request = ddb.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}
            items.clear()

    for n in range(entries):
        message = f"how do I rotate my API key number {n}? mail ops{n}@corp.example"
        turn = Turn(
            session_id=f"{tag}-{n % sessions}",
            number=n // sessions + 1,
            request_id=f"{tag}{n}",
            message=message,
            answer="…",
            entry=IntentEntry(QueryType.RETRIEVAL, message[:60], "llm", 1.0),
            retrieval_confidence=confidences[n % len(confidences)] if confidences else None,
        )
        session_item, history_item = store.items(turn, at=start + step * n)
        pending[settings.sessions.table].append(session_item)
        pending[settings.sessions.intent_history_table].append(history_item)
        if len(pending[settings.sessions.table]) >= 500:
            flush()
    flush()
