"""Two-phase streaming over real HTTP: route before the first token, tokens, done; disconnect cancels upstream."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from assist.api.app import create_app
from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.settings import Settings
from tests.integration.test_ask_path import turns
from tests.support.folder_urls import in_folder
from tests.support.http import serve

pytestmark = pytest.mark.integration


def read_events(resp: httpx.Response) -> list[tuple[str, dict, float]]:
    """(event, data, arrival time) for every SSE event of the response."""
    events, name = [], None
    for line in resp.iter_lines():
        if line.startswith("event:"):
            name = line.split(":", 1)[1].strip()
        elif line.startswith("data:") and name:
            events.append((name, json.loads(line.split(":", 1)[1]), time.perf_counter()))
            name = None
    return events


@pytest.fixture
def api(docs_index: Settings, ollama):
    s = docs_index.with_(
        ollama={"host": ollama.url, "model_name": "main-model:1b", "model_name_conversational": "light-model:0.5b"}
    )
    with serve(create_app(build_engine(s, client("dynamodb", s)))) as base:
        yield base, s


def test_route_event_comes_before_the_first_token(api, ollama, session_id):
    base, _ = api
    ollama.reply("Routing uses layers, cheapest first [1].", model="main-model:1b")
    ollama.first_token_delay_s = 0.3  # the model takes time to start; the route must not wait for it
    t0 = time.perf_counter()
    body = {"session_id": session_id, "message": "How does the engine decide that a message is about billing?"}
    with httpx.stream("POST", base + "/v1/ask/stream", json=body, timeout=30) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        events = read_events(resp)
    names = [e[0] for e in events]
    assert names[0] == "route"
    assert names[-1] == "done"
    assert set(names[1:-1]) == {"token"}
    route, first_token = events[0], events[1]
    assert route[1]["type"] == "RETRIEVAL"
    assert route[1]["sources"]
    assert all(s["passage"] for s in route[1]["sources"])  # what the answer is built from, to show a reader
    assert all(in_folder(s["url"]) for s in route[1]["sources"])  # and where to read it (ADR 0059, 0112)
    assert first_token[2] - route[2] >= 0.25, "the route event must arrive before the model starts"
    assert route[2] - t0 < first_token[2] - t0
    done = events[-1][1]
    assert "".join(e[1]["text"] for e in events if e[0] == "token") == done["answer"]
    assert done["answer"] == "Routing uses layers, cheapest first [1]."
    assert done["usage"]["eval_count"] > 0
    assert [s["url"] for s in done["sources"]] == [s["url"] for s in route[1]["sources"]]
    assert [s["name"] for s in done["trace"]["stages"]][-2:] == ["generate", "persist"]


def test_client_disconnect_cancels_the_model_stream_and_keeps_the_turn(api, ollama, session_id):
    base, settings = api
    ollama.reply(" ".join(f"word{i}" for i in range(200)), model="main-model:1b")
    ollama.token_delay_s = 0.02
    body = {"session_id": session_id, "message": "Explain the retrieval pipeline in depth"}
    with httpx.stream("POST", base + "/v1/ask/stream", json=body, timeout=30) as resp:
        seen = 0
        for line in resp.iter_lines():
            if line.startswith("event: token"):
                seen += 1
                if seen == 3:
                    break  # the user closes the tab
    assert ollama.disconnected.wait(5), "the engine must close its stream to Ollama"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not turns(settings, settings.sessions.table, session_id):
        time.sleep(0.05)
    (stored,) = turns(settings, settings.sessions.table, session_id)
    assert stored["answer"]["S"].startswith("word0")
    assert "client_disconnected" in [d["S"] for d in stored["degraded"]["L"]]
    assert len(turns(settings, settings.sessions.intent_history_table, session_id)) == 1


def test_a_client_gone_before_the_first_token_still_leaves_its_turn_once(api, ollama, session_id):
    """The turn number is taken while the model starts; a client gone by then must not lose (or misnumber) the turn."""
    base, settings = api
    ollama.first_token_delay_s = 1.0
    body = {"session_id": session_id, "message": "Explain the retrieval pipeline in depth"}
    with httpx.stream("POST", base + "/v1/ask/stream", json=body, timeout=30) as resp:
        assert next(line for line in resp.iter_lines() if line.startswith("event:")) == "event: route"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not turns(settings, settings.sessions.table, session_id):
        time.sleep(0.05)
    (stored,) = turns(settings, settings.sessions.table, session_id)
    assert stored["turn"]["N"] == "1"
    assert "client_disconnected" in [d["S"] for d in stored["degraded"]["L"]]
    assert len(turns(settings, settings.sessions.intent_history_table, session_id)) == 1


def test_stream_without_ollama_is_extractive_with_a_reason(docs_index: Settings, session_id):
    with serve(create_app(build_engine(docs_index, client("dynamodb", docs_index)))) as base:
        body = {"session_id": session_id, "message": "Where is the index stored?"}
        with httpx.stream("POST", base + "/v1/ask/stream", json=body, timeout=30) as resp:
            events = read_events(resp)
    assert [e[0] for e in events] == ["route", "token", "done"]
    assert events[-1][1]["degraded"] == ["llm_unavailable"]


def test_bad_input_is_a_400_before_any_stream(api):
    base, _ = api
    r = httpx.post(base + "/v1/ask/stream", json={"session_id": "s", "message": "x" * 9000}, timeout=10)
    assert r.status_code == 400
    assert "limit is 8000" in r.text
