"""`assist ask` as a person at a terminal sees it: the answer and one status line, no log events, no metric
records (a pseudo-terminal, so the CLI knows it is one)."""

from __future__ import annotations

import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MODEL_DIR

pytestmark = pytest.mark.e2e
ASSIST = Path(sys.executable).with_name("assist")
CLOUD = ("AWS_", "INDEX_", "SESSIONS_", "INTENT_", "OLLAMA_", "BUCKET", "SESSION_STORE", "LOG_")


def at_terminal(cwd: Path, *args: str) -> tuple[int, list[str]]:
    """Run `assist *args` with stdout and stderr on one pseudo-terminal; its exit code and the lines shown."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(CLOUD)}
    env.update(EMBED_MODEL_DIR=str(MODEL_DIR), OLLAMA_HOST="http://127.0.0.1:9")  # no Ollama: refused at once
    main, child = pty.openpty()
    proc = subprocess.Popen([str(ASSIST), *args], cwd=cwd, env=env, stdin=child, stdout=child, stderr=child)
    os.close(child)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the terminal closed: the process is done with it
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    return proc.wait(timeout=300), shown.decode().replace("\r\n", "\n").splitlines()


@pytest.mark.parametrize("stream", [False, True])
def test_an_ask_at_a_terminal_shows_the_answer_and_one_status_line(tmp_path, docs_index, stream):
    shutil.copytree(docs_index.index.uri, tmp_path / ".assist/index")
    code, lines = at_terminal(tmp_path, "ask", "How is the engine configured?", *(["--stream"] if stream else []))
    assert code == 0, lines
    status = [line for line in lines if line.startswith("[RETRIEVAL via")]
    assert len(status) == 1, lines
    assert status[0].endswith("degraded: llm_unavailable]")
    assert "qwen" not in status[0]  # the route names a model only when one answered
    assert lines[0].startswith("The language model is unavailable, so these are the most relevant passages")
    assert any(re.match(r"  \[1\] Configuration of the assistance engine", line) for line in lines)
    rest = [line for line in lines if line not in status and line.strip()]
    # the answer's lines only: passages [n] and sources, no event, level, EMF record or enum repr
    assert all(line.startswith(("The language model", "[", "  [")) for line in rest), rest
    assert not [line for line in lines if re.search(r"\[(info|warning|debug)\s*\]|_aws|metrics\.emf|<Degraded", line)]
    verbose = at_terminal(tmp_path, "ask", "How is the engine configured?", "-v")[1]
    assert any("[info" in line and "retrieve.fused" in line for line in verbose)  # -v: the events are there
