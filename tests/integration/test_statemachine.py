"""The ask state machine, run locally from the very file template.yaml deploys, as named scenarios.

moto's ASL interpreter executes infra/statemachine/ask.asl.json; its Lambda tasks reach our
functions through the local Lambda endpoint. The scenarios assert on the execution
history's events (as aws-samples' serverless-test-samples do), on the answer the client
gets, and on the log events our handlers wrote. Faults are injected at the Lambda invoke
boundary. Retry intervals are real sleeps (1 s; one retry per task, which the 28 s budget has room for).
"""

from __future__ import annotations

import itertools

import httpx
import msgspec
import pytest
import structlog
from structlog.testing import capture_logs

from assist.api.app import create_app
from assist.aws.clients import client
from assist.contracts import AskRequest
from assist.serverless.execution import error_message
from assist.serverless.payload import STEP_FUNCTIONS_LIMIT
from assist_dev.local.definition import local_definition
from assist_dev.local.statemachine import ServerlessStack
from tests.support.http import serve

pytestmark = pytest.mark.integration
QUESTION = "How does the engine decide that a message is about billing?"
PLATFORM = "You are a direct and concise assistant. How much of my quota is left?"
_names = itertools.count(1)


@pytest.fixture(scope="module")
def stack(docs_index):
    s = ServerlessStack(docs_index, docs_index.aws.endpoint_url, name=f"assist-ask-scenarios-{next(_names)}").start()
    s.warm()
    yield s
    s.stop()


@pytest.fixture
def api(stack):
    with serve(create_app(stack.functions["answer"].engine.get(), ask_via=stack.ask)) as base:
        yield base


def run(stack, session_id: str, message: str):
    return stack.machine.run(msgspec.to_builtins(AskRequest(session_id=session_id, message=message)))


def task_events(execution, state: str) -> list[str]:
    """Event types of one task state, in order (between its Entered and Exited events)."""
    out, inside = [], False
    for e in execution.events:
        if e.get("stateEnteredEventDetails", {}).get("name") == state:
            inside = True
        elif inside and "stateExitedEventDetails" in e:
            return out
        elif inside:
            out.append(e["type"])
    return out


def test_the_local_state_machine_is_the_deployed_definition(stack, docs_index):
    sfn = client("stepfunctions", docs_index)
    described = sfn.describe_state_machine(stateMachineArn=stack.arn)
    assert described["definition"] == local_definition(docs_index.aws.region)
    assert described["type"] == "EXPRESS"


def test_platform_question_never_visits_retrieve(stack, session_id):
    ex = run(stack, session_id, PLATFORM)
    assert ex.status == "SUCCEEDED"
    assert ex.states == ["Classify", "RouteByType", "Answer"]
    assert ex.output["route"]["type"] == "PLATFORM"
    assert ex.output["sources"] == []
    assert ex.output["turn"] == 1  # the turn the answer was stored under, for feedback
    assert [s["name"] for s in ex.output["trace"]["stages"]] == ["history", "classify", "generate", "persist"]


def test_retrieval_question_visits_classify_retrieve_answer(stack, session_id):
    ex = run(stack, session_id, QUESTION)
    assert ex.status == "SUCCEEDED"
    assert ex.states == ["Classify", "RouteByType", "Retrieve", "Answer"]
    assert ex.output["sources"]
    # one trace across three functions: each task appended its stages to the payload
    assert [s["name"] for s in ex.output["trace"]["stages"]] == [
        "history",
        "classify",
        "retrieve",
        "generate",
        "persist",
    ]
    sizes = [len(e["taskSucceededEventDetails"]["output"]) for e in ex.events if "taskSucceededEventDetails" in e]
    assert len(sizes) == 3
    assert max(sizes) < STEP_FUNCTIONS_LIMIT // 8  # a real turn with its chunks stays far below 256 KB


def test_the_handler_code_that_ran_is_ours(stack, session_id):
    before = dict(stack.endpoint.invocations)
    with capture_logs(processors=[structlog.contextvars.merge_contextvars]) as logs:
        ex = run(stack, session_id, QUESTION)
    request_id = ex.output["trace"]["request_id"]
    by_function = {(e.get("function"), e["event"]) for e in logs if e.get("request_id") == request_id}
    assert {
        ("retrieve", "retrieve.fused"),
        ("retrieve", "task.completed"),
        ("answer", "ask.completed"),
        ("answer", "task.completed"),
    } <= by_function
    assert ("classify", "classify.decided") in {(e.get("function"), e["event"]) for e in logs}
    after = stack.endpoint.invocations
    assert {f: after[f] - before.get(f, 0) for f in after} == {
        "assist-classify": 1,
        "assist-retrieve": 1,
        "assist-answer": 1,
    }


def test_a_task_that_fails_once_is_retried_and_the_execution_succeeds(stack, session_id):
    stack.endpoint.fail_next("assist-retrieve", 1)
    ex = run(stack, session_id, QUESTION)
    assert ex.status == "SUCCEEDED"
    assert task_events(ex, "Retrieve") == [
        "TaskScheduled",
        "TaskStarted",
        "TaskFailed",
        "TaskScheduled",
        "TaskStarted",
        "TaskSucceeded",
    ]
    failed = next(e for e in ex.events if e["type"] == "TaskFailed")
    assert failed["taskFailedEventDetails"]["error"] == "TransientError"
    assert ex.states == ["Classify", "RouteByType", "Retrieve", "Answer"]
    assert "retrieve_failed" not in ex.output["degraded"]
    assert ex.output["sources"]


def test_retrieve_that_keeps_failing_gives_a_degraded_answer_not_a_500(stack, api, docs_index, session_id):
    stack.endpoint.fail_next("assist-retrieve", 2)
    r = httpx.post(api + "/v1/ask", json={"session_id": session_id, "message": QUESTION}, timeout=60)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["degraded"][0] == "retrieve_failed"
    assert body["sources"] == []
    assert body["trace"]["execution"]["states"] == ["Classify", "RouteByType", "Retrieve", "Answer"]
    assert body["trace"]["execution"]["arn"].startswith("arn:aws:states:")
    sfn = client("stepfunctions", docs_index)
    ex_events = sfn.get_execution_history(executionArn=body["trace"]["execution"]["arn"])["events"]
    assert [e["type"] for e in ex_events].count(
        "TaskFailed"
    ) == 2  # the first try and its one retry (the budget has room for no more)


def test_answer_that_keeps_failing_gives_a_degraded_answer_not_a_500(stack, api, session_id):
    stack.endpoint.fail_next("assist-answer", 2)
    r = httpx.post(api + "/v1/ask", json={"session_id": session_id, "message": PLATFORM}, timeout=60)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["degraded"] == ["answer_failed"]
    assert body["route"]["type"] == "PLATFORM"
    assert "please send it again" in body["answer"]
    assert body["turn"] == 0  # nothing stored, nothing to rate
    assert body["trace"]["execution"]["states"] == ["Classify", "RouteByType", "Answer", "AnswerFailed"]


def test_classify_that_keeps_failing_gives_a_degraded_answer_not_a_500(stack, api, session_id):
    stack.endpoint.fail_next("assist-classify", 2)
    r = httpx.post(api + "/v1/ask", json={"session_id": session_id, "message": QUESTION}, timeout=60)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["degraded"] == ["classify_failed"]
    assert body["route"] is None
    assert body["trace"]["execution"]["states"] == ["Classify", "ClassifyFailed"]


def test_a_request_the_classify_task_rejects_ends_the_execution_without_a_retry(stack, session_id):
    # the API refuses such a request before starting an execution; a direct start still meets the task's check
    before = stack.endpoint.invocations["assist-classify"]
    ex = run(stack, session_id, "   ")
    assert (ex.status, ex.error) == ("FAILED", "InvalidRequest")
    assert ex.states == ["Classify", "Rejected"]
    assert "blank" in error_message(ex.cause)
    assert stack.endpoint.invocations["assist-classify"] == before + 1


@pytest.mark.parametrize(
    ("fields", "detail"),
    [
        ({"message": "   "}, "message is blank"),
        ({"message": "é" * 100_000}, "message is 100000 characters; the limit is 8000"),  # 200 KB of UTF-8
        ({"message": "x", "editor_content": "y" * 140_000}, "editor_content is 140000 characters; the limit is 32000"),
        ({"message": "x", "user_info": {"bio": "😀" * 3000}}, "user_info is 12010 bytes as JSON; the limit is 8192"),
        ({"message": "x", "extra_context": "\x01" * 16_000, "editor_content": "\x01" * 10_000}, "limit is 128 KB"),
    ],
)
def test_a_request_over_a_limit_is_a_400_before_any_execution_starts(stack, api, session_id, fields, detail):
    before = stack.endpoint.invocations["assist-classify"], executions(stack)
    r = httpx.post(api + "/v1/ask", json={"session_id": session_id, **fields}, timeout=60)
    assert r.status_code == 400, r.text[:300]
    assert detail in r.json()["detail"]
    assert (stack.endpoint.invocations["assist-classify"], executions(stack)) == before


def executions(stack) -> int:
    pages = client("stepfunctions", stack.settings).get_paginator("list_executions").paginate(stateMachineArn=stack.arn)
    return sum(len(p["executions"]) for p in pages)


def test_the_model_answers_from_the_chunks_that_travelled_through_the_state_machine(docs_index, ollama, session_id):
    settings = docs_index.with_(ollama={"host": ollama.url, "model_name": "main-model:1b"})
    stack = ServerlessStack(settings, settings.aws.endpoint_url, name=f"assist-ask-llm-{next(_names)}").start()
    try:
        ollama.reply("Routing decides by layers [1].", model="main-model:1b")
        answer = stack.ask(AskRequest(session_id=session_id, message=QUESTION))
    finally:
        stack.stop()
    assert answer.answer == "Routing decides by layers [1]."
    assert answer.degraded == []
    (call,) = ollama.calls("/api/chat")
    assert answer.sources[0].title in call.body["messages"][-1]["content"]


def test_a_conversational_turn_after_long_messages_stays_under_the_payload_limit(stack, api, session_id):
    # six earlier turns at the message limit, all but one character (a message needs a visible one) escaped six-fold
    # by JSON: the turn's conversation alone would be about 300 KB if it travelled whole
    for _ in range(6):  # declared PLATFORM with its account data: stored like any turn, without a search
        long = {
            "session_id": session_id,
            "message": "?" + "\x01" * 7999,
            "query_type": "PLATFORM",
            "extra_context": "-",
        }
        r = httpx.post(api + "/v1/ask", json=long, timeout=60)
        assert r.status_code == 200, r.text[:300]
    follow_up = {"session_id": session_id, "message": "Shorter, please.", "query_type": "CONVERSATIONAL"}
    r = httpx.post(api + "/v1/ask", json=follow_up, timeout=60)
    assert r.status_code == 200, r.text[:300]
    assert r.json()["trace"]["execution"]["states"] == ["Classify", "RouteByType", "Answer"]
    assert r.json()["route"]["type"] == "CONVERSATIONAL"
