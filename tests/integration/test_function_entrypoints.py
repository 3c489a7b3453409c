"""The entry points the function images run, as plain processes (no Docker engine here).

- `infra/entry.sh http`: uvicorn serving `functions.<name>.app:app` (any container platform);
- `infra/entry.sh lambda`: the Lambda runtime interface client calling `functions.<name>.app.handler`,
  fed by a Lambda Runtime API on loopback, with an API Gateway HTTP API event and a Step
  Functions task payload;
and the handler called in-process with both kinds of event.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from assist.serverless.lambda_entry import FUNCTIONS, LambdaFunction
from assist_dev.bench.coldstart import CHILD
from assist_dev.bench.footprint import not_in_image
from assist_dev.local.definition import ROOT
from assist_dev.local.stack import free_port
from assist_dev.rehearsal.runtime import LambdaRuntimeAPI

pytestmark = pytest.mark.integration
ENTRY = ROOT / "infra" / "entry.sh"
QUESTION = "How does the engine decide that a message is about billing?"


def function_env(settings, function: str, **extra: str) -> dict[str, str]:
    """What the image's environment holds: the template's variables, FUNCTION, the venv's python first on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_LAMBDA_RUNTIME_API", "PORT")}
    env.update(settings.env_lines())
    env.update(
        FUNCTION=function,
        OLLAMA_HOST=settings.ollama.host,
        LOG_FORMAT="json",
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}",
        PYTHONPATH=f"{ROOT}:{ROOT / 'layers/common/python'}",
        **extra,
    )
    return env


def http_event(method: str, path: str, body: dict | None = None) -> dict:
    """An API Gateway HTTP API (payload format 2.0) event, as Lambda receives it."""
    raw = json.dumps(body or {}).encode()
    return {
        "version": "2.0",
        "routeKey": f"{method} {path}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"content-type": "application/json", "host": "api.example.com"},
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "api",
            "domainName": "api.example.com",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "t"},
            "requestId": "r1",
            # what the HTTP API's JWT authorizer hands over once it has verified the token
            "authorizer": {"jwt": {"claims": {"sub": "user-123", "iss": "https://issuer.example"}, "scopes": None}},
            "routeKey": f"{method} {path}",
            "stage": "$default",
            "time": "22/Nov/2026:00:00:00 +0000",
            "timeEpoch": 0,
        },
        "body": base64.b64encode(raw).decode(),
        "isBase64Encoded": True,
    }


@pytest.fixture(scope="module")
def containers(docs_index):
    """Every function image in HTTP mode, started together (each is a fresh uvicorn process)."""
    procs, bases = {}, {}
    for name in FUNCTIONS:
        port = free_port()
        env = function_env(docs_index, name, PORT=str(port))
        procs[name] = subprocess.Popen(
            [str(ENTRY), "http"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        bases[name] = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    pending = set(bases)
    while pending and time.monotonic() < deadline:
        for name in list(pending):
            assert procs[name].poll() is None, procs[name].stderr.read()
            try:
                if httpx.get(bases[name] + "/healthz", timeout=1).status_code == 200:
                    pending.discard(name)
            except httpx.HTTPError:
                time.sleep(0.2)
    assert not pending, f"not healthy: {pending}"
    yield bases
    for p in procs.values():
        p.terminate()
        p.wait(timeout=20)


def test_every_function_image_serves_its_app_over_http(containers):
    assert set(containers) == {"classify", "retrieve", "answer", "export", "sync"}
    for name, base in containers.items():
        health = httpx.get(base + "/healthz", timeout=30)
        assert health.status_code == 200, (name, health.text)
        assert health.json() == {"status": "ok"}
    # the sync image's own route: with no sources file configured it says which setting is missing
    unset = httpx.post(containers["sync"] + "/v1/sync", json={}, timeout=30)
    assert unset.status_code == 422, unset.text
    assert "SOURCES_FILE" in unset.text
    assert httpx.post(containers["sync"] + "/v1/sync", json={"sources": 1}, timeout=30).status_code == 400


def test_a_turn_through_the_three_containers_over_http(containers, session_id):
    turn = httpx.post(
        containers["classify"] + "/v1/classify", json={"session_id": session_id, "message": QUESTION}, timeout=60
    )
    assert turn.status_code == 200, turn.text
    state = turn.json()
    assert state["route"]["type"] == "RETRIEVAL"
    assert state["turn"] == 1
    searched = httpx.post(containers["retrieve"] + "/v1/retrieve", json=state, timeout=60)
    assert searched.status_code == 200, searched.text
    chunks = searched.json()["retrieval"]["chunks"]
    assert chunks, searched.text
    assert {c["doc_id"] for c in chunks} & {"routing", "faq", "index", "architecture"}
    asked = httpx.post(
        containers["answer"] + "/v1/ask", json={"session_id": session_id, "message": QUESTION}, timeout=60
    )
    assert asked.status_code == 200, asked.text
    assert asked.json()["sources"]


def test_container_routes_refuse_bad_input_and_export_runs(containers):
    bad = httpx.post(containers["classify"] + "/v1/classify", json={"session_id": "s", "message": "  "}, timeout=30)
    assert bad.status_code == 400
    assert "blank" in bad.text
    unrouted = {"request": {"session_id": "s", "message": "x"}, "request_id": "r", "started_at": 0.0}
    no_route = httpx.post(containers["retrieve"] + "/v1/retrieve", json=unrouted, timeout=30)
    assert no_route.status_code == 400
    assert "classify it first" in no_route.text
    export = httpx.post(containers["export"] + "/v1/export", json={}, timeout=30)
    assert export.status_code == 200, export.text
    assert {"sessions", "records", "files", "watermark", "exported"} <= set(export.json())
    assert httpx.post(containers["export"] + "/v1/export", json={"force": "yes"}, timeout=30).status_code == 400


def test_the_lambda_runtime_client_runs_our_handler_for_both_kinds_of_event(docs_index, session_id):
    with LambdaRuntimeAPI() as api:
        env = function_env(docs_index, "classify", AWS_LAMBDA_RUNTIME_API=api.address)
        proc = subprocess.Popen([str(ENTRY)], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            via_api = api.invoke(http_event("POST", "/v1/classify", {"session_id": session_id, "message": QUESTION}))
            platform = {"session_id": session_id, "message": "You are a direct and concise assistant. Usage?"}
            task = api.invoke({"request": platform, "owner": "jwt:user-123"})  # the execution input carries the owner
            rejected = api.invoke({"session_id": session_id, "message": "   "})
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=20)
    assert not api.init_errors, api.init_errors
    assert via_api.kind == "response", via_api.body
    assert via_api.body["statusCode"] == 200
    assert json.loads(via_api.body["body"])["route"]["type"] == "RETRIEVAL"
    assert task.kind == "response"
    assert task.body["route"]["type"] == "PLATFORM"
    assert task.body["turn"] == 2  # the same session, one container: the second turn
    assert rejected.kind == "error"
    assert rejected.body["errorType"] == "InvalidRequest"
    assert b"classify.decided" in err


def test_the_answer_handler_serves_api_gateway_events_and_task_payloads(docs_index, session_id):
    fn = LambdaFunction("answer", docs_index)
    reply = fn.handler(http_event("POST", "/v1/ask", {"session_id": session_id, "message": QUESTION}), None)
    assert reply["statusCode"] == 200
    answer = json.loads(reply["body"])
    assert answer["sources"]
    assert fn.handler(http_event("GET", "/healthz"), None)["statusCode"] == 200

    first = {"session_id": session_id, "message": QUESTION}
    classified = LambdaFunction("classify", docs_index).handler({"request": first, "owner": "jwt:user-123"})
    searched = LambdaFunction("retrieve", docs_index).handler(classified)
    final = fn.handler(searched)
    assert final["sources"]
    assert [s["name"] for s in final["trace"]["stages"]] == ["history", "classify", "retrieve", "generate", "persist"]
    assert final["trace"]["history"] == [f'[RETRIEVAL] "{QUESTION[:60]}"']


def test_the_export_handler_runs_the_export_on_a_schedule(docs_index, tmp_path):
    scheduled = {"version": "0", "source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
    settings = docs_index.with_(export={"dir": str(tmp_path / "labels"), "threshold": 10**6})
    result = LambdaFunction("export", settings).handler(scheduled)
    assert result["exported"] is False  # far below the threshold: nothing written, the watermark stays
    assert result["files"] == []
    assert result["sessions"] >= 0


def test_in_aws_the_caller_is_the_jwt_subject(docs_index, session_id):
    fn = LambdaFunction("answer", docs_index.with_(api={"local_mode": False}))
    mine = fn.handler(http_event("POST", "/v1/ask", {"session_id": session_id, "message": QUESTION}), None)
    assert mine["statusCode"] == 200
    other = http_event("POST", "/v1/ask", {"session_id": session_id, "message": QUESTION})
    other["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = "someone-else"
    assert fn.handler(other, None)["statusCode"] == 404
    anonymous = http_event("POST", "/v1/ask", {"session_id": session_id, "message": QUESTION})
    del anonymous["requestContext"]["authorizer"]
    assert fn.handler(anonymous, None)["statusCode"] == 401


def test_the_ask_function_in_aws_refuses_a_request_over_a_limit_before_starting_the_state_machine(docs_index):
    # a state machine that does not exist: a request that got as far as StartSyncExecution would fail with a 5xx
    arn = "arn:aws:states:us-east-1:123456789012:stateMachine:never-started"
    fn = LambdaFunction("answer", docs_index.with_(api={"local_mode": False, "ask_state_machine_arn": arn}))
    multibyte = fn.handler(http_event("POST", "/v1/ask", {"session_id": "s", "message": "é" * 100_000}), None)
    assert (multibyte["statusCode"], json.loads(multibyte["body"])["detail"]) == (
        400,
        "message is 100000 characters; the limit is 8000",
    )
    deep = http_event("POST", "/v1/ask")
    deep["body"] = base64.b64encode(
        b'{"session_id":"s","message":"hi","zz":' + b"[" * 5000 + b"]" * 5000 + b"}"
    ).decode()
    reply = fn.handler(deep, None)
    assert (reply["statusCode"], json.loads(reply["body"])["detail"]) == (400, "JSON nesting deeper than 32 levels")
    ok = fn.handler(http_event("POST", "/v1/ask", {"session_id": "s", "message": "hello"}), None)
    # the control: past the checks, the same function does call StartSyncExecution, and that fails server-side
    assert ok["statusCode"] == 500


@pytest.mark.parametrize("name", FUNCTIONS)
def test_each_function_serves_healthz_with_only_its_images_packages(name, tmp_path):
    # the cold-start child, refusing what the image does not install (PyJWT for classify, litestar had the sync
    # image not got the http extra): an import this development environment would satisfy fails here
    job = {"function": name, "event": http_event("GET", "/healthz"), "blocked": not_in_image([name, "lambda"])}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SESSION_", "INDEX_", "WIDGET_"))}
    env |= {"PYTHONPATH": f"{ROOT}:{ROOT / 'layers' / 'common' / 'python'}", "SESSION_STORE_FILE": str(tmp_path / "s")}
    proc = subprocess.run(
        [sys.executable, "-P", str(CHILD)], input=json.dumps(job), capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1])["status"] == 200


def test_the_image_check_refuses_what_an_image_lacks():
    assert {"jwt", "lancedb", "sklearn"} <= set(not_in_image(["classify", "lambda"]))
    assert "ollama" in not_in_image(["retrieve", "lambda"])
    assert "ollama" not in not_in_image(["answer", "lambda"])
    assert "assist_dev" in not_in_image(["answer", "lambda"])  # the tooling is in no image
