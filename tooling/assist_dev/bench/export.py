"""`assist bench export`: the label export over N intent-history entries on the moto server —
time and DynamoDB read units (estimated from item sizes, see assist/aws/capacity.py) —
beside a full-table Scan, what an export without the `by-export-day` index would read on
every run, however few entries were new."""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime, timedelta
from typing import Any

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
    from assist.contracts import IntentEntry, QueryType
    from assist.memory.dynamodb import DynamoDBStore
    from assist.memory.store import Turn

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


def run(settings: Settings, entries: int, sessions: int) -> dict[str, Any]:
    from assist.aws.capacity import query_units
    from assist.aws.clients import client
    from assist.aws.resources import ensure_resources
    from assist.export.labels import LabelExporter
    from assist.export.sink import LocalSink
    from assist.memory.dynamodb import DynamoDBStore
    from assist_dev.local.stack import MotoServer, local_settings

    moto = MotoServer().start()
    try:
        s = local_settings(settings, moto.url, None).with_(export={"settle_s": 0.0})
        ddb = client("dynamodb", s)
        store = DynamoDBStore(ddb, s.sessions.table, s.sessions.intent_history_table)
        ensure_resources(s, ddb, client("s3", s))
        t0 = time.perf_counter()
        populate(s, ddb, entries, sessions, datetime.now(UTC) - timedelta(days=1, hours=1), span=timedelta(days=1))
        load_s = time.perf_counter() - t0

        with tempfile.TemporaryDirectory() as out:
            first = LabelExporter(s, store, LocalSink(out)).run(force=True)
            new = max(1, entries // 100)  # a day of traffic later: 1% new entries
            populate(s, ddb, new, max(1, new // 5), datetime.now(UTC), timedelta(seconds=1), "later")
            time.sleep(1.1)  # the next run exports up to "now": let the new turns' timestamps pass
            later = LabelExporter(s, store, LocalSink(out)).run(force=True)
        scan_units, t1 = 0.0, time.perf_counter()
        for page in ddb.get_paginator("scan").paginate(TableName=s.sessions.intent_history_table):
            scan_units += query_units(page.get("Items", []))
        scan_s = time.perf_counter() - t1
    finally:
        moto.stop()

    def figures(r: Any) -> dict[str, Any]:
        return {
            "seconds": r.seconds,
            "read_units": r.read_units,
            "records": r.records,
            "files": len(r.files),
            "records_per_s": round(r.records / max(r.seconds, 1e-9)),
        }

    return {
        "entries": entries,
        "sessions": sessions,
        "load_s": round(load_s, 2),
        "first_export": figures(first),
        "incremental_export": {**figures(later), "new_entries": new},
        "baseline_full_scan": {"seconds": round(scan_s, 3), "read_units": round(scan_units, 2)},
        "ratio_incremental_to_scan": {
            "read_units": round(later.read_units / scan_units, 4) if scan_units else None,
            "seconds": round(later.seconds / scan_s, 4) if scan_s else None,
        },
    }
