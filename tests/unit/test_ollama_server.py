"""Proves the Ollama test double is wire-compatible, and as strict as Ollama, by driving it with the real
``ollama`` client and httpx. Calls that are not about thinking send ``think=False``, as the product does."""

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

from assist_dev.doubles.ollama_server import ModelSpec, OllamaTestServer, count_tokens, render, tokenize

SMALL = "qwen3:0.6b"
LARGE = "qwen3:1.7b"
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]
#: the question as qwen3's template renders it with think=false, by the double's rule (module docstring)
QUESTION_TOKENS = 20


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
    list(client.chat(model=LARGE, messages=QUESTION, stream=True, think=False))
    return time.monotonic() - started


def test_streamed_chat_deltas_concatenate_to_scripted_reply(srv: OllamaTestServer, client: ollama.Client) -> None:
    reply = "  Paris is the capital [1].\n\nSee  also [2]. "
    srv.reply(reply)

    chunks = list(client.chat(model=LARGE, messages=QUESTION, stream=True, think=False))

    deltas, last = chunks[:-1], chunks[-1]
    assert len(deltas) == len(OllamaTestServer.split_tokens(reply)) > 1
    assert "".join(c.message.content for c in deltas) == reply
    assert all(c.done is False and c.message.role == "assistant" and c.model == LARGE for c in deltas)
    assert last.done is True
    assert last.done_reason == "stop"
    assert last.message.content == ""
    assert last.eval_count == len(deltas)
    assert last.prompt_eval_count == QUESTION_TOKENS == count_tokens("".join(render(QUESTION, False)))
    assert last.total_duration == last.load_duration + last.prompt_eval_duration + last.eval_duration


def test_stream_defaults_to_true_and_uses_chunked_ndjson(srv: OllamaTestServer) -> None:
    srv.reply("one two three")

    response = httpx.post(f"{srv.url}/api/chat", json={"model": LARGE, "messages": QUESTION, "think": False})

    assert response.headers["transfer-encoding"] == "chunked"
    assert response.headers["content-type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in response.text.splitlines()]
    assert [line["done"] for line in lines] == [False, False, False, True]
    assert lines[0]["created_at"].endswith("Z")


def test_non_streamed_chat_returns_whole_reply(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.reply("Paris [1].")

    response = client.chat(model=SMALL, messages=QUESTION, stream=False, think=False)

    assert response.message.content == "Paris [1]."
    assert response.message.thinking is None
    assert response.done is True
    assert response.done_reason == "stop"
    assert response.eval_count == 2
    assert response.prompt_eval_count == QUESTION_TOKENS
    assert srv.calls(model=SMALL)[0].body["stream"] is False


def test_generate_streams_and_returns_response_field(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.reply("rewritten query")

    chunks = list(client.generate(model=SMALL, prompt="rewrite this query", stream=True, think=False))
    whole = client.generate(model=SMALL, prompt="rewrite this query", think=False)

    assert "".join(c.response for c in chunks) == "rewritten query"
    assert chunks[-1].done is True
    assert chunks[-1].eval_count == 2
    assert whole.response == "rewritten query"
    assert whole.prompt_eval_count == count_tokens(
        "".join(render([{"role": "user", "content": "rewrite this query"}], False))
    )


def test_queued_replies_are_consumed_in_order_before_default(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.reply("fallback")
    srv.queue_replies(["first", "second"])
    srv.queue_replies(["small only"], model=SMALL)

    answers = [client.chat(model=LARGE, messages=QUESTION, think=False).message.content for _ in range(3)]

    assert answers == ["first", "second", "fallback"]
    assert client.chat(model=SMALL, messages=QUESTION, think=False).message.content == "small only"
    assert client.chat(model=SMALL, messages=QUESTION, think=False).message.content == "fallback"


def test_per_model_reply_overrides_global_reply(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.reply("global")
    srv.reply("large model", model=LARGE)

    assert client.chat(model=LARGE, messages=QUESTION, think=False).message.content == "large model"
    assert client.chat(model=SMALL, messages=QUESTION, think=False).message.content == "global"


def test_default_reply_when_nothing_scripted(client: ollama.Client) -> None:
    assert client.chat(model=LARGE, messages=QUESTION, think=False).message.content == OllamaTestServer.DEFAULT_REPLY


def test_responder_sees_request_messages(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.responder = lambda body: f"{body['model']} heard: {body['messages'][-1]['content']}"

    response = client.chat(model=SMALL, messages=[{"role": "system", "content": "Be brief."}, *QUESTION], think=False)

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
    assert first.prompt_eval_count == 3 == sum(count_tokens(t) for t in texts)


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

    srv.set_models([ModelSpec("llama3", capabilities=("completion",), family="llama"), SMALL])

    assert [m.model for m in client.list().models] == ["llama3:latest", SMALL]
    assert client.chat(model="llama3", messages=QUESTION).done is True
    assert client.list().models[0].details.family == "llama"


@pytest.mark.parametrize("stream", [False, True])
def test_unknown_model_is_404(client: ollama.Client, stream: bool) -> None:
    with pytest.raises(ollama.ResponseError) as raised:
        _consume(client.chat(model="missing:7b", messages=QUESTION, stream=stream))

    assert raised.value.status_code == 404
    assert raised.value.error == "model 'missing:7b' not found"


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
        with http.stream("POST", "/api/chat", json={"model": LARGE, "messages": QUESTION, "think": False}) as response:
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

    stream = client.chat(model=LARGE, messages=QUESTION, stream=True, think=False)
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
    stream = client.chat(model=LARGE, messages=QUESTION, stream=True, think=False)

    assert next(stream).message.content == "never "
    with pytest.raises(httpx.RemoteProtocolError):
        next(stream)
    assert client.chat(model=LARGE, messages=QUESTION, think=False).message.content == "never finished"


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


# ------------------------------------------------------------------------------------------ as strict as Ollama


def _long_turns(n: int, words: int) -> list[dict[str, str]]:
    turns = []
    for i in range(n):
        turns += [
            {"role": "user", "content": f"question {i} " + "lorem " * words},
            {"role": "assistant", "content": f"answer {i} " + "ipsum " * words},
        ]
    return turns


def test_tokenize_rule_concatenates_back_and_counts_special_markers_once() -> None:
    text = "<|im_start|>user\nHow does `ModelSlots.chat` pick its 2 slots? ¿Qué configuración?<|im_end|>\n"

    tokens = tokenize(text)

    assert "".join(tokens) == text
    assert tokens.count("<|im_start|>") == 1
    assert count_tokens("configuration") == 2  # 13 ASCII letters / 5.5
    assert count_tokens(" configuración") == 5  # 13 letters, one not ASCII: / 2.5
    assert count_tokens("2025") == 4  # digits one by one, as Qwen's pre-tokenizer splits them


def test_show_reports_capabilities_and_trained_context(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.set_models([LARGE, ModelSpec("old:1b", capabilities=("completion",), context_length=8192, family="llama")])

    large, old = client.show(LARGE), client.show("old:1b")

    assert large.capabilities == ["completion", "thinking"]
    assert large.modelinfo["general.architecture"] == "qwen3"
    assert large.modelinfo["qwen3.context_length"] == 40960
    assert old.capabilities == ["completion"]
    assert old.modelinfo["llama.context_length"] == 8192
    with pytest.raises(ollama.ResponseError) as raised:
        client.show("missing:1b")
    assert (raised.value.status_code, raised.value.error) == (404, "model 'missing:1b' not found")


@pytest.mark.parametrize("think", [None, True, "low"])
def test_a_thinking_model_thinks_unless_told_not_to(srv: OllamaTestServer, client: ollama.Client, think) -> None:
    srv.reply("Paris [1].")

    chunks = list(client.chat(model=LARGE, messages=QUESTION, stream=True, think=think))
    whole = client.chat(model=LARGE, messages=QUESTION, think=think)

    thinking = [c.message.thinking for c in chunks if c.message.thinking]
    assert "".join(thinking) == srv.thinking_text
    assert chunks[0].message.thinking
    assert not chunks[0].message.content
    assert "".join(c.message.content for c in chunks) == "Paris [1]."
    assert chunks[-1].eval_count == len(thinking) + 2  # thinking tokens are generated tokens
    assert (whole.message.content, whole.message.thinking) == ("Paris [1].", srv.thinking_text)
    assert [e.thinking for e in srv.evaluations] == [True, True]


def test_think_false_is_not_thinking_and_renders_the_empty_block(srv: OllamaTestServer, client: ollama.Client) -> None:
    reply = client.chat(model=LARGE, messages=QUESTION, think=False)

    assert reply.message.thinking is None
    assert reply.eval_count == len(OllamaTestServer.split_tokens(OllamaTestServer.DEFAULT_REPLY))
    assert srv.evaluations[0].prompt.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_think_on_a_model_without_the_capability(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.set_models([ModelSpec("plain:1b", capabilities=("completion",))])

    with pytest.raises(ollama.ResponseError) as raised:
        client.chat(model="plain:1b", messages=QUESTION, think=True)
    assert (raised.value.status_code, raised.value.error) == (400, '"plain:1b" does not support thinking')
    assert client.chat(model="plain:1b", messages=QUESTION, think=False).message.thinking is None
    assert client.chat(model="plain:1b", messages=QUESTION).message.thinking is None


def test_think_must_be_a_boolean_or_a_level(srv: OllamaTestServer) -> None:
    response = httpx.post(f"{srv.url}/api/chat", json={"model": LARGE, "messages": QUESTION, "think": "max"})

    assert response.status_code == 400
    assert response.json()["error"].startswith("think must be a boolean or string")


@pytest.mark.parametrize(("legacy", "opening"), [("tags", "<think>\n"), ("close", "")])
def test_legacy_template_thinks_into_content(legacy: str, opening: str) -> None:
    with OllamaTestServer(legacy_template=legacy) as server, ollama.Client(host=server.url) as c:
        server.reply("Paris [1].")

        assert c.show(LARGE).capabilities == ["completion"]
        with pytest.raises(ollama.ResponseError):
            c.chat(model=LARGE, messages=QUESTION, think=True)
        streamed = "".join(x.message.content for x in c.chat(model=LARGE, messages=QUESTION, stream=True, think=False))
        whole = c.chat(model=LARGE, messages=QUESTION, think=False)

    expected = f"{opening}{server.thinking_text}\n</think>\n\nParis [1]."
    assert streamed == whole.message.content == expected
    assert whole.message.thinking is None


def test_before_0_12_4_an_omitted_think_leaves_the_thinking_in_content() -> None:
    with OllamaTestServer(version="0.11.0") as server, ollama.Client(host=server.url) as c:
        server.reply("Paris [1].")
        omitted = c.chat(model=LARGE, messages=QUESTION)
        asked = c.chat(model=LARGE, messages=QUESTION, think=True)

    assert omitted.message.content.startswith("<think>\n")
    assert omitted.message.content.endswith("Paris [1].")
    assert (asked.message.content, asked.message.thinking) == ("Paris [1].", server.thinking_text)


def test_thinking_takes_time_when_asked(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.think_s = 0.3

    started = time.monotonic()
    client.chat(model=LARGE, messages=QUESTION, think=False)
    quick = time.monotonic() - started
    client.chat(model=LARGE, messages=QUESTION)
    slow = time.monotonic() - started - quick

    assert quick < 0.2 < 0.3 <= slow


def test_the_default_window_drops_the_oldest_messages_and_keeps_the_system_prompt(
    srv: OllamaTestServer, client: ollama.Client
) -> None:
    system = {"role": "system", "content": "SYSTEM PROMPT: answer from the sources."}
    messages = [system, *_long_turns(12, 200), {"role": "user", "content": "And the last question?"}]
    sent = count_tokens("".join(render(messages, False)))

    reply = client.chat(model=LARGE, messages=messages, think=False)

    evaluation = srv.evaluations[0]
    assert sent > 4096 == evaluation.num_ctx
    assert evaluation.prompt_tokens == sent
    assert evaluation.dropped_messages > 0
    assert evaluation.cut_tokens == 0
    assert evaluation.cut
    assert evaluation.prompt.startswith("<|im_start|>system\nSYSTEM PROMPT")
    assert "question 0 " not in evaluation.prompt
    assert "And the last question?" in evaluation.prompt
    assert reply.prompt_eval_count == evaluation.evaluated_tokens <= 4096


def test_one_long_message_keeps_four_tokens_and_the_tail(srv: OllamaTestServer, client: ollama.Client) -> None:
    messages = [
        {"role": "system", "content": "SYSTEM PROMPT"},
        {"role": "user", "content": "start " + "word " * 6000 + "THE QUESTION"},
    ]

    reply = client.chat(model=LARGE, messages=messages, think=False, options={"num_ctx": 2048})

    evaluation = srv.evaluations[0]
    assert reply.prompt_eval_count == 2048 == evaluation.evaluated_tokens
    assert evaluation.cut_tokens == evaluation.prompt_tokens - 2048
    assert evaluation.prompt.startswith("<|im_start|>system\nSYSTEM")  # the first 4 tokens
    assert "PROMPT" not in evaluation.prompt  # … and nothing else of the system prompt
    assert "THE QUESTION" in evaluation.prompt


def test_num_ctx_is_capped_at_the_trained_length_and_defaults_by_version(client: ollama.Client) -> None:
    with OllamaTestServer([ModelSpec("small:1b", context_length=8192)]) as server, ollama.Client(server.url) as c:
        c.chat(model="small:1b", messages=QUESTION, think=False, options={"num_ctx": 32768})
        c.chat(model="small:1b", messages=QUESTION, think=False)
    with OllamaTestServer(version="0.6.6") as old, ollama.Client(host=old.url) as c:
        c.chat(model=LARGE, messages=QUESTION, think=False)

    assert [e.num_ctx for e in server.evaluations] == [8192, 4096]
    assert old.evaluations[0].num_ctx == 2048


def test_num_predict_stops_the_generation_at_length(srv: OllamaTestServer, client: ollama.Client) -> None:
    srv.reply("one two three four five six")

    cut = client.chat(model=LARGE, messages=QUESTION, think=False, options={"num_predict": 4})
    whole = client.chat(model=LARGE, messages=QUESTION, think=False, options={"num_predict": 100})
    thinking = list(client.chat(model=LARGE, messages=QUESTION, stream=True, options={"num_predict": 3}))

    assert (cut.message.content, cut.eval_count, cut.done_reason) == ("one two three four ", 4, "length")
    assert (whole.message.content, whole.done_reason) == ("one two three four five six", "stop")
    assert thinking[-1].done_reason == "length"
    assert thinking[-1].eval_count == 3
    assert "".join(c.message.content for c in thinking) == ""  # the budget went on thinking


def test_empty_messages_only_load_the_model(srv: OllamaTestServer, client: ollama.Client) -> None:
    reply = client.chat(model=LARGE, messages=[], keep_alive="10m")

    assert (reply.done, reply.done_reason, reply.message.content) == (True, "load", "")
    assert srv.evaluations == []


def _concurrently(n: int, call) -> float:
    started = time.monotonic()
    threads = [threading.Thread(target=call) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.monotonic() - started


@pytest.mark.parametrize("parallel", [1, 3])
def test_each_model_serves_num_parallel_requests_at_once(parallel: int) -> None:
    with OllamaTestServer(num_parallel=parallel) as server:
        server.first_token_delay_s = 0.2
        with ollama.Client(host=server.url) as c:
            took = _concurrently(3, lambda: c.chat(model=LARGE, messages=QUESTION, think=False))
            other = _concurrently(1, lambda: c.chat(model=SMALL, messages=QUESTION, think=False))

    assert server.max_active(LARGE) == parallel
    assert (took >= 0.6) if parallel == 1 else (took < 0.45)
    assert sorted(e.queued_s > 0.15 for e in server.evaluations[:3]).count(True) == (2 if parallel == 1 else 0)
    assert other < 0.45  # another model has slots of its own


def test_another_num_ctx_on_a_loaded_model_reloads_it(srv: OllamaTestServer, client: ollama.Client) -> None:
    for num_ctx in (8192, 8192, 2048, 8192):
        client.chat(model=LARGE, messages=QUESTION, think=False, options={"num_ctx": num_ctx})
    client.chat(model=SMALL, messages=QUESTION, think=False, options={"num_ctx": 2048})

    assert srv.reloads == 2
    assert [e.reloaded for e in srv.evaluations] == [True, False, True, True, True]
