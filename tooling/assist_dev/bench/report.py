"""`assist bench report`: the insights report over N intent-history entries on the moto server — the
index reads of a window of days (time and DynamoDB read units, estimated from item sizes as in
assist/aws/capacity.py), the gap clustering and the page — beside a full-table Scan, what a report
without the `by-export-day` index would read. The entries are seeded by `assist bench export`'s
`populate`, spread over `span_days`, their retrieval confidences cycling so that some are gaps."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from assist.aws.capacity import query_units
from assist.aws.clients import client
from assist.contracts import Confidence
from assist.embed.build import lazy_embedder
from assist.insights.gather import gather
from assist.insights.render import page
from assist.sessions.dynamodb import DynamoDBStore
from assist.settings import Settings
from assist_dev.local.resources import ensure_resources
from assist_dev.local.seed import populate
from assist_dev.local.stack import MotoServer, local_settings

C = Confidence
CONFIDENCES = (C.VERY_HIGH, C.HIGH, C.MEDIUM, C.HIGH, C.LOW, C.NONE, C.MEDIUM, C.HIGH, C.VERY_HIGH, C.HIGH)


def run(settings: Settings, entries: int, sessions: int, days: int, span_days: int) -> dict[str, Any]:
    # deferred, ADR 0071: numpy 0.13 s
    from assist.insights.gaps import clusters

    moto = MotoServer().start()
    try:
        s = local_settings(settings, moto.url, None).with_(insights={"max_entries": max(entries, 1)})
        ddb = client("dynamodb", s, read_timeout=600)
        ensure_resources(s, ddb, client("s3", s))
        now = datetime.now(UTC)
        t0 = time.perf_counter()
        span = timedelta(days=span_days)
        populate(s, ddb, entries, sessions, now - span, span=span, confidences=CONFIDENCES)
        load_s = time.perf_counter() - t0

        g = gather(
            s,
            DynamoDBStore(ddb, s.sessions.table, s.sessions.intent_history_table),
            days,
            now=now + timedelta(seconds=1),
        )
        embedder = lazy_embedder(s)()
        t1 = time.perf_counter()
        gaps = clusters([e["message"] for e in g.gaps()], embedder)
        html = page(g, gaps)
        rest_s = time.perf_counter() - t1

        scan_units, scanned, t2 = 0.0, 0, time.perf_counter()
        for p in ddb.get_paginator("scan").paginate(TableName=s.sessions.intent_history_table):
            scan_units += query_units(p.get("Items", []))
            scanned += len(p.get("Items", []))
        scan_s = time.perf_counter() - t2
    finally:
        moto.stop()
    return {
        "entries": entries,
        "span_days": span_days,
        "window_days": days,
        "load_s": round(load_s, 2),
        "report": {
            "entries_read": len(g.entries),
            "queries": g.queries,
            "read_units": round(g.read_units, 2),
            "read_seconds": g.seconds,
            "gap_questions": len(g.gaps()),
            "gap_clusters": len(gaps),
            "gaps_and_page_seconds": round(rest_s, 3),
            "page_bytes": len(html.encode()),
            "truncated": g.truncated,
        },
        "baseline_full_scan": {"items": scanned, "seconds": round(scan_s, 3), "read_units": round(scan_units, 2)},
        "ratio_report_to_scan": {
            "read_units": round(g.read_units / scan_units, 4) if scan_units else None,
            "seconds": round(g.seconds / scan_s, 4) if scan_s else None,
        },
    }
