"""`assist bench export`: the label export over N intent-history entries on the moto server —
time and DynamoDB read units (estimated from item sizes, see assist/aws/capacity.py) —
beside a full-table Scan, what an export without the `by-export-day` index would read on
every run, however few entries were new."""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from assist.aws.capacity import query_units
from assist.aws.clients import client
from assist.export.labels import LabelExporter
from assist.export.sink import LocalSink
from assist.sessions.dynamodb import DynamoDBStore
from assist.settings import Settings
from assist_dev.local.resources import ensure_resources
from assist_dev.local.seed import populate
from assist_dev.local.stack import MotoServer, local_settings


def run(settings: Settings, entries: int, sessions: int) -> dict[str, Any]:
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
