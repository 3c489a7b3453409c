"""A published index (ADR 0067): `assist index … --publish` builds a version beside the live one, the gate
refuses one that retrieves worse on the relevance set, the pointer flips, a warm engine answers from the new
version within INDEX_REFRESH_S and from the old one after `--rollback`. Real LanceDB, the real MiniLM embedder,
the CLI in its own process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assist.ask.build import build_engine
from assist.contracts import AskRequest
from assist.index import pointer
from assist_dev.local.definition import ROOT

pytestmark = pytest.mark.integration
REFRESH_S = 1.0
QUESTION = "How do I rotate the signing keys of the vault?"
VAULT = {
    "vault-keys.md": "# Rotating vault signing keys\n\nRun `vault rotate --signing` to rotate the signing keys of "
    "the vault. Old keys stay valid for verification for 24 hours after a rotation.\n",
    "vault-backup.md": "# Backing up the vault\n\nThe vault is backed up every night to the backup bucket; "
    "restore it with `vault restore --from <date>`.\n",
}
GARDEN = {
    "tomatoes.md": "# Growing tomatoes\n\nTomatoes need six hours of sun and deep watering twice a week.\n",
    "compost.md": "# Making compost\n\nMix green and brown material, keep the heap moist and turn it monthly.\n",
}


def folder(root: Path, name: str, pages: dict[str, str]) -> Path:
    d = root / name
    d.mkdir()
    for file, text in pages.items():
        (d / file).write_text(text)
    return d


@pytest.fixture
def env(tmp_path, docs_index):
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"_id": "q1", "text": QUESTION}) + "\n")
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\tvault-keys\t2\n")
    environ = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "HF_HUB_OFFLINE") if k in os.environ}
    environ |= {
        "PYTHONPATH": f"{ROOT / 'layers/common/python'}:{ROOT}",
        "INDEX_URI": str(tmp_path / "index"),
        "EMBED_MODEL_DIR": docs_index.embed.model_dir,
        "INDEX_GATE_QUERIES": str(queries),
        "INDEX_GATE_QRELS": str(qrels),
    }
    return tmp_path, environ


def run(environ: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "assist.cli", "index", *args, "--quiet"]
    return subprocess.run(cmd, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=300)


def assist(environ: dict[str, str], *args: str) -> tuple[int, dict]:
    done = run(environ, *args)
    assert done.stdout.strip(), done.stderr[-2000:]
    return done.returncode, json.loads(done.stdout.strip().splitlines()[-1])


def cited(engine) -> set[str]:
    """The documents the warm engine's reader finds for the question (the garden cannot answer it, so a turn
    there cites nothing: the search's own ranking says which version it read)."""
    return set(engine.retriever().rank(QUESTION, 10))


def eventually(engine, expected: set[str]) -> float:
    """Seconds until the warm engine cites only `expected` documents (bounded by twice the interval)."""
    t0 = time.monotonic()
    while (seen := cited(engine)) - expected or not seen:
        assert time.monotonic() - t0 < 2 * REFRESH_S + 5, f"still citing {seen} after {time.monotonic() - t0:.1f}s"
        time.sleep(0.2)
    return time.monotonic() - t0


def test_publish_gate_refresh_and_rollback(env, docs_index):
    tmp, environ = env
    root = environ["INDEX_URI"]
    garden, vault = folder(tmp, "garden", GARDEN), folder(tmp, "vault", VAULT)

    code, first = assist(environ, str(garden), "--publish")
    assert code == 0, first
    assert first["published"]
    assert first["gate"]["live_ndcg@10"] is None  # nothing was live: the first version is judged by nothing
    assert pointer.read(root).version == first["version"]

    s = docs_index.with_(
        index={"uri": root, "refresh_s": REFRESH_S}, sessions={"store": "file", "store_file": str(tmp / "s.sqlite3")}
    )
    engine = build_engine(s)  # warm from here on: one process, never restarted
    assert cited(engine) == {"tomatoes", "compost"}

    code, second = assist(environ, str(vault), "--publish")
    assert code == 0, second
    assert second["gate"]["ndcg@10"] > second["gate"]["live_ndcg@10"]
    assert second["replaced"] == first["version"]
    assert eventually(engine, {"vault-keys", "vault-backup"}) <= 2 * REFRESH_S + 5
    answer = engine.ask(AskRequest(session_id="pub-vault", message=QUESTION))
    assert [s.id.split("#")[0] for s in answer.sources][:1] == ["vault-keys"]  # and the turn cites the new docs

    # a version that retrieves worse than the live one on the relevance set is refused; nothing moves
    code, refused = assist(environ, str(garden), "--publish")
    assert code == 1
    assert refused["published"] is False
    assert refused["gate"]["refused"]
    assert refused["gate"]["ndcg@10"] < refused["gate"]["live_ndcg@10"] - refused["gate"]["margin"]
    assert pointer.read(root).version == second["version"]
    assert Path(refused["index"]).is_dir()  # built beside the live one, kept for inspection

    code, back = assist(environ, "--rollback")
    assert code == 0, back
    assert back == {"version": first["version"], "replaced": second["version"], "previous": []}
    eventually(engine, {"tomatoes", "compost"})

    nothing = run(environ, "--rollback")
    assert nothing.returncode != 0
    assert "no earlier live version" in nothing.stderr
