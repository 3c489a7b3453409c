"""The insights page through the real parts: turns asked through the engine and the API (moto DynamoDB over
HTTP, the real MiniLM embedder for the gap topics), read back with paginated index queries (docs/insights.md)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from assist.api.app import create_app
from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.commands.insights import review
from assist.contracts import AskRequest, FeedbackRequest, QueryType
from assist.insights.gather import gather
from assist.sessions.backends import open_store
from assist.settings import Settings
from assist_dev.local.resources import ensure_resources
from assist_dev.local.seed import populate
from tests.support.http import serve

pytestmark = pytest.mark.integration
GAPS = [
    "How do I export my invoices to SAP?",
    "Can invoices be exported to SAP automatically?",
    "Where is the SAP invoice export setting?",
    "Does the mobile app support offline mode on Android?",
    "How do I enable offline mode in the Android app?",
]


@pytest.fixture(scope="module")
def env(docs_index: Settings):
    s = docs_index.with_(sessions={"table": "s-insights", "intent_history_table": "h-insights"})
    ddb = client("dynamodb", s)
    ensure_resources(s, ddb, client("s3", s))
    engine = build_engine(s, ddb)
    for i, q in enumerate(GAPS):  # the docs say nothing of these (the retriever may still be confident): 👎
        engine.ask(AskRequest(session_id=f"gap-{i}", message=q), owner="u")
        engine.feedback(f"gap-{i}", "u", 1, FeedbackRequest(rating="down"))
    engine.ask(AskRequest(session_id="ok", message="How is the engine configured?"), owner="u")
    engine.feedback("ok", "u", 1, FeedbackRequest(rating="down", type=QueryType.PLATFORM, comment="call 600 123 456"))
    return s, engine


def test_the_page_shows_the_windows_figures_and_the_gap_topics(env):
    s, engine = env
    with serve(create_app(engine)) as base:
        r = httpx.get(base + "/insights?days=7", timeout=120)
        bad = [httpx.get(base + f"/insights?days={d}", timeout=30) for d in ("0", "91", "abc")]
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/html")
    page = r.text
    assert "<svg" in page
    assert "<script" not in page
    assert "http://" not in page
    assert "https://" not in page  # nothing fetched from elsewhere
    assert re.search(r"<b>6</b>questions", page)
    # the unanswered questions and the thumbs-down one are gaps, grouped; each group names itself
    g = gather(s, open_store(s), 7)
    assert len(g.gaps()) == sum(
        e.retrieval_confidence in ("low", "none") or (e.feedback is not None and e.feedback.rating == "down")
        for e in g.entries
    )
    assert "How is the engine configured?" in page  # its 👎 makes it a gap
    assert len(g.gaps()) == 6
    sizes = [int(n) for n in re.findall(r"</b> · (\d+) questions", page)]
    assert len(sizes) >= 2  # SAP invoices and offline Android are two topics
    assert sum(sizes) == len(g.gaps())
    assert [b.status_code for b in bad] == [400, 400, 400]
    assert "1 to 90" in bad[0].text


def test_thumbs_down_turns_are_listed_for_review_redacted(env):
    s, _ = env
    rows = review(gather(s, open_store(s), 7).entries)
    newest = rows[0]
    assert (newest["session_id"], newest["turn"], newest["user_type"]) == ("ok", 1, "PLATFORM")
    assert sorted(r["session_id"] for r in rows) == ["gap-0", "gap-1", "gap-2", "gap-3", "gap-4", "ok"]
    assert rows[0]["comment"] == "call <PHONE>"


def test_the_window_is_read_by_day_and_counts_exactly_the_turns_created_in_it(docs_index: Settings):
    from assist.aws.capacity import query_units

    s = docs_index.with_(sessions={"table": "s-window", "intent_history_table": "h-window"})
    ddb = client("dynamodb", s)
    ensure_resources(s, ddb, client("s3", s))
    now = datetime.now(UTC)
    populate(s, ddb, 300, 30, now - timedelta(days=10), span=timedelta(days=10))
    expected = sum(
        1 for n in range(300) if now - timedelta(days=10) + timedelta(days=10) / 300 * n >= now - timedelta(days=3)
    )
    g = gather(s, open_store(s, ddb), 3, now=now)
    assert len(g.entries) == expected
    assert g.queries == 4  # one per day of the window (today and three before), no scan
    scan = sum(
        query_units(p["Items"]) for p in ddb.get_paginator("scan").paginate(TableName=s.sessions.intent_history_table)
    )
    assert g.read_units < scan / 2
    capped = gather(s, open_store(s, ddb), 3, now=now, max_entries=10)
    assert (len(capped.entries), capped.truncated) == (10, True)


def test_assist_report_writes_the_same_page_and_review_lists_the_turns(env, tmp_path):
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    s, _ = env
    assist = Path(sys.executable).parent / "assist"
    environ = {**os.environ, **s.env_lines(), "HF_HUB_OFFLINE": "1", "LOG_LEVEL": "WARNING"}
    out = tmp_path / "report.html"
    r = subprocess.run(
        [str(assist), "report", "--out", str(out), "--days", "7", "--json"],
        capture_output=True,
        text=True,
        env=environ,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-500:]
    figures = json.loads(r.stdout.strip().splitlines()[-1])
    assert (figures["questions"], figures["gap_questions"], figures["ratings"]) == (6, 6, {"down": 6})
    assert out.read_text().startswith("<!doctype html>")
    assert sum(g["size"] for g in figures["gaps"]) == 6
    r = subprocess.run([str(assist), "feedback", "review"], capture_output=True, text=True, env=environ, timeout=300)
    assert r.returncode == 0, r.stderr[-500:]
    assert "ok#1  [" in r.stdout
    assert "→ PLATFORM" in r.stdout
    assert r.stdout.strip().endswith("6 thumbs-down turns in the last 7 days")
    bad = subprocess.run(
        [str(assist), "report", "--out", str(out), "--days", "0"], capture_output=True, text=True, env=environ
    )
    assert bad.returncode == 2
    assert "1 to 90" in bad.stderr
