"""The first ask path through the real parts: HTTP (uvicorn) → engine → LanceDB, moto DynamoDB, Ollama test server."""

from __future__ import annotations

import concurrent.futures

import httpx
import pytest

from assist.api.app import create_app
from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.settings import Settings
from tests.integration.conftest import ask
from tests.support.http import serve

pytestmark = pytest.mark.integration


def turns(settings: Settings, table: str, session_id: str) -> list[dict]:
    resp = client("dynamodb", settings).query(
        TableName=table,
        KeyConditionExpression="session_id = :s AND turn > :header",
        ExpressionAttributeValues={":s": {"S": session_id}, ":header": {"N": "0"}},
        ConsistentRead=True,
    )
    return resp["Items"]


@pytest.fixture
def llm_settings(docs_index: Settings, ollama) -> Settings:
    return docs_index.with_(
        ollama={"host": ollama.url, "model_name": "main-model:1b", "model_name_conversational": "light-model:0.5b"}
    )


@pytest.fixture
def api_settings(llm_settings: Settings) -> Settings:
    return llm_settings


def written(settings: Settings, session_id: str) -> tuple[int, int]:
    """The audit after a fault: how many times the session's turns are in the sessions and intent-history tables."""
    return (
        len(turns(settings, settings.sessions.table, session_id)),
        len(turns(settings, settings.sessions.intent_history_table, session_id)),
    )


def written_once(settings: Settings, session_id: str) -> bool:
    return written(settings, session_id) == (1, 1)


def stage_names(reply: dict) -> list[str]:
    return [s["name"] for s in reply["trace"]["stages"]]


def test_retrieval_question_is_answered_by_main_model_from_the_docs(api, ollama, session_id):
    ollama.reply("The engine routes account data to PLATFORM [1].", model="main-model:1b")
    r = ask(api, session_id=session_id, message="How does the engine decide that a message is about billing?")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["answer"] == "The engine routes account data to PLATFORM [1]."
    assert body["route"]["type"] == "RETRIEVAL"
    assert body["route"]["model_slot"] == "main"
    assert body["degraded"] == []
    assert body["sources"], "a documentation question must cite docs/"
    assert {s["doc_id"] for s in body["sources"]} & {"routing", "faq", "index", "architecture"}
    assert stage_names(body) == ["history", "classify", "retrieve", "generate", "persist"]
    assert all(s["ms"] >= 0 for s in body["trace"]["stages"])
    (call,) = ollama.calls("/api/chat")
    assert call.model == "main-model:1b"
    prompt = call.body["messages"][-1]["content"]
    assert "<sources>" in prompt
    assert body["sources"][0]["title"] in prompt


def test_second_turn_shows_the_first_turns_intent(api, session_id):
    ask(api, session_id=session_id, message="What is the intent history?")
    second = ask(api, session_id=session_id, message="And where is it stored?").json()
    assert second["trace"]["history"] == ['[RETRIEVAL] "What is the intent history?"']
    assert second["trace"]["stages"][0] == {**second["trace"]["stages"][0], "name": "history", "entries": 1}


def test_platform_prefix_skips_retrieval_and_uses_the_light_slot(api, ollama, session_id):
    ollama.reply("You use 20% of your quota.", model="light-model:0.5b")
    r = ask(
        api,
        session_id=session_id,
        message="You are a direct and concise assistant. Usage is 20%. Advise.",
        extra_context="project usage: 20% of 10,000 calls",
    )
    body = r.json()
    assert body["route"]["type"] == "PLATFORM"
    assert body["route"]["layer"] == "rules"
    assert body["route"]["model_slot"] == "light"
    assert "retrieve" not in stage_names(body)
    assert body["sources"] == []
    (call,) = ollama.calls("/api/chat")
    assert call.model == "light-model:0.5b"
    assert "project usage: 20% of 10,000 calls" in call.body["messages"][-1]["content"]


def test_declared_type_bypasses_the_rules(api, session_id):
    r = ask(api, session_id=session_id, message="You are a direct and concise assistant. hi", query_type="RETRIEVAL")
    assert r.json()["route"]["layer"] == "declared"
    assert r.json()["route"]["type"] == "RETRIEVAL"


def test_without_ollama_the_answer_is_extractive_and_says_so(docs_index: Settings, session_id):
    engine = build_engine(docs_index, client("dynamodb", docs_index))  # OLLAMA_HOST points at a closed port
    with serve(create_app(engine)) as base:
        body = ask(base, session_id=session_id, message="Where is the index stored?").json()
    assert body["degraded"] == ["llm_unavailable"]
    assert body["sources"]
    assert "[1]" in body["answer"]
    assert body["sources"][0]["title"] in body["answer"]
    assert written_once(docs_index, session_id)


def test_light_slot_down_falls_back_to_main(api, llm_settings, ollama, session_id):
    ollama.set_down("light-model:0.5b")
    ollama.reply("main answered", model="main-model:1b")
    body = ask(api, session_id=session_id, message="You are a direct and concise assistant. Usage?").json()
    assert body["answer"] == "main answered"
    assert body["degraded"] == ["slot_fallback"]
    assert [c.model for c in ollama.calls("/api/chat")] == ["light-model:0.5b", "main-model:1b"]
    assert written_once(llm_settings, session_id)


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (b"{", "not valid JSON"),
        (b'{"session_id": "s", "message": ""}', "message"),
        (b'{"session_id": "s", "message": "   "}', "blank"),
        (b'{"session_id": "s"}', "message"),
        (b'{"session_id": "s", "message": "x", "query_type": "NOPE"}', "query_type"),
        (b'{"session_id": "has spaces!", "message": "x"}', "session_id"),
        (b'{"session_id": "s", "message": "x", "surprise": 1}', "surprise"),
        (b'{"session_id": "s", "message": "' + b"a" * 8001 + b'"}', "limit is 8000"),
    ],
)
def test_bad_input_gets_a_400_that_says_what_is_wrong(api, raw, needle):
    r = httpx.post(api + "/v1/ask", content=raw, headers={"content-type": "application/json"}, timeout=30)
    assert r.status_code == 400
    assert needle in r.text
    assert httpx.get(api + "/healthz").status_code == 200  # still serving


def test_every_turn_is_written_once_to_both_tables(api, llm_settings, session_id):
    for i in range(3):
        assert ask(api, session_id=session_id, message=f"question number {i}").status_code == 200
    sessions = turns(llm_settings, llm_settings.sessions.table, session_id)
    history = turns(llm_settings, llm_settings.sessions.intent_history_table, session_id)
    assert [int(i["turn"]["N"]) for i in sessions] == [1, 2, 3]
    assert [int(i["turn"]["N"]) for i in history] == [1, 2, 3]
    assert [i["message"]["S"] for i in sessions] == [f"question number {i}" for i in range(3)]
    assert all("extra_context" not in i for i in sessions + history)


def test_concurrent_turns_of_one_session_never_overwrite_each_other(api, llm_settings, session_id):
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda i: ask(api, session_id=session_id, message=f"parallel {i}"), range(8)))
    assert all(r.status_code == 200 for r in replies)
    sessions = turns(llm_settings, llm_settings.sessions.table, session_id)
    assert sorted(i["message"]["S"] for i in sessions) == sorted(f"parallel {i}" for i in range(8))
    assert sorted(int(i["turn"]["N"]) for i in sessions) == list(range(1, 9))
    assert len(turns(llm_settings, llm_settings.sessions.intent_history_table, session_id)) == 8


def test_platform_facts_answer_is_not_stored_when_no_model_answers(docs_index: Settings, session_id):
    engine = build_engine(docs_index, client("dynamodb", docs_index))  # no Ollama
    with serve(create_app(engine)) as base:
        body = ask(
            base,
            session_id=session_id,
            message="You are a direct and concise assistant. Usage?",
            extra_context="plan PRO-7781, 93% of quota used",
        ).json()
    assert body["degraded"] == ["llm_unavailable"]
    assert "93% of quota used" in body["answer"]  # the user sees their facts...
    stored = turns(docs_index, docs_index.sessions.table, session_id)
    assert stored
    assert "PRO-7781" not in str(stored)  # ...but they are never written


def test_warm_up_loads_each_distinct_slot_model_once(llm_settings, ollama):
    engine = build_engine(llm_settings.with_(ollama={"warm_up": True}), client("dynamodb", llm_settings))
    engine.warm()
    assert sorted(c.model for c in ollama.calls("/api/chat")) == ["light-model:0.5b", "main-model:1b"]
    same = build_engine(
        llm_settings.with_(ollama={"warm_up": True, "model_name_conversational": None}),
        client("dynamodb", llm_settings),
    )
    ollama.clear()
    same.warm()
    assert [c.model for c in ollama.calls("/api/chat")] == ["main-model:1b"]


def test_another_owners_session_is_not_found(llm_settings, session_id):
    from assist.contracts import AskRequest
    from assist.sessions.store import SessionNotFound

    engine = build_engine(llm_settings, client("dynamodb", llm_settings))
    engine.ask(AskRequest(session_id=session_id, message="my question"), owner="alice")
    with pytest.raises(SessionNotFound, match="not found"):
        engine.ask(AskRequest(session_id=session_id, message="let me in"), owner="mallory")
    assert len(turns(llm_settings, llm_settings.sessions.table, session_id)) == 1
    again = engine.ask(AskRequest(session_id=session_id, message="again"), owner="alice")
    assert next(st for st in again.trace.stages if st.name == "persist").turn == 2


def test_sessions_are_private_to_their_owner_on_every_route(api, session_id):
    alice, mallory = {"X-Assist-User": "alice"}, {"X-Assist-User": "mallory"}
    body = {"session_id": session_id, "message": "What is the intent history?"}
    assert httpx.post(api + "/v1/ask", json=body, headers=alice, timeout=30).status_code == 200
    refused = {
        "ask": httpx.post(api + "/v1/ask", json=body, headers=mallory, timeout=30),
        "stream": httpx.post(api + "/v1/ask/stream", json=body, headers=mallory, timeout=30),
        "transcript": httpx.get(f"{api}/v1/sessions/{session_id}", headers=mallory, timeout=30),
    }
    missing = httpx.get(api + "/v1/sessions/never-existed", headers=mallory, timeout=30)
    for name, r in refused.items():
        assert r.status_code == 404, name
        assert r.json()["detail"] == missing.json()["detail"].replace("never-existed", session_id), "no hint it exists"
    own = httpx.get(f"{api}/v1/sessions/{session_id}", headers=alice, timeout=30).json()
    assert [t["message"] for t in own["turns"]] == ["What is the intent history?"]
    assert [i["turn"] for i in own["intents"]] == [1]
    assert "local:alice" not in str(own)  # the owner is never returned


def test_a_bad_identity_header_is_a_400(api):
    r = httpx.post(api + "/v1/ask", json={"session_id": "s", "message": "x"}, headers={"X-Assist-User": "a b"})
    assert r.status_code == 400
    assert "X-Assist-User" in r.text or "x-assist-user" in r.text


def test_without_local_mode_an_anonymous_caller_is_refused(docs_index, session_id):
    engine = build_engine(docs_index.with_(api={"local_mode": False}), client("dynamodb", docs_index))
    with serve(create_app(engine)) as base:
        r = httpx.post(
            base + "/v1/ask",
            json={"session_id": session_id, "message": "hi"},
            headers={"X-Assist-User": "alice"},
            timeout=30,
        )
    assert r.status_code == 401
    assert "JWT authorizer" in r.json()["detail"]
