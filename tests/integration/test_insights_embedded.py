"""The insights page and `assist report` on the embedded session store (SESSION_STORE=file, ADR 0061): turns
asked over real HTTP land in the SQLite file, and the page and the command read them back from it, with no
DynamoDB anywhere (the command runs with every AWS_* variable unset)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from assist.settings import Settings
from tests.integration.conftest import answered, served

pytestmark = pytest.mark.integration
QUESTIONS = ["How is the engine configured?", "How do I rebuild the index?", "Where is the index stored?"]


@pytest.fixture
def embedded(docs_index: Settings, tmp_path) -> Settings:
    return docs_index.with_(sessions={"store": "file", "store_file": str(tmp_path / "sessions.sqlite3")})


def test_the_page_and_the_report_read_the_embedded_store(embedded: Settings, tmp_path):
    with served(embedded) as base:
        for i, q in enumerate(QUESTIONS):
            a = answered(base, {"X-Assist-User": "alice"}, session_id=f"embedded-{i}", message=q)
            assert a["turn"] == 1
        r = httpx.post(
            f"{base}/v1/sessions/embedded-0/turns/1/feedback",
            json={"rating": "down", "comment": "call 600 123 456"},
            headers={"X-Assist-User": "alice"},
            timeout=30,
        )
        assert r.status_code in (200, 204), r.text
        page = httpx.get(base + "/insights?days=7", timeout=120)
    assert page.status_code == 200, page.text
    assert re.search(r"<b>3</b>questions", page.text)
    assert Path(embedded.sessions.store_file).stat().st_size > 0

    environ = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    environ |= {
        "SESSION_STORE": "file",
        "SESSION_STORE_FILE": embedded.sessions.store_file,
        "INDEX_URI": embedded.index.uri,
        "EMBED_MODEL_DIR": str(Path(embedded.embed.model_dir).resolve()),
        "HF_HUB_OFFLINE": "1",
        "LOG_LEVEL": "WARNING",
    }
    assist = Path(sys.executable).parent / "assist"
    out = tmp_path / "r.html"
    r = subprocess.run(
        [str(assist), "report", "--out", str(out), "--json"], capture_output=True, text=True, env=environ, timeout=300
    )
    assert r.returncode == 0, r.stderr[-800:]
    figures = json.loads(r.stdout.strip().splitlines()[-1])
    assert figures["questions"] == 3
    assert figures["ratings"] == {"down": 1}
    assert out.read_text().startswith("<!doctype html>")
    review = subprocess.run(
        [str(assist), "feedback", "review", "--json"], capture_output=True, text=True, env=environ, timeout=300
    )
    assert review.returncode == 0, review.stderr[-800:]
    rows = json.loads(review.stdout)["turns"]
    assert [(t["session_id"], t["turn"], t.get("comment")) for t in rows] == [("embedded-0", 1, "call <PHONE>")]
