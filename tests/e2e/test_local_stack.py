"""`assist local up` as a user runs it: a foreground process serving the API on the real parts."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from assist_dev.local.stack import free_port
from tests.conftest import DOCS, MODEL_DIR

pytestmark = pytest.mark.e2e
ASSIST = Path(sys.executable).with_name("assist")
#: the pages these questions are answered from: the stack indexes what `--docs` names, the same way for five pages
#: as for all of docs/ (whose 550 chunks took 2 of the suite's 12 minutes to embed, twice)
PAGES = ("index.md", "routing.md", "answering.md", "configuration.md", "faq.md")


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("docs")
    for name in PAGES:
        shutil.copy(DOCS / name, folder / name)
    return folder


def start(cwd: Path, *extra: str, docs: Path = DOCS, **overrides: str) -> tuple[subprocess.Popen, str]:
    """`assist local up --docs docs` in `cwd`, without Ollama unless `overrides` (environment variables) name one."""
    port = free_port()
    env = {**os.environ, "EMBED_MODEL_DIR": str(MODEL_DIR), "OLLAMA_HOST": "http://127.0.0.1:9", "LOG_FORMAT": "json"}
    env.update(overrides)
    env.pop("AWS_ENDPOINT_URL", None)
    proc = subprocess.Popen(
        [str(ASSIST), "local", "up", "--port", str(port), "--docs", str(docs), *extra],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    raise AssertionError(f"stack not healthy in 180 s; its log ends: {proc.communicate()[1][-3000:]}")


def stop(proc: subprocess.Popen) -> tuple[int, str, str]:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err


@pytest.mark.parametrize("index", ["local", "s3"])
def test_local_up_serves_asks_and_stops_cleanly(tmp_path, pages, index):
    extra = ("--index", "s3://assist-data/index") if index == "s3" else ()
    shutil.copytree(pages, tmp_path / "docs")  # named as the README's `make run` names it: relative to the shell
    proc, base = start(tmp_path, *extra, docs=Path("docs"))
    try:
        env = subprocess.run([str(ASSIST), "local", "env"], cwd=tmp_path, capture_output=True, text=True, check=True)
        assert "export AWS_ENDPOINT_URL=http://127.0.0.1:" in env.stdout
        assert "export SESSIONS_TABLE=" in env.stdout
        want_index = "s3://assist-data/index" if index == "s3" else ".assist/index"
        assert f"export INDEX_URI={want_index}" in env.stdout

        q = {"session_id": "e2e", "message": "How does the engine decide that a message is about billing?"}
        first = httpx.post(base + "/v1/ask", json=q, timeout=60).json()
        assert first["degraded"] == ["llm_unavailable"]
        # answered by the ask state machine: the deployed ASL, run by moto's interpreter
        assert first["trace"]["execution"]["states"] == ["Classify", "RouteByType", "Retrieve", "Answer"]
        assert first["trace"]["execution"]["arn"].startswith("arn:aws:states:")
        assert first["sources"]
        assert all((pages / f"{s['doc_id']}.md").exists() for s in first["sources"])
        # no build path reaches a caller: each source is its path in the folder (ADR 0112), in the answer and the stream
        assert all(s["url"].startswith(f"{s['doc_id']}.md#") for s in first["sources"])
        assert "file://" not in json.dumps(first)
        streamed = httpx.post(base + "/v1/ask/stream", json={**q, "session_id": "e2e-stream"}, timeout=60).text
        assert "event: done" in streamed
        assert "file://" not in streamed
        second = httpx.post(base + "/v1/ask", json={**q, "message": "and for quotas?"}, timeout=60).json()
        assert second["trace"]["history"] == [f'[RETRIEVAL] "{q["message"][:60]}"']
        assert httpx.post(base + "/v1/ask", content=b"{", timeout=10).status_code == 400
        # hostile input (docs/api.md): refused with what is wrong before any execution, and the stack keeps serving
        deep = httpx.post(base + "/v1/ask", content=b'{"session_id":"e2e","zz":' + b"[" * 5000 + b"]" * 5000 + b"}")
        assert (deep.status_code, deep.json()["detail"]) == (400, "JSON nesting deeper than 32 levels")
        long = httpx.post(base + "/v1/ask", json={**q, "message": "é" * 100_000}, timeout=30)
        assert (long.status_code, long.json()["detail"]) == (400, "message is 100000 characters; the limit is 8000")
        assert httpx.get(base + "/healthz", timeout=5).status_code == 200
        reached = {**os.environ, **dict(line[7:].split("=", 1) for line in env.stdout.splitlines())}
        cli = subprocess.run(
            [str(ASSIST), "ask", "How do I change the light model?", "--session", "e2e-cli", "--stream"],
            cwd=tmp_path,
            env=reached,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert cli.returncode == 0, cli.stderr[-2000:]
        assert "[RETRIEVAL via" in cli.stderr
        assert "  [1] " in cli.stdout
        assert httpx.get(base + "/schema/openapi.json", timeout=10).json()["paths"]["/v1/ask"]
    finally:
        code, out, err = stop(proc)
    assert code == 0, err[-2000:]
    assert "export INDEX_URI=" in out
    assert "local.stopped" in err
    assert '"function": "retrieve"' in err  # the retrieve function's own events, from its task
    assert not (tmp_path / ".assist/local-stack.env").exists()
    gone = subprocess.run([str(ASSIST), "local", "env"], cwd=tmp_path, capture_output=True, text=True)
    assert gone.returncode == 1
    assert "assist local up" in gone.stderr
