"""Feedback on a turn through the real parts: HTTP (uvicorn) → engine → moto DynamoDB (ADR 0045)."""

from __future__ import annotations

import concurrent.futures

import httpx
import pytest

from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.contracts import Feedback
from assist.sessions.dynamodb import DynamoDBStore
from assist.settings import Settings
from tests.integration.conftest import answered

pytestmark = pytest.mark.integration
ALICE, MALLORY = {"X-Assist-User": "alice"}, {"X-Assist-User": "mallory"}


def ask(base: str, session_id: str, message: str, headers=ALICE) -> dict:
    return answered(base, headers, session_id=session_id, message=message)


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
    for table in (docs_index.sessions.table, docs_index.sessions.intent_history_table):
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
    tables = (docs_index.sessions.table, docs_index.sessions.intent_history_table)
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
    store = DynamoDBStore(
        client("dynamodb", docs_index), docs_index.sessions.table, docs_index.sessions.intent_history_table
    )
    with pytest.raises(LookupError, match="no turn 0"):
        store.set_feedback(
            session_id, "local:alice", 0, Feedback(rating="up", at="2026-01-01T00:00:00.000+00:00", type=None)
        )


def test_the_label_export_carries_the_persons_label_redacted_and_again_after_a_change(docs_index, tmp_path):
    import json

    from assist.contracts import AskRequest, FeedbackRequest, QueryType
    from assist.export.labels import LabelExporter
    from assist.export.sink import LocalSink
    from assist.offline.classify.sources import read_sources
    from assist.sessions.backends import open_store
    from assist_dev.local.resources import ensure_resources

    s = docs_index.with_(
        sessions={"table": "s-fb-export", "intent_history_table": "h-fb-export"}, export={"settle_s": 0.0}
    )
    ddb = client("dynamodb", s)
    ensure_resources(s, ddb, client("s3", s))
    engine = build_engine(s, ddb)
    for n in range(3):
        engine.ask(AskRequest(session_id="fb-export", message=f"How do I rebuild the index, take {n}?"), owner="u")
    engine.feedback(
        "fb-export", "u", 2, FeedbackRequest(rating="down", type=QueryType.PLATFORM, comment="ring +34 600 123 456")
    )
    sink = LocalSink(tmp_path / "labels")
    LabelExporter(s, open_store(s, ddb), sink).run(force=True)

    def records() -> list[dict]:
        return [json.loads(ln) for name in sink.names() for ln in sink.read(name).decode().splitlines()]

    first = {r["turn"]: r for r in records()}
    assert [first[t]["label_source"] for t in (1, 2, 3)] == ["router", "user", "router"]
    routed = engine.transcript("fb-export", "u").turns[1].type
    assert (first[2]["type"], first[2]["routed_type"], first[2]["revision"]) == ("PLATFORM", routed, 1)
    assert first[2]["feedback"]["comment"] == "ring <PHONE>"
    assert "600 123 456" not in json.dumps(records())

    # the person changes their mind after the export: the next run carries the turn again, a later revision
    engine.feedback("fb-export", "u", 2, FeedbackRequest(rating="down", type=QueryType.CODE_GENERATION))
    again = LabelExporter(s, open_store(s, ddb), sink).run(force=True)
    assert again.records == 1
    examples, _ = read_sources([str(tmp_path / "labels")])
    # one example of the turn, whatever its revisions: the latest label
    assert [e.label for e in examples if e.id == first[2]["id"]] == ["CODE_GENERATION"]
