"""`assist bench sessions`: the session store's calls per turn (`recent`, `begin_turn`,
`append_turn`) on the embedded SQLite file beside DynamoDB on the moto server (ADR 0044)."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from assist.aws.clients import client
from assist.contracts import IntentEntry, QueryType
from assist.sessions.dynamodb import DynamoDBStore
from assist.sessions.items import Turn
from assist.sessions.sqlite import SQLiteStore
from assist.settings import Settings
from assist_dev.local.resources import ensure_resources
from assist_dev.local.stack import MotoServer, local_settings

CALLS = ("recent", "begin_turn", "append_turn")


def medians(store: Any, turns: int) -> dict[str, float]:
    """One session, `turns` turns, as the engine makes them: read the recent turns, take a number, write."""
    samples: dict[str, list[float]] = {c: [] for c in CALLS}
    for i in range(turns):
        t0 = time.perf_counter()
        store.recent("bench", "me")
        t1 = time.perf_counter()
        n = store.begin_turn("bench", "me")
        t2 = time.perf_counter()
        entry = IntentEntry(QueryType.RETRIEVAL, "how do I rotate a key?")
        store.append_turn(Turn("bench", n, f"r{i}", "how do I rotate a key?", "Like this.", entry, "me"))
        t3 = time.perf_counter()
        for call, seconds in zip(CALLS, (t1 - t0, t2 - t1, t3 - t2), strict=True):
            samples[call].append(seconds * 1000)
    return {f"{c}_p50_ms": round(statistics.median(v), 3) for c, v in samples.items()}


def run(settings: Settings, turns: int = 200) -> dict[str, Any]:
    moto = MotoServer().start()
    try:
        s = local_settings(settings, moto.url, None)
        ddb = client("dynamodb", s)
        ensure_resources(s, ddb, client("s3", s))
        dynamodb = medians(DynamoDBStore(ddb, s.sessions.table, s.sessions.intent_history_table), turns)
    finally:
        moto.stop()
    with tempfile.TemporaryDirectory(prefix="bench-sessions-") as tmp:
        file = medians(SQLiteStore(Path(tmp) / "sessions.sqlite3"), turns)
    ratio = {k: round(file[k] / dynamodb[k], 3) if dynamodb[k] else None for k in file}
    return {"turns": turns, "file": file, "dynamodb": dynamodb, "ratio_file_to_dynamodb": ratio}
