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
