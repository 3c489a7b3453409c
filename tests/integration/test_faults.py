"""The fault matrix, each fault injected at the real boundary (the Ollama test server, a proxy in
front of the moto server), each ending in a degraded answer with its reason or a 503 with
Retry-After — never a bare 500 — and never a lost or duplicated turn."""

from __future__ import annotations

import httpx
import pytest

from assist.api.app import create_app
from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.build.run import ingest
from assist.settings import Settings
from tests.integration.test_ask_path import written
from tests.support.fault_proxy import FaultProxy, dynamodb_op, s3_path, throttled
from tests.support.http import serve

pytestmark = pytest.mark.integration


@pytest.fixture
def proxy(moto_url):
    with FaultProxy(moto_url) as p:
        yield p


@pytest.fixture
def faulty(docs_index: Settings, proxy, ollama):
    """Settings whose AWS calls (DynamoDB, and S3 for an s3:// index) go through the fault proxy."""
    return docs_index.with_(
        aws={"endpoint_url": proxy.url},
        ollama={"host": ollama.url, "model_name": "main-model:1b", "model_name_conversational": "light-model:0.5b"},
    )


def ask(settings: Settings, session_id: str, message: str = "Where is the index stored?") -> httpx.Response:
    with serve(create_app(build_engine(settings, client("dynamodb", settings)))) as base:
        return httpx.post(base + "/v1/ask", json={"session_id": session_id, "message": message}, timeout=60)


def test_llm_slow_past_its_budget(faulty, ollama, session_id):
    ollama.first_token_delay_s = 2.0
    r = ask(faulty.with_(ollama={"timeout_s": 0.5}), session_id)
    assert r.status_code == 200
    assert r.json()["degraded"] == ["llm_timeout"]
    assert r.json()["sources"], "the extractive answer still cites the docs"
    assert written(faulty, session_id) == (1, 1)


def test_dynamodb_throttling_once_is_absorbed_by_retries(faulty, proxy, session_id):
    rule = proxy.add(dynamodb_op("TransactWriteItems"), times=1, **throttled())
    r = ask(faulty, session_id)
    assert r.status_code == 200
    assert r.json()["degraded"] == []
    assert rule.hits == 1
    assert written(faulty, session_id) == (1, 1)


@pytest.mark.parametrize("operation", ["UpdateItem", "TransactWriteItems"])
def test_dynamodb_throttling_that_persists_is_a_503_with_retry_after(faulty, proxy, session_id, operation):
    proxy.add(dynamodb_op(operation), **throttled())
    r = ask(faulty, session_id)
    assert r.status_code == 503
    assert int(r.headers["Retry-After"]) > 0
    assert "ProvisionedThroughputExceededException" in r.json()["detail"]
    proxy.clear()
    assert written(faulty, session_id) == (0, 0), "nothing half-written"
    assert ask(faulty, session_id).status_code == 200  # the client's retry
    assert written(faulty, session_id) == (1, 1), "and the retry is not a duplicate"


@pytest.fixture
def s3_index(faulty, embedder, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "storage.md").write_text("# Storage\n\n## Index location\n\nThe index is stored in LanceDB on S3.\n")
    (docs / "slots.md").write_text("# Model slots\n\n## Light slot\n\nThe light slot answers PLATFORM questions.\n")
    s = faulty.with_(index={"uri": f"s3://{faulty.aws.bucket}/fault-index-{tmp_path.name}"})
    ingest(docs, s, embedder, progress=False, s3=client("s3", s))
    return s


def test_index_on_s3_failing(s3_index, proxy, session_id):
    proxy.add(s3_path(f"/{s3_index.aws.bucket}/fault-index"), status=503, body=b"<Error><Code>SlowDown</Code></Error>")
    r = ask(s3_index.with_(retrieve={"timeout_s": 20.0}), session_id)
    assert r.status_code == 200
    assert "index_unavailable" in r.json()["degraded"]
    assert r.json()["sources"] == []
    assert written(s3_index, session_id) == (1, 1)


def test_index_on_s3_slow(s3_index, proxy, session_id):
    """A slow S3: the first search, which also opens the index, past its cold budget says the index was still
    loading; once the index is open, a search past its warm budget says `index_timeout` (ADR 0110)."""
    proxy.add(s3_path(f"/{s3_index.aws.bucket}/fault-index"), delay_s=1.5)
    s = s3_index.with_(retrieve={"timeout_s": 0.5, "cold_timeout_s": 0.5})
    engine = build_engine(s, client("dynamodb", s))
    body = {"session_id": session_id, "message": "Where is the index stored?"}
    with serve(create_app(engine)) as base:
        first = httpx.post(base + "/v1/ask", json=body, timeout=60)
        assert first.status_code == 200
        assert first.json()["degraded"] == ["index_loading"]
        engine.warm()  # the opening the first turn began, waited for
        second = httpx.post(base + "/v1/ask", json=body, timeout=60)
        assert second.status_code == 200
        assert second.json()["degraded"] == ["index_timeout"]
    assert written(s3_index, session_id) == (2, 2)


def test_embedder_past_its_budget_answers_from_full_text(docs_index, ollama, session_id, tmp_path):
    """The query embedding (Ollama /api/embed) misses RETRIEVE_EMBED_TIMEOUT_MS: the answer goes on with the
    full-text strategies and says `embedder_timeout`; the next question embeds again."""
    from assist.embed import build_embedder

    ollama.set_models([*ollama.models, "embed-model:1"])
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "storage.md").write_text("# Storage\n\n## Index location\n\nThe index is stored in LanceDB on S3.\n")
    s = docs_index.with_(
        ollama={"host": ollama.url, "model_name": "main-model:1b"},
        embed={"embedder": "ollama:embed-model:1"},
        index={"uri": str(tmp_path / "index")},
        classifier={"model_path": None},  # the shipped classifier was trained on MiniLM vectors
        retrieve={"embed_timeout_ms": 300.0},
    )
    ingest(docs, s, build_embedder(s), progress=False)
    ollama.embed_delay_s = 1.5
    body = {"session_id": session_id, "message": "Where is the index stored?", "query_type": "RETRIEVAL"}
    with serve(create_app(build_engine(s, client("dynamodb", s)))) as base:
        slow = httpx.post(base + "/v1/ask", json=body, timeout=60).json()
        ollama.embed_delay_s = 0.0
        body["message"] = "Which store keeps the index?"
        warm = httpx.post(base + "/v1/ask", json=body, timeout=60).json()
    assert "embedder_timeout" in slow["degraded"]
    assert slow["sources"], "full-text search still finds the passage"
    assert "vector" not in slow["retrieval"]["strategies"]
    assert "embedder_timeout" not in warm["degraded"]
    assert warm["retrieval"]["strategies"]["vector"] > 0
    assert written(s, session_id) == (2, 2)
