"""EMF metrics (ADR 0064): every turn, export and index build writes CloudWatch embedded-metric-format records
into the logs, built by Powertools' Metrics utility. Read back from the local stack's state machine path
(moto, the real functions' handlers, real LanceDB and MiniLM) and from `assist ask --json`'s own log lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest
from structlog.testing import capture_logs

from assist.api.app import create_app
from assist_dev.local.definition import ROOT
from assist_dev.local.statemachine import ServerlessStack
from tests.support.http import serve

pytestmark = pytest.mark.integration


def value(record: dict, metric: str) -> float:
    """A metric's value in an EMF record (Powertools writes a list of values: one per add_metric)."""
    (v,) = record[metric]
    return v


def emf(records: list[dict], metric: str) -> list[dict]:
    """The EMF documents defining `metric` (namespace Assist)."""
    out = []
    for r in records:
        for d in r.get("_aws", {}).get("CloudWatchMetrics", []):
            if d["Namespace"] == "Assist" and metric in [m["Name"] for m in d["Metrics"]]:
                out.append({"dimensions": d["Dimensions"], **r})
    return out


def test_an_ask_on_the_local_stack_writes_turn_and_degraded_records(docs_index, session_id):
    stack = ServerlessStack(docs_index, docs_index.aws.endpoint_url, name="assist-metrics").start()
    try:
        app = create_app(stack.functions["answer"].engine.get(), ask_via=stack.ask)
        with serve(app) as base, capture_logs() as logs:
            body = {"session_id": session_id, "message": "How is the engine configured?"}
            r = httpx.post(base + "/v1/ask", json=body, timeout=120)
    finally:
        stack.stop()
    assert r.status_code == 200, r.text
    answer = r.json()
    records = [e for e in logs if e["event"] == "metrics.emf"]
    (turn,) = emf(records, "Turns")
    assert turn["dimensions"] == [["type", "layer", "service"], ["service"]]
    assert (turn["type"], turn["layer"]) == (answer["route"]["type"], answer["route"]["layer"])
    assert value(turn, "Turns") == 1
    assert 0 < value(turn, "LatencyMs") <= answer["trace"]["total_ms"] + 1
    assert value(turn, "ModelTokens") == 0  # no model host here: the answer is extractive
    assert "llm_unavailable" in answer["degraded"]
    degraded = emf(records, "Degraded")
    assert sorted(d["reason"] for d in degraded) == sorted(answer["degraded"])
    assert all(d["dimensions"] == [["reason", "service"]] and value(d, "Degraded") == 1 for d in degraded)


def test_assist_ask_json_logs_the_same_records_as_emf_json_lines(docs_index, ollama, tmp_path):
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "HF_HUB_OFFLINE") if k in os.environ}
    env |= {
        "PYTHONPATH": f"{ROOT / 'layers/common/python'}:{ROOT}",
        "INDEX_URI": docs_index.index.uri,
        "EMBED_MODEL_DIR": docs_index.embed.model_dir,
        "SESSION_STORE": "file",
        "SESSION_STORE_FILE": str(tmp_path / "sessions.sqlite3"),
        "OLLAMA_HOST": ollama.url,
        "OLLAMA_MODEL_NAME": "main-model:1b",
        "CLASSIFIER_LLM_TIMEOUT_S": "2",
    }
    cmd = [sys.executable, "-m", "assist.cli", "ask", "How is the engine configured?", "--json"]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout)
    lines = [json.loads(x) for x in done.stderr.splitlines() if x.startswith("{") and '"_aws"' in x]
    (turn,) = emf(lines, "Turns")
    assert turn["event"] == "metrics.emf"
    assert turn["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "Assist"
    units = {m["Name"]: m["Unit"] for m in turn["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert units == {"Turns": "Count", "LatencyMs": "Milliseconds", "ModelTokens": "Count"}
    assert turn["type"] == answer["route"]["type"]
    usage = next(s["usage"] for s in answer["trace"]["stages"] if s.get("usage"))
    assert value(turn, "ModelTokens") == usage["prompt_eval_count"] + usage["eval_count"] > 0
    assert answer["degraded"] == []
    assert emf(lines, "Degraded") == []


def test_export_and_index_builds_write_their_counts(docs_index, embedder, tmp_path):
    from assist.build.run import ingest
    from assist.export.labels import run_export

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(3):
        (docs / f"page-{i}.md").write_text(f"# Page {i}\n\nThe engine stores page {i} in the index.\n")
    s = docs_index.with_(
        index={"uri": str(tmp_path / "index")},
        sessions={"store": "file", "store_file": str(tmp_path / "s.sqlite3")},
        export={"dir": str(tmp_path / "labels")},
    )
    with capture_logs() as logs:
        ingest(docs, s, embedder, progress=False)
        result = run_export(s, force=True)
    records = [e for e in logs if e["event"] == "metrics.emf"]
    assert [value(r, "IndexDocuments") for r in emf(records, "IndexDocuments")] == [3]
    assert [value(r, "ExportedRecords") for r in emf(records, "ExportedRecords")] == [result.records]
