"""Idempotency-Key on the routes that store a turn (ADR 0049), over real HTTP (uvicorn): a retry with the
same key and body gets the first answer and stores nothing; another body is a 422; two requests at once
with one key store one turn. Through both session stores: moto's DynamoDB (Powertools' DynamoDB layer on
the template's IdempotencyTable) and the embedded SQLite file (our layer beside the sessions)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import sqlite3
import time
import uuid

import httpx
import openai
import pytest

from assist.api.app import create_app
from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.settings import Settings
from tests.integration.test_streaming import read_events
from tests.support.http import serve

pytestmark = pytest.mark.integration
MAIN, LIGHT = "main-model:1b", "light-model:0.5b"
QUESTION = "How does the engine decide that a message is about billing?"


@pytest.fixture(params=["dynamodb", "file"])
def api(request, docs_index: Settings, ollama, tmp_path):
    s = docs_index.with_(
        ollama={"host": ollama.url, "model_name": MAIN, "model_name_conversational": LIGHT},
        sessions={"store": request.param, "store_file": str(tmp_path / "sessions.sqlite3")},
    )
    with serve(create_app(build_engine(s, client("dynamodb", s)))) as base:
        yield Api(base, s)


class Api:
    def __init__(self, url: str, settings: Settings) -> None:
        self.url, self.settings = url, settings

    def records(self) -> dict[str, str]:
        """Each idempotency record's status, read from where the store keeps it."""
        if self.settings.session_backend == "file":
            with contextlib.closing(sqlite3.connect(self.settings.sessions.store_file)) as db:
                if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'idempotency'").fetchone():
                    return {}  # made by the first keyed request
                return dict(db.execute("SELECT id, status FROM idempotency").fetchall())
        items = client("dynamodb", self.settings).scan(TableName=self.settings.idempotency.table)["Items"]
        return {i["id"]["S"]: i["status"]["S"] for i in items}


def key() -> dict[str, str]:
    return {"Idempotency-Key": str(uuid.uuid4())}


def ask(base: str, headers: dict[str, str], **body) -> httpx.Response:
    return httpx.post(base + "/v1/ask", json=body, headers=headers, timeout=60)


def stored_turns(base: str, session_id: str, headers: dict[str, str] | None = None) -> list[dict]:
    r = httpx.get(f"{base}/v1/sessions/{session_id}", headers=headers, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()["turns"]


def test_a_retry_with_the_same_key_and_body_gets_the_first_answer_and_stores_nothing(api, ollama, session_id):
    ollama.queue_replies(["first answer [1].", "a second answer would differ [1]."], model=MAIN)
    h = key()
    before = api.records()
    first = ask(api.url, h, session_id=session_id, message=QUESTION)
    (record,) = set(api.records()) - set(before)  # one record, in the store's own place
    assert api.records()[record] == "COMPLETED"
    retry = ask(api.url, h, session_id=session_id, message=QUESTION)
    assert first.status_code == retry.status_code == 200, (first.text, retry.text)
    assert retry.json() == first.json()
    assert first.json()["answer"] == "first answer [1]."
    assert len(ollama.calls("/api/chat")) == 1  # no second run, so no second model call
    assert [t["answer"] for t in stored_turns(api.url, session_id)] == ["first answer [1]."]
    # a new key is a new request: a second turn
    third = ask(api.url, key(), session_id=session_id, message=QUESTION)
    assert third.json()["turn"] == 2
    assert len(stored_turns(api.url, session_id)) == 2


def test_without_the_header_every_request_is_a_turn(api, session_id):
    for _ in range(2):
        assert ask(api.url, {}, session_id=session_id, message=QUESTION).status_code == 200
    assert len(stored_turns(api.url, session_id)) == 2


def test_the_same_key_with_another_body_is_a_422(api, session_id):
    h = key()
    assert ask(api.url, h, session_id=session_id, message=QUESTION).status_code == 200
    other = ask(api.url, h, session_id=session_id, message="Something else entirely?")
    assert other.status_code == 422
    assert "another request body" in other.json()["detail"]
    assert len(stored_turns(api.url, session_id)) == 1


def test_keys_are_per_caller_one_users_key_never_replays_another_users_answer(api, session_id):
    h = key()
    mine = ask(api.url, h | {"X-Assist-User": "alice"}, session_id=session_id, message=QUESTION)
    assert mine.status_code == 200
    # bob sends alice's key and body: he runs his own request, which finds alice's session not his
    theirs = ask(api.url, h | {"X-Assist-User": "bob"}, session_id=session_id, message=QUESTION)
    assert theirs.status_code == 404
    assert "answer" not in theirs.json()


def test_two_requests_at_once_with_one_key_store_one_turn(api, ollama, session_id):
    ollama.first_token_delay_s = 1.0  # the first answer is still being written when the second arrives
    ollama.queue_replies(["the only answer [1].", "a second run [1]."], model=MAIN)
    h = key()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        replies = list(pool.map(lambda _: ask(api.url, h, session_id=session_id, message=QUESTION), range(2)))
    assert [r.status_code for r in replies] == [200, 200], [r.text for r in replies]
    assert replies[0].json() == replies[1].json()
    assert replies[0].json()["answer"] == "the only answer [1]."
    assert len(ollama.calls("/api/chat")) == 1
    assert len(stored_turns(api.url, session_id)) == 1


def test_a_stream_retried_with_its_key_replays_the_answer_as_events(api, ollama, session_id):
    ollama.queue_replies(["Streaming sends the route first [1].", "a second run [1]."], model=MAIN)
    h = key()
    body = {"session_id": session_id, "message": QUESTION}

    def stream() -> list[tuple[str, dict]]:
        with httpx.stream("POST", api.url + "/v1/ask/stream", json=body, headers=h, timeout=60) as resp:
            assert resp.status_code == 200
            return [(name, data) for name, data, _ in read_events(resp)]

    first, retry = stream(), stream()
    assert len([n for n, _ in first if n == "token"]) > 1  # the first one streamed token by token
    assert [n for n, _ in retry] == ["route", "token", "done"]
    assert retry[1][1]["text"] == "Streaming sends the route first [1]."
    assert retry[2][1] == first[-1][1]  # the done event: the same answer, turn and trace
    assert retry[0][1]["type"] == first[0][1]["type"] == "RETRIEVAL"
    assert len(ollama.calls("/api/chat")) == 1
    assert len(stored_turns(api.url, session_id)) == 1
    # the key is the stream's: on /v1/ask it is another request
    assert ask(api.url, h, **body).json()["turn"] == 2


def test_chat_completions_plain_and_streamed_honour_the_key(api, ollama, session_id):
    ollama.queue_replies(["plain [1].", "streamed [1].", "a third run [1]."], model=MAIN)
    oai = openai.OpenAI(base_url=api.url + "/v1", api_key="unused-locally", max_retries=0)
    messages = [{"role": "user", "content": QUESTION}]
    h = key()
    first = oai.chat.completions.create(model="assist", messages=messages, user=session_id, extra_headers=h)
    retry = oai.chat.completions.create(model="assist", messages=messages, user=session_id, extra_headers=h)
    assert retry.id == first.id
    assert retry.choices[0].message.content == first.choices[0].message.content
    assert first.choices[0].message.content.startswith("plain [1].")

    s = key()

    def streamed() -> str:
        chunks = oai.chat.completions.create(
            model="assist", messages=messages, user=session_id, stream=True, extra_headers=s
        )
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    assert streamed() == streamed()
    assert len(ollama.calls("/api/chat")) == 2
    assert [t["answer"] for t in stored_turns(api.url, session_id)] == ["plain [1].", "streamed [1]."]
    # the same key with another body (here: stream on) is OpenAI's 422
    with pytest.raises(openai.UnprocessableEntityError) as err:
        oai.chat.completions.create(model="assist", messages=messages, user=session_id, stream=True, extra_headers=h)
    assert "another request body" in err.value.body["message"]


def test_a_bad_key_is_a_400(api, session_id):
    r = ask(api.url, {"Idempotency-Key": "has spaces"}, session_id=session_id, message=QUESTION)
    assert r.status_code == 400
    assert "Idempotency-Key" in r.json()["detail"]


def test_a_failed_request_gives_its_key_back(api, session_id):
    h = key()
    too_long = "x" * (api.settings.api.max_message_chars + 1)
    for _ in range(2):  # each try runs (and is refused) again: no 409, no replay of the refusal
        r = ask(api.url, h, session_id=session_id, message=too_long)
        assert r.status_code == 400
        assert "limit is" in r.json()["detail"]
    assert not any(status == "INPROGRESS" for status in api.records().values())


def test_a_retry_that_outwaits_the_bound_is_a_409(docs_index: Settings, ollama, session_id):
    s = docs_index.with_(ollama={"host": ollama.url, "model_name": MAIN}, idempotency={"wait_s": 0.3})
    ollama.first_token_delay_s = 2.0
    h = key()
    with serve(create_app(build_engine(s, client("dynamodb", s)))) as base:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            first = pool.submit(ask, base, h, session_id=session_id, message=QUESTION)
            time.sleep(0.5)  # the first holds the key
            second = ask(base, h, session_id=session_id, message=QUESTION)
            assert second.status_code == 409
            assert "still in progress" in second.json()["detail"]
            assert second.headers["retry-after"] == "2"
            assert first.result().status_code == 200
        assert ask(base, h, session_id=session_id, message=QUESTION).json() == first.result().json()
        assert len(stored_turns(base, session_id)) == 1


def test_a_stream_its_client_left_gives_its_key_back(api, ollama, session_id):
    """The first stream's client goes away after three tokens: the engine keeps that partial turn
    (client_disconnected), the key is free again, and the retry runs to its own `done`."""
    ollama.reply(" ".join(f"word{i}" for i in range(100)), model=MAIN)
    ollama.token_delay_s = 0.02
    h = key()
    body = {"session_id": session_id, "message": QUESTION}
    before = set(api.records())
    with httpx.stream("POST", api.url + "/v1/ask/stream", json=body, headers=h, timeout=30) as resp:
        tokens = 0
        for line in resp.iter_lines():
            tokens += line.startswith("event: token")
            if tokens == 3:
                break
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and set(api.records()) - before:
        time.sleep(0.05)  # the server notices the client is gone, stores the partial turn, frees the key
    assert not set(api.records()) - before, "the key must be free again"
    with httpx.stream("POST", api.url + "/v1/ask/stream", json=body, headers=h, timeout=60) as resp:
        assert resp.status_code == 200
        names = [name for name, _, _ in read_events(resp)]
    assert names[-1] == "done"
    assert names.count("token") > 1  # run again, not replayed
    turns = stored_turns(api.url, session_id)
    assert len(turns) == 2
    assert "client_disconnected" in turns[0]["degraded"]
