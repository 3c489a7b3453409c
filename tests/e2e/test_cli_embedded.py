"""`assist ask` from a checkout with no stack and no cloud variables: the embedded store (ADR 0044)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MODEL_DIR

pytestmark = pytest.mark.e2e
ASSIST = Path(sys.executable).with_name("assist")
CLOUD = ("AWS_", "INDEX_", "SESSIONS_", "INTENT_", "OLLAMA_", "BUCKET", "SESSION_STORE")


def assist(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(CLOUD)}
    env.update(EMBED_MODEL_DIR=str(MODEL_DIR), LOG_LEVEL="WARNING", EXPORT_SETTLE_S="0")
    return subprocess.run([str(ASSIST), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def ask(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return assist(cwd, "ask", *args)


def test_two_turns_of_one_session_without_a_stack_or_cloud_variables(tmp_path, docs_index):
    # the index `assist ask` would build on first use, copied from the suite's (building it is tested apart)
    shutil.copytree(docs_index.index.uri, tmp_path / ".assist/index")
    first = ask(tmp_path, "How is the engine configured?", "--session", "S", "--json")
    assert first.returncode == 0, first.stderr[-1500:]
    assert json.loads(first.stdout)["sources"]
    second = ask(tmp_path, "What was my first question?", "--session", "S", "--json")
    assert second.returncode == 0, second.stderr[-1500:]
    body = json.loads(second.stdout)
    assert body["route"]["type"] == "CONVERSATIONAL"
    assert "How is the engine configured?" in body["answer"]  # remembered across processes, from the file
    assert (tmp_path / ".assist/sessions.sqlite3").is_file()
    export = assist(tmp_path, "export", "--force", "--json")  # the label export reads the same file
    assert export.returncode == 0, export.stderr[-1500:]
    assert json.loads(export.stdout)["records"] == 2
    assert len(list((tmp_path / ".assist/labels").rglob("*.jsonl"))) == 1


def test_a_store_error_says_what_to_do_not_to_retry(tmp_path, docs_index):
    shutil.copytree(docs_index.index.uri, tmp_path / ".assist/index")
    env_dead = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y"}
    env = {k: v for k, v in os.environ.items() if not k.startswith(CLOUD)} | env_dead
    env.update(EMBED_MODEL_DIR=str(MODEL_DIR), LOG_LEVEL="WARNING", CLASSIFIER_MODEL_PATH="none")
    r = subprocess.run(
        [str(ASSIST), "ask", "hello", "--type", "CONVERSATIONAL"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2
    assert "is the local stack running? Start it with `make run`" in r.stderr
    assert "retry shortly" not in r.stderr


def test_twelve_asks_at_once_on_one_session_all_succeed_on_a_new_store(tmp_path, docs_index):
    # ADR 0093: the store's file does not exist yet, so all twelve race to create it and open it at once; before,
    # `PRAGMA journal_mode = WAL` on every connection could fail one of them with "database is locked"
    shutil.copytree(docs_index.index.uri, tmp_path / ".assist/index")
    env = {k: v for k, v in os.environ.items() if not k.startswith(CLOUD)}
    env.update(EMBED_MODEL_DIR=str(MODEL_DIR), LOG_LEVEL="WARNING", CLASSIFIER_MODEL_PATH="none")
    runs = [
        subprocess.Popen(
            [str(ASSIST), "ask", f"question {i}", "--type", "CONVERSATIONAL", "--session", "S", "--json"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(12)
    ]
    done = [(r, *r.communicate(timeout=600)) for r in runs]
    failed = [err[-800:] for r, _, err in done if r.returncode != 0]
    assert not failed, failed
    answers = [json.loads(out) for _, out, _ in done]
    assert sorted(a["turn"] for a in answers) == list(range(1, 13))  # twelve distinct turns, none lost
    assert not [a["degraded"] for a in answers if "store_unavailable" in a["degraded"]]
    history = assist(tmp_path, "export", "--force", "--json")  # every turn reached both tables
    assert history.returncode == 0, history.stderr[-1500:]
    assert json.loads(history.stdout)["records"] == 12
