"""Feedback on a turn through the real parts: HTTP (uvicorn) → engine → moto DynamoDB (issue 17, ADR 0045)."""

from __future__ import annotations

import concurrent.futures

import httpx
import pytest

from assist.api.app import create_app
from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.memory.store import SessionStore
from assist.settings import Settings
from tests.support.http import serve

pytestmark = pytest.mark.integration
ALICE, MALLORY = {"X-Assist-User": "alice"}, {"X-Assist-User": "mallory"}


@pytest.fixture(scope="module")
def api(docs_index: Settings):
    engine = build_engine(docs_index, client("dynamodb", docs_index))
    with serve(create_app(engine)) as base:
        yield base


def ask(base: str, session_id: str, message: str, headers=ALICE) -> dict:
    r = httpx.post(base + "/v1/ask", json={"session_id": session_id, "message": message}, headers=headers, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def rate(base: str, session_id: str, turn: int | str, body, headers=ALICE) -> httpx.Response:
    url = f"{base}/v1/sessions/{session_id}/turns/{turn}/feedback"
    return httpx.post(url, json=body, headers=headers, timeout=30)


def turn_items(settings: Settings, table: str, session_id: str, turn: int) -> dict:
    key = {"session_id": {"S": session_id}, "turn": {"N": str(turn)}}
    return client("dynamodb", settings).get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]


def test_every_answer_carries_its_turn_and_feedback_shows_on_that_turn(api, session_id):
    first = ask(api, session_id, "How is the engine configured?")
    second = ask(api, session_id, "How do I rebuild the index?")
    assert (first["turn"], second["turn"]) == (1, 2)

    r = rate(api, session_id, 1, {"rating": "down", "type": "CODE_GENERATION", "comment": "mail me: bob@corp.example"})
    assert r.status_code == 200, r.text
    assert (r.json()["rating"], r.json()["type"]) == ("down", "CODE_GENERATION")

    turns = httpx.get(f"{api}/v1/sessions/{session_id}", headers=ALICE, timeout=30).json()["turns"]
    assert turns[0]["feedback"]["rating"] == "down"
    assert turns[0]["feedback"]["type"] == "CODE_GENERATION"
    assert turns[0]["feedback"]["at"] >= turns[0]["created_at"]
    assert turns[1]["feedback"] is None


def test_a_repeat_replaces_the_earlier_feedback(api, docs_index, session_id):
    turn = ask(api, session_id, "How is the engine configured?")["turn"]
    assert rate(api, session_id, turn, {"rating": "down", "type": "PLATFORM", "comment": "wrong"}).status_code == 200
    assert rate(api, session_id, turn, {"rating": "up"}).status_code == 200

    fb = httpx.get(f"{api}/v1/sessions/{session_id}", headers=ALICE, timeout=30).json()["turns"][0]["feedback"]
    assert (fb["rating"], fb["type"], fb.get("comment")) == ("up", None, None)
    for table in (docs_index.sessions_table, docs_index.intent_history_table):
        item = turn_items(docs_index, table, session_id, turn)
        assert item["feedback_version"]["N"] == "2"
        assert item["feedback"]["M"]["rating"]["S"] == "up"


def test_concurrent_feedback_loses_no_write_and_both_tables_agree(api, docs_index, session_id):
    turn = ask(api, session_id, "How is the engine configured?")["turn"]
    ratings = ["up", "down"] * 4
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda r: rate(api, session_id, turn, {"rating": r}).status_code, ratings))
    # a writer that lost every race is told to retry (503), never silently dropped
    assert set(codes) <= {200, 503}, codes
    assert codes.count(200) >= len(ratings) // 2, codes
    tables = (docs_index.sessions_table, docs_index.intent_history_table)
    items = [turn_items(docs_index, t, session_id, turn) for t in tables]
    # every accepted write was applied once, in some order, to both items together
    assert [i["feedback_version"]["N"] for i in items] == [str(codes.count(200))] * 2
    assert items[0]["feedback"] == items[1]["feedback"]


def test_another_owners_session_is_not_found_like_a_missing_one(api, session_id):
    turn = ask(api, session_id, "How is the engine configured?")["turn"]
    foreign = rate(api, session_id, turn, {"rating": "down"}, headers=MALLORY)
    missing = rate(api, session_id + "-nope", 1, {"rating": "down"})
    assert foreign.status_code == missing.status_code == 404
    detail = foreign.json()["detail"]
    assert detail.replace(session_id, "S") == missing.json()["detail"].replace(session_id + "-nope", "S")


def test_an_unknown_turn_is_404_naming_the_turn(api, session_id):
    ask(api, session_id, "How is the engine configured?")
    r = rate(api, session_id, 999, {"rating": "up"})
    assert r.status_code == 404
    assert "turn 999" in r.json()["detail"]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"rating": "sideways"}, "rating"),
        ({}, "rating"),
        ({"rating": "up", "type": "POETRY"}, "type"),
        ({"rating": "up", "comment": "x" * 2001}, "comment"),
        ({"rating": "up", "mood": "happy"}, "mood"),
        ([1, 2], "object"),
    ],
)
def test_a_bad_body_is_400_saying_what_is_wrong(api, session_id, body, needle):
    ask(api, session_id, "How is the engine configured?")
    r = rate(api, session_id, 1, body)
    assert r.status_code == 400, r.text
    assert needle in str(r.json()).lower()


@pytest.mark.parametrize(("turn", "status"), [(0, 400), ("x", 400)])
def test_a_turn_that_is_not_a_turn_number_is_400(api, session_id, turn, status):
    ask(api, session_id, "How is the engine configured?")
    assert rate(api, session_id, turn, {"rating": "up"}).status_code == status


def test_the_store_refuses_feedback_on_the_header_turn(docs_index, session_id, api):
    ask(api, session_id, "How is the engine configured?")
    store = SessionStore(client("dynamodb", docs_index), docs_index.sessions_table, docs_index.intent_history_table)
    with pytest.raises(LookupError, match="no turn 0"):
        store.set_feedback(session_id, "local:alice", 0, {"rating": "up", "at": "2026-01-01T00:00:00.000+00:00"})
