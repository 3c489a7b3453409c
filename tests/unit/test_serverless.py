"""Pure logic of the serverless shape: payload bounds, event dispatch, invoke paths, transient errors, extras."""

from __future__ import annotations

import argparse
import time

import msgspec
import pytest

from assist.contracts import (
    REQUEST_BYTES,
    AskRequest,
    Chunk,
    Exchange,
    IntentEntry,
    InvalidRequest,
    QueryType,
    RetrievalResult,
    Route,
    TurnState,
    check_ask,
)
from assist.serverless import payload
from assist.serverless.lambda_entry import is_http_event
from assist.serverless.tasks import is_transient
from assist.settings import Settings
from assist_dev.local.definition import local_arn, placeholders, substitute


def turn(
    message: str, extra_context: str | None, chunk_text: str, n_chunks: int, editor: str | None = None
) -> TurnState:
    req = AskRequest(session_id="s" * 128, message=message, extra_context=extra_context, editor_content=editor)
    chunks = [
        Chunk(
            id=f"doc#{'h' * 200}:{i}",
            doc_id="d" * 80,
            title="t" * 200,
            heading="h" * 200,
            text=chunk_text,
            score=0.5,
            found_by=["vector", "fts"],
            agreement=2,
        )
        for i in range(n_chunks)
    ]
    route = Route(
        type=QueryType.RETRIEVAL,
        layer="llm",
        confidence=0.9,
        reason="r" * 300,
        model_slot="main",
        model="qwen3:1.7b",
        retrieval_query=message,
    )
    stages = [{"name": n, "ms": 12.5, "detail": "x" * 100} for n in ("history", "classify", "retrieve")]
    history = [IntentEntry(type=QueryType.RETRIEVAL, topic="t" * 60, layer="llm", confidence=0.9)] * 6
    state = TurnState(
        request=req,
        request_id="r" * 32,
        started_at=time.time(),
        history=history,
        turn=99,
        route=route,
        retrieval=RetrievalResult(chunks=chunks, confidence="high"),
        stages=stages,
    )
    return payload.trim(state)


def test_a_turn_at_every_limit_stays_far_below_256_kb():
    # the API's limits in plain text, 20 long chunks from the index
    state = turn("m" * 8000, "e" * 16000, "c" * 5000, 20)
    assert len(state.retrieval.chunks) == payload.MAX_CHUNKS
    assert payload.size_of(state) < payload.STEP_FUNCTIONS_LIMIT // 4


def test_the_worst_accepted_turn_still_fits():
    # 4-byte characters and characters JSON escapes six-fold, up to the request budget
    editor = "\x01" * ((REQUEST_BYTES - 100_000) // 6)
    state = turn("😀" * 8000, "😀" * 16000, "\x02" * 5000, 20, editor)
    check_ask(state.request, Settings())  # accepted
    assert payload.size_of(state) < payload.STEP_FUNCTIONS_LIMIT


def test_trim_keeps_the_best_chunks_in_order_and_cuts_long_text():
    state = turn("q", None, "w " * 2000, 12)
    ids = [c.id for c in state.retrieval.chunks]
    assert ids == [f"doc#{'h' * 200}:{i}" for i in range(payload.MAX_CHUNKS)]
    assert all(len(c.text) == payload.CHUNK_CHARS and c.text.endswith("…") for c in state.retrieval.chunks)


def test_a_conversational_turn_keeps_the_newest_exchanges_that_fit():
    def state(conversation: list[Exchange]) -> TurnState:
        full = AskRequest(session_id="s" * 128, message="😀" * 8000, extra_context="\x01" * 10_000)
        return payload.trim(TurnState(request=full, request_id="r", started_at=0.0, conversation=conversation))

    # 30 KB an exchange: with the request, the turn would be over 256 KB if all six travelled
    long = [Exchange(message=f"{i}" + "\x01" * 3999, answer="\x02" * 1000) for i in range(6)]
    kept = state(long)
    assert [e.message[0] for e in kept.conversation] == ["4", "5"]  # the newest, whole, in order
    assert payload.size_of(kept) < payload.STEP_FUNCTIONS_LIMIT * 3 // 4
    one = state([Exchange(message="\x01" * 8000, answer="\x02" * 20_000)])  # too long even alone: cut, kept
    assert [len(e.message) + len(e.answer) for e in one.conversation] == [2 * payload.CONVERSATION_BYTES // 16]
    short = [Exchange(message="hi", answer="hello")] * 6
    assert state(short).conversation == short


def test_trim_cuts_copies_never_the_chunks_the_retriever_remembers():
    long = Chunk(id="d#h:0", doc_id="d", title="t", heading="h", text="w " * 2000, score=0.5)
    state = TurnState(
        request=AskRequest(session_id="s", message="q"),
        request_id="r",
        started_at=0.0,
        retrieval=RetrievalResult(chunks=[long], confidence="high"),
    )
    payload.trim(state)
    assert len(state.retrieval.chunks[0].text) == payload.CHUNK_CHARS
    assert long.text == "w " * 2000


def test_api_gateway_events_and_task_payloads_are_told_apart():
    assert is_http_event({"version": "2.0", "requestContext": {"http": {"method": "POST"}}})
    assert is_http_event({"resource": "/v1/ask", "httpMethod": "POST", "requestContext": {}})
    assert not is_http_event({"session_id": "s", "message": "m"})
    assert not is_http_event(msgspec.to_builtins(turn("q", None, "t", 1)))
    assert not is_http_event({"source": "aws.events", "detail-type": "Scheduled Event"})


def test_invoke_paths_name_the_function():
    from assist_dev.local.lambda_endpoint import function_name

    arn = local_arn("retrieve").replace(":", "%3A")
    assert function_name(f"/2015-03-31/functions/{arn}/invocations") == "assist-retrieve"
    assert function_name("/2015-03-31/functions/assist-answer/invocations") == "assist-answer"
    assert function_name("/2015-03-31/functions/assist-answer:live/invocations") == "assist-answer"


def test_every_placeholder_needs_a_value():
    text = '{"a": "${One}", "b": "${Two}"}'
    assert placeholders(text) == {"One", "Two"}
    assert substitute(text, {"One": "1", "Two": "2"}) == '{"a": "1", "b": "2"}'
    with pytest.raises(ValueError, match="Two"):
        substitute(text, {"One": "1"})


def test_throttling_and_connection_failures_are_transient_bad_input_is_not():
    from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

    def client_error(code: str) -> ClientError:
        return ClientError({"Error": {"Code": code, "Message": "m"}}, "PutItem")

    assert is_transient(client_error("ProvisionedThroughputExceededException"))
    assert is_transient(client_error("ThrottlingException"))
    assert is_transient(EndpointConnectionError(endpoint_url="http://x"))
    assert is_transient(ReadTimeoutError(endpoint_url="http://x"))
    assert is_transient(ConnectionResetError())
    assert not is_transient(client_error("ValidationException"))
    assert not is_transient(client_error("ResourceNotFoundException"))
    assert not is_transient(InvalidRequest("blank"))
    assert not is_transient(ValueError("bug"))


def test_bench_commands_join_an_existing_bench_group_or_create_one():
    from assist_dev.commands.bench import register

    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command")
    other = sub.add_parser("bench").add_subparsers(dest="bench_cmd")
    other.add_parser("elsewhere")
    register(sub)
    assert {"elsewhere", "cold-start", "statemachine", "classify", "retrieval"} <= set(other.choices)

    alone = argparse.ArgumentParser().add_subparsers(dest="command")
    register(alone)
    assert "bench" in alone.choices


def test_each_function_extra_pulls_in_only_what_it_uses():
    from assist_dev.bench.footprint import closure, project_requirements

    def names(extra: str) -> set[str]:
        return set(closure(project_requirements([extra]))[0])

    retrieve, classify, export = names("retrieve"), names("classify"), names("export")
    assert {"lancedb", "pyarrow", "onnxruntime"} <= retrieve
    assert "boto3" in retrieve  # the live pointer and the local copy of a published index on S3 (ADR 0095)
    assert not {"ollama", "aws-lambda-powertools", "mcp"} & retrieve
    assert "lancedb" not in classify
    assert "boto3" in export
    assert not {"lancedb", "onnxruntime", "numpy"} & export
