"""One deadline per request (ADR 0051): the state machine's timeouts fit under API Gateway's 30 s, and a
model that does not answer in time gives way to an extractive answer within the budget — one turn stored,
one execution started."""

from __future__ import annotations

import itertools
import json
import time

import httpx
import pytest

from assist.api.app import create_app
from assist.aws.clients import client
from assist_dev.doubles.ollama_server import OllamaTestServer
from assist_dev.local.definition import ASL
from assist_dev.local.statemachine import ServerlessStack
from assist_dev.rehearsal.template import Stack, expand
from tests.support.http import serve

pytestmark = pytest.mark.integration
GATEWAY_S = 30
BUDGET_S = 6.0  # API_DEADLINE_S for these scenarios: the real 28 s would make each wait 28 s
_names = itertools.count(1)


def test_the_ask_paths_task_timeouts_fit_under_api_gateway_with_a_margin():
    states = json.loads(ASL.read_text())
    tasks = {n: s for n, s in states["States"].items() if s["Type"] == "Task"}
    assert sum(s["TimeoutSeconds"] for s in tasks.values()) <= 28
    assert states["TimeoutSeconds"] <= 28  # the whole execution, retries included
    cfn = expand(parameters={"OllamaHost": "http://o", "JwtIssuer": "https://i", "JwtAudience": "a"})
    functions = Stack(cfn, "t", {}, secrets=lambda ref: "secret").functions()
    # each task's function may run exactly as long as its task, so its context counts down from the same budget
    for name, state in tasks.items():
        assert functions[f"{name}Function"].timeout_s == state["TimeoutSeconds"], name
    ask = functions["AskFunction"]
    assert float(ask.environment["API_DEADLINE_S"]) <= 28 < ask.timeout_s < GATEWAY_S


@pytest.fixture(scope="module")
def slow_model():
    with OllamaTestServer(models=["main-model:1b", "light-model:0.5b"]) as srv:
        srv.first_token_delay_s = 40  # far past any budget
        yield srv


@pytest.fixture(scope="module")
def stack(docs_index, slow_model):
    settings = docs_index.with_(
        ollama={
            "host": slow_model.url,
            "host_explicit": True,
            "model_name": "main-model:1b",
            "model_name_conversational": "light-model:0.5b",
            "timeout_s": 100.0,  # the slot's own limit is far away: only the deadline can stop the wait
        },
        api={"deadline_s": BUDGET_S},
    )
    s = ServerlessStack(settings, settings.aws.endpoint_url, name=f"assist-deadline-{next(_names)}").start()
    s.warm()
    yield s
    s.stop()


def executions(stack) -> int:
    sfn = client("stepfunctions", stack.settings)
    return len(sfn.list_executions(stateMachineArn=stack.arn)["executions"])


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"message": "How does the engine decide that a message is about billing?"}, "llm_timeout"),
        # the light slot's call uses the budget: no time is left for the fallback to main
        (
            {"message": "How much of my quota is left?", "query_type": "PLATFORM", "extra_context": "used 40%"},
            "deadline",
        ),
    ],
)
def test_a_model_slower_than_the_budget_gives_an_extractive_answer_in_time(stack, session_id, body, reason):
    before = executions(stack)
    with serve(create_app(stack.functions["answer"].engine.get(), ask_via=stack.ask)) as base:
        t0 = time.monotonic()
        resp = httpx.post(f"{base}/v1/ask", json={"session_id": session_id, **body}, timeout=60)
        elapsed = time.monotonic() - t0
        transcript = httpx.get(f"{base}/v1/sessions/{session_id}", timeout=30).json()
    assert resp.status_code == 200, resp.text
    answer = resp.json()
    assert elapsed < BUDGET_S + 1.5, elapsed  # the deadline, plus the reply's own trip
    assert reason in answer["degraded"], answer["degraded"]
    assert answer["answer"]  # extractive, never empty
    assert len(transcript["turns"]) == 1
    assert executions(stack) == before + 1
