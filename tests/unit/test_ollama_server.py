"""Proves the Ollama test double is wire-compatible by driving it with the real ``ollama`` client and httpx."""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import ollama
import pytest

from assist_dev.doubles.ollama_server import OllamaTestServer

SMALL = "qwen3:0.6b"
LARGE = "qwen3:1.7b"
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture
def srv() -> Iterator[OllamaTestServer]:
    with OllamaTestServer() as server:
        yield server


@pytest.fixture
def client(srv: OllamaTestServer) -> Iterator[ollama.Client]:
    with ollama.Client(host=srv.url) as c:
        yield c


def _consume(response: ollama.ChatResponse | Iterator[ollama.ChatResponse]) -> None:
    """Drain a streamed response so errors raised while iterating surface like non-streamed ones."""
    if not isinstance(response, ollama.ChatResponse):
        list(response)


def _timed_stream(client: ollama.Client) -> float:
    started = time.monotonic()
    list(client.chat(model=LARGE, messages=QUESTION, stream=True))
    return time.monotonic() - started


def test_streamed_chat_deltas_concatenate_to_scripted_reply(srv: OllamaTestServer, client: ollama.Client) -> None:
    reply = "  Paris is the capital [1].\n\nSee  also [2]. "
    srv.reply(reply)

    chunks = list(client.chat(model=LARGE, messages=QUESTION, stream=True))

    deltas, last = chunks[:-1], chunks[-1]
    assert len(deltas) == len(OllamaTestServer.split_tokens(reply)) > 1
    assert "".join(c.message.content for c in deltas) == reply
    assert all(c.done is False and c.message.role == "assistant" and c.model == LARGE for c in deltas)
    assert last.done is True
    assert last.done_reason == "stop"
    assert last.message.content == ""
    assert last.eval_count == len(deltas)
    assert last.prompt_eval_count == 6
    assert last.total_duration == last.load_duration + last.prompt_eval_duration + last.eval_duration


def test_stream_defaults_to_true_and_uses_chunked_ndjson(srv: OllamaTestServer) -> None:
    srv.reply("one two three")

    response = httpx.post(f"{srv.url}/api/chat", json={"model": LARGE, "messages": QUESTION})

    assert response.headers["transfer-encoding"] == "chunked"
    assert response.headers["content-type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in response.text.splitlines()]
    assert [line["done"] for line in lines] == [False, False, False, True]
    assert lines[0]["created_at"].endswith("Z")


def test_non_streamed_chat_returns_whole_reply(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.reply("Paris [1].")

    response = client.chat(model=SMALL, messages=QUESTION, stream=False)

    assert response.message.content == "Paris [1]."
    assert response.done is True
    assert response.done_reason == "stop"
    assert response.eval_count == 2
    assert response.prompt_eval_count == 6
    assert srv.calls(model=SMALL)[0].body["stream"] is False


def test_generate_streams_and_returns_response_field(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.reply("rewritten query")

    chunks = list(client.generate(model=SMALL, prompt="rewrite this query", stream=True))
    whole = client.generate(model=SMALL, prompt="rewrite this query")

    assert "".join(c.response for c in chunks) == "rewritten query"
    assert chunks[-1].done is True
    assert chunks[-1].eval_count == 2
    assert whole.response == "rewritten query"
    assert whole.prompt_eval_count == 3


def test_queued_replies_are_consumed_in_order_before_default(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.reply("fallback")
    srv.queue_replies(["first", "second"])
    srv.queue_replies(["small only"], model=SMALL)

    answers = [client.chat(model=LARGE, messages=QUESTION).message.content for _ in range(3)]

    assert answers == ["first", "second", "fallback"]
    assert client.chat(model=SMALL, messages=QUESTION).message.content == "small only"
    assert client.chat(model=SMALL, messages=QUESTION).message.content == "fallback"


def test_per_model_reply_overrides_global_reply(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.reply("global")
    srv.reply("large model", model=LARGE)

    assert client.chat(model=LARGE, messages=QUESTION).message.content == "large model"
    assert client.chat(model=SMALL, messages=QUESTION).message.content == "global"


def test_default_reply_when_nothing_scripted(client: ollama.Client) -> None:
    assert client.chat(model=LARGE, messages=QUESTION).message.content == OllamaTestServer.DEFAULT_REPLY


def test_responder_sees_request_messages(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.responder = lambda body: f"{body['model']} heard: {body['messages'][-1]['content']}"

    response = client.chat(model=SMALL, messages=[{"role": "system", "content": "Be brief."}, *QUESTION])

    assert response.message.content == f"{SMALL} heard: What is the capital of France?"


def test_embed_is_deterministic_normalised_and_sized(srv: OllamaTestServer, client: ollama.Client) -> None:
    texts = ["alpha", "beta", "alpha"]

    first = client.embed(model=SMALL, input=texts)
    again = client.embed(model=LARGE, input="beta")

    assert len(first.embeddings) == 3
    assert all(len(vector) == 384 for vector in first.embeddings)
    assert all(math.isclose(math.hypot(*vector), 1.0) for vector in first.embeddings)
    assert first.embeddings[0] == first.embeddings[2] != first.embeddings[1]
    assert list(again.embeddings[0]) == first.embeddings[1] == OllamaTestServer.embedding_for("beta")
    assert first.prompt_eval_count == 3


def test_embedding_dimension_is_configurable() -> None:
    with OllamaTestServer(embedding_dim=8) as server, ollama.Client(host=server.url) as c:
        assert len(c.embed(model=SMALL, input="x").embeddings[0]) == 8
        assert len(c.embed(model=SMALL, input="x", dimensions=16).embeddings[0]) == 16


def test_list_returns_served_models(srv: OllamaTestServer, client: ollama.Client) -> None:
    assert [m.model for m in client.list().models] == [LARGE, SMALL]
    listed = client.list().models[0]
    assert listed.details.parameter_size == "1.7B"
    assert listed.modified_at is not None
    assert len(listed.digest) == 64

    srv.set_models(["llama3", SMALL])

    assert [m.model for m in client.list().models] == ["llama3:latest", SMALL]
    assert client.chat(model="llama3", messages=QUESTION).done is True


@pytest.mark.parametrize("stream", [False, True])
def test_unknown_model_is_404(client: ollama.Client, stream: bool) -> None:
    with pytest.raises(ollama.ResponseError) as raised:
        _consume(client.chat(model="missing:7b", messages=QUESTION, stream=stream))

    assert raised.value.status_code == 404
    assert raised.value.error == 'model "missing:7b" not found, try pulling it first'


def test_fail_next_fails_then_recovers(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.fail_next(2, status=503, message="server busy")

    for call in (lambda: client.chat(model=LARGE, messages=QUESTION), lambda: client.embed(model=SMALL, input="x")):
        with pytest.raises(ollama.ResponseError) as raised:
            call()
        assert (raised.value.status_code, raised.value.error) == (503, "server busy")

    assert client.chat(model=LARGE, messages=QUESTION).done is True


def test_set_down_one_model_then_all_then_up(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.set_down(LARGE)

    with pytest.raises(ollama.ResponseError) as raised:
        client.chat(model=LARGE, messages=QUESTION)
    assert (raised.value.status_code, raised.value.error) == (500, "model is unavailable")
    assert client.chat(model=SMALL, messages=QUESTION).done is True
    srv.set_up(LARGE)
    assert client.chat(model=LARGE, messages=QUESTION).done is True

    srv.set_down()
    with pytest.raises(ollama.ResponseError):
        client.embed(model=SMALL, input="x")

    srv.set_up()
    assert client.chat(model=LARGE, messages=QUESTION).done is True


def test_token_delay_slows_streaming(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.reply("one two three four five six")  # six tokens: five gaps between them
    fast = _timed_stream(client)

    srv.token_delay_s = 0.05
    slow = _timed_stream(client)

    assert fast < 0.2 <= 5 * 0.05 <= slow


def test_first_token_delay_past_client_timeout_counts_as_disconnect(srv: OllamaTestServer) -> None:
    srv.first_token_delay_s = 2.0

    with ollama.Client(host=srv.url, timeout=0.2) as impatient, pytest.raises(httpx.ReadTimeout):
        impatient.chat(model=LARGE, messages=QUESTION)

    assert srv.disconnected.wait(1.0), "server did not notice the client giving up while the model was slow"
    assert srv.disconnects == 1


def test_client_closing_stream_early_is_counted_as_disconnect(srv: OllamaTestServer) -> None:
    srv.reply(" ".join(f"tok{i}" for i in range(500)))
    srv.token_delay_s = 0.01

    with httpx.Client(base_url=srv.url) as http:
        with http.stream("POST", "/api/chat", json={"model": LARGE, "messages": QUESTION}) as response:
            lines = response.iter_lines()  # keep a reference: dropping the generator closes the connection
            first = json.loads(next(lines))
            time.sleep(0.05)  # several token gaps while still connected
            assert srv.disconnects == 0
        assert first["message"]["content"] == "tok0 "

        assert srv.disconnected.wait(2.0), "server kept streaming to a closed connection"
    assert srv.disconnects == 1


def test_closing_ollama_stream_generator_is_counted_as_disconnect(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.reply(" ".join(f"tok{i}" for i in range(500)))
    srv.token_delay_s = 0.01

    stream = client.chat(model=LARGE, messages=QUESTION, stream=True)
    assert next(stream).message.content == "tok0 "
    stream.close()  # how a consumer cancels: GeneratorExit makes httpcore close the connection

    assert srv.disconnected.wait(2.0), "closing the ollama stream generator did not reach the server"
    assert srv.disconnects == 1

    srv.clear()
    assert srv.disconnects == 0
    assert not srv.disconnected.is_set()


def test_completed_stream_is_not_a_disconnect(srv: OllamaTestServer, client: ollama.Client) -> None:
    list(client.chat(model=LARGE, messages=QUESTION, stream=True))
    client.chat(model=LARGE, messages=QUESTION)

    assert srv.disconnects == 0
    assert not srv.disconnected.is_set()


def test_drop_connection_next_breaks_stream_after_first_token(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.reply("never finished")
    srv.drop_connection_next()
    stream = client.chat(model=LARGE, messages=QUESTION, stream=True)

    assert next(stream).message.content == "never "
    with pytest.raises(httpx.RemoteProtocolError):
        next(stream)
    assert client.chat(model=LARGE, messages=QUESTION).message.content == "never finished"


def test_drop_connection_next_without_stream_sends_no_response(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.drop_connection_next()

    with pytest.raises(httpx.RemoteProtocolError):
        client.chat(model=LARGE, messages=QUESTION)

    assert client.chat(model=LARGE, messages=QUESTION).done is True


def test_requests_are_recorded_with_bodies(srv: OllamaTestServer, client: ollama.Client) -> None:
    client.list()
    client.chat(model=SMALL, messages=QUESTION, options={"temperature": 0}, keep_alive="5m")
    client.embed(model=LARGE, input=["doc"])

    assert [(r.method, r.path, r.model) for r in srv.requests] == [
        ("GET", "/api/tags", None),
        ("POST", "/api/chat", SMALL),
        ("POST", "/api/embed", LARGE),
    ]
    chat = srv.calls("/api/chat", model=SMALL)[0]
    assert chat.body["messages"] == QUESTION
    assert chat.body["options"] == {"temperature": 0}
    assert chat.body["keep_alive"] == "5m"
    assert srv.calls("/api/chat", model=LARGE) == []
    assert srv.requests[0].body is None
    assert srv.requests[0].time <= chat.time

    srv.clear()
    assert srv.requests == []


def test_root_version_and_bad_requests(srv: OllamaTestServer) -> None:
    with httpx.Client(base_url=srv.url) as http:
        assert http.get("/").text == "Ollama is running"
        assert http.head("/").status_code == 200
        assert http.get("/api/version").json() == {"version": srv.version}
        assert http.get("/api/nope").status_code == 404

        missing_model = http.post("/api/chat", json={"messages": QUESTION})
        assert (missing_model.status_code, missing_model.json()) == (400, {"error": "model is required"})
        bad_json = http.post("/api/embed", content=b"{not json")
        assert bad_json.status_code == 400
        assert "invalid JSON" in bad_json.json()["error"]


def test_stop_closes_keep_alive_connections_without_leaking_threads() -> None:
    threads_before = threading.active_count()
    server = OllamaTestServer().start()
    port = int(server.url.rsplit(":", 1)[1])
    with ollama.Client(host=server.url) as c:
        c.list()  # leaves an idle keep-alive connection whose handler thread is blocked reading
        started = time.monotonic()
        server.stop()
        assert time.monotonic() - started < 1.0

    assert threading.active_count() == threads_before
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass
