"""`assist deploy rehearse`: template.yaml and the code, under the rules AWS enforces.

1. template.yaml is expanded by aws-sam-translator (its policy templates become each role's inline
   statements, as CloudFormation receives them) and its intrinsics are resolved for a stack.
2. In a moto server in this process: the tables, bucket and secret; the docs indexed on S3 and
   the routing classifier published to its registry (as an operator would, with admin keys); each
   role with its trust and policies; the ask state machine from the ASL file, with its role.
3. IAM enforcement is switched on (`assist_dev.rehearsal.iam`): from here every request needs a known key,
   a session token for temporary keys, and a policy that allows its action on its resource.
4. Every function runs its image's command in a process of its own, with the environment the
   template gives it plus its role's temporary credentials (`AWS_SESSION_TOKEN` set) — nothing
   else — and a Lambda context whose remaining time counts down from its `Timeout`. Step Functions
   invokes the tasks only if the state machine's role may (`lambda:InvokeFunction`).
5. The flows below drive each way in as API Gateway, the function URL, EventBridge and a client
   would. A flow is "ok" when it did what it should and nothing it caused was denied.

What a rehearsal cannot show — API Gateway's own authorizer and throttling, Lambda's real cold
starts and limits, CloudFormation's ordering and service quotas — only a real account can
(README, "Deploying to AWS").
"""

from __future__ import annotations

import base64
import contextlib
import http.server
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from assist.aws import s3_uri
from assist.aws.clients import client
from assist.build.run import ingest
from assist.contracts import Degraded, Layer
from assist.embed import build_embedder
from assist.errors import AssistError
from assist.export.labels import session_hash
from assist.logs import get_logger
from assist.settings import DEFAULT_CLASSIFIER_MODEL, Settings
from assist.tables.base import StoreUnavailable
from assist.widget.gate import KeyCache
from assist_dev.doubles.jwks import LoopbackIssuer
from assist_dev.local.definition import ROOT
from assist_dev.local.lambda_endpoint import LambdaEndpoint, interpreter_calls
from assist_dev.local.resources import ensure_resources
from assist_dev.local.seed import populate
from assist_dev.local.stack import LOCAL_CREDENTIALS, MotoServer
from assist_dev.local.statemachine import enable_interpreter
from assist_dev.rehearsal import iam
from assist_dev.rehearsal.item_reader import InterpreterReads
from assist_dev.rehearsal.runtime import FunctionProcess
from assist_dev.rehearsal.sync_execution import SyncExecutions
from assist_dev.rehearsal.template import ACCOUNT, FunctionSpec, RoleSpec, Stack, expand

if TYPE_CHECKING:
    import httpx

log = get_logger(__name__)
STACK = "assist-rehearsal"
REGION = "us-east-1"
AUDIENCE = "assist-rehearsal"
USER = "rehearsal-user"
#: degraded reasons that mean an AWS call failed (the model being absent is not one: no Ollama here by default)
AWS_FAULTS = {
    Degraded.CLASSIFY_FAILED,
    Degraded.RETRIEVE_FAILED,
    Degraded.ANSWER_FAILED,
    Degraded.INDEX_UNAVAILABLE,
    Degraded.INDEX_TIMEOUT,
    Degraded.CORPUS_UNAVAILABLE,
    StoreUnavailable.reason,
}
EXPORT_SESSIONS = 510  # past CLASSIFIER_EXPORT_THRESHOLD (500): the export must write
INDEX_REFRESH_S = 2  # the template's IndexRefreshSeconds here: a published version is served within it
CANARY = "# Publishing canary\n\nThe rehearsal publishing canary is a page that only a published index version holds.\n"


class FlowFailed(AssistError, RuntimeError):
    """A flow did not do what it should; the message is the reason the report shows."""


@dataclass
class Rehearsal:
    """The rehearsed deployment: the stack, the emulator, the running functions, a token issuer."""

    admin: Settings  # the operator's view (admin keys), for seeding and checking
    denials: iam.Denials
    processes: dict[str, FunctionProcess]  # logical id → its running image
    functions: dict[str, FunctionSpec]
    roles: dict[str, RoleSpec]
    token: str
    logs: Path  # each function's output, kept when the rehearsal fails
    routes: list[tuple[str, re.Pattern[str]]]  # the HTTP API's routes (method, path), as the template declares them
    admin_token: str = ""  # a token with the InsightsScope parameter's scope
    machines: set[str] = field(default_factory=set)  # the state machines' ARNs
    session: str = field(default_factory=lambda: "rehearsal-" + uuid.uuid4().hex[:8])
    turns: dict[str, int] = field(default_factory=dict)
    source_ip: str = "203.0.113.7"  # the client's address, as API Gateway and the function URL record it

    def process(self, logical: str) -> FunctionProcess:
        return self.processes[logical]

    def api(
        self, method: str, path: str, body: dict[str, Any] | None = None, token: str | None = None
    ) -> tuple[int, Any]:
        """API Gateway's HTTP API in front of the Ask function, with a JWT its authorizer verified."""
        status, payload, _ = self.call(method, path, body, token=token)
        return status, payload

    def call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        authorized: bool = True,
    ) -> tuple[int, Any, dict[str, str]]:
        """A route the template does not declare is API Gateway's own 404; otherwise a v2 event, with the JWT
        authorizer's claims when `authorized` (a route without the authorizer gets none), and the reply's
        status, body and headers."""
        path, _, query = path.partition("?")
        if not any(m == method and pattern.fullmatch(path) for m, pattern in self.routes):
            return 404, {"message": "Not Found"}, {}
        raw = json.dumps(body or {}).encode()
        context: dict[str, Any] = {
            "accountId": ACCOUNT,
            "apiId": "rehearsal",
            "domainName": "api.rehearsal",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": self.source_ip},
            "requestId": uuid.uuid4().hex,
            "routeKey": f"{method} {path}",
            "stage": "$default",
            "timeEpoch": int(time.time() * 1000),
        }
        sent = {"content-type": "application/json", "host": "api.rehearsal", **(headers or {})}
        if authorized:
            sent["authorization"] = f"Bearer {token or self.token}"
            context["authorizer"] = {"jwt": {"claims": {"sub": USER, "aud": AUDIENCE}, "scopes": None}}
        event = {
            "version": "2.0",
            "routeKey": f"{method} {path}",
            "rawPath": path,
            "rawQueryString": query,
            "headers": sent,
            "requestContext": context,
            "body": base64.b64encode(raw).decode(),
            "isBase64Encoded": True,
        }
        result, error = self.process("AskFunction").invoke(event)
        if error:
            raise FlowFailed(f"the Ask function failed: {result.get('errorType')}: {result.get('errorMessage')}")
        payload = result.get("body") or ""
        if result.get("isBase64Encoded"):
            payload = base64.b64decode(payload).decode()
        replied = {k.lower(): v for k, v in (result.get("headers") or {}).items()}
        try:
            return result["statusCode"], json.loads(payload), replied
        except ValueError:
            return result["statusCode"], payload, replied

    def stream_url(self) -> str:
        url = self.process("AnswerStreamFunction").url
        assert url is not None
        return url


# -- flows ------------------------------------------------------------------------------
def _answered(status: int, answer: Any, what: str) -> dict[str, Any]:
    if status != 200 or not isinstance(answer, dict):
        raise FlowFailed(f"{what}: HTTP {status}: {str(answer)[:200]}")
    if faults := AWS_FAULTS & set(answer.get("degraded", [])):
        raise FlowFailed(f"{what}: degraded {sorted(faults)}: {answer.get('trace', {}).get('error', '')}"[:300])
    return answer


def _ask(r: Rehearsal, message: str, query_type: str | None = None, **extra: Any) -> dict[str, Any]:
    body = {"session_id": r.session, "message": message, **extra}
    if query_type:
        body["query_type"] = query_type
    status, answer = r.api("POST", "/v1/ask", body)
    return _answered(status, answer, f"POST /v1/ask ({query_type or 'classified'})")


def flow_ask_retrieval(r: Rehearsal) -> None:
    a = _ask(r, "How is the engine configured?", "RETRIEVAL")
    if not a["sources"]:
        raise FlowFailed("a RETRIEVAL answer cited no sources")
    r.turns["retrieval"] = a["turn"]


def flow_ask_code_generation(r: Rehearsal) -> None:
    a = _ask(r, "Write a Python function that posts a question to /v1/ask", "CODE_GENERATION")
    if a["route"]["type"] != "CODE_GENERATION" or not a["sources"]:
        raise FlowFailed(f"CODE_GENERATION answered as {a['route']['type']} with {len(a['sources'])} sources")


def flow_ask_platform(r: Rehearsal) -> None:
    a = _ask(r, "How much of my quota is left?", "PLATFORM", extra_context="plan: team; quota used: 40%")
    if a["route"]["type"] != "PLATFORM":
        raise FlowFailed(f"PLATFORM answered as {a['route']['type']}")


def flow_ask_conversational(r: Rehearsal) -> None:
    """A follow-up that recalls the passages an earlier answer cited (the Answer function reads the index)."""
    if "retrieval" not in r.turns:
        flow_ask_retrieval(r)
    a = _ask(r, "Summarize what you just told me in one sentence.", "CONVERSATIONAL")
    memory = next((s for s in a["trace"]["stages"] if s["name"] == "memory"), None)
    if not memory or not memory.get("sources"):
        raise FlowFailed(f"the follow-up recalled no cited passage (memory stage: {memory})")


def flow_corpus_question(r: Rehearsal) -> None:
    a = _ask(r, "How many ADRs are there?")
    if not any(s["name"] == "corpus" for s in a["trace"]["stages"]):
        raise FlowFailed(f"not answered from the corpus manifest: stages {[s['name'] for s in a['trace']['stages']]}")


def flow_classifier_from_registry(r: Rehearsal) -> None:
    """An undeclared question is typed by the embedding layer, whose model the Classify function read from the
    registry on S3 (CLASSIFIER_MODEL_PATH = s3://…/models/routing/current)."""
    a = _ask(r, "How does the engine decide whether a question needs the documentation?")
    if a["route"]["layer"] not in (Layer.EMBEDDING, Layer.RULES):
        raise FlowFailed(f"route decided by {a['route']['layer']}: {a['route']['reason']}")


def flow_stream(r: Rehearsal) -> None:
    """The function URL's streaming route, with the caller's bearer token (no API Gateway event there)."""
    # deferred, ADR 0071: httpx 0.11 s
    import httpx

    body = {"session_id": r.session + "-stream", "message": "What does the retrieve function do?"}
    headers = {"authorization": f"Bearer {r.token}"}
    with httpx.stream("POST", r.stream_url() + "/v1/ask/stream", json=body, headers=headers, timeout=60) as resp:
        if resp.status_code != 200:
            raise FlowFailed(f"POST /v1/ask/stream: HTTP {resp.status_code}: {resp.read().decode()[:200]}")
        events = [line[7:] for line in resp.iter_lines() if line.startswith("event: ")]
    if events[:1] != ["route"] or events[-1:] != ["done"]:
        raise FlowFailed(f"stream events {events[:3]}…{events[-2:]}")


def flow_chat_completion(r: Rehearsal) -> None:
    body = {"model": "assist", "messages": [{"role": "user", "content": "What is the intent history?"}]}
    status, reply = r.api("POST", "/v1/chat/completions", body | {"user": r.session + "-chat"})
    if status != 200 or not isinstance(reply, dict) or not reply.get("choices"):
        raise FlowFailed(f"POST /v1/chat/completions: HTTP {status}: {str(reply)[:200]}")
    _answered(200, reply.get("assist") or {"degraded": []}, "POST /v1/chat/completions (its assist field)")


def flow_mcp_search(r: Rehearsal) -> None:
    async def call() -> Any:
        # deferred, ADR 0071: mcp 1.1 s
        from mcp import Client
        from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

        client = create_mcp_http_client(headers={"authorization": f"Bearer {r.token}"})
        async with Client(streamable_http_client(r.stream_url() + "/mcp", http_client=client)) as mcp:
            return await mcp.call_tool("search_docs", {"query": "how are answers streamed"})

    try:
        result = anyio.run(call)
    except Exception as exc:
        raise FlowFailed(f"MCP search_docs: {type(exc).__name__}: {str(exc)[:200]}") from exc
    if getattr(result, "is_error", False) or not result.content:
        raise FlowFailed(f"MCP search_docs returned an error or nothing: {str(result)[:200]}")


def flow_feedback(r: Rehearsal) -> None:
    if "retrieval" not in r.turns:
        flow_ask_retrieval(r)
    path = f"/v1/sessions/{r.session}/turns/{r.turns['retrieval']}/feedback"
    status, reply = r.api("POST", path, {"rating": "up", "comment": "rehearsed"})
    if status != 200:
        raise FlowFailed(f"POST {path}: HTTP {status}: {str(reply)[:200]}")
    status, transcript = r.api("GET", f"/v1/sessions/{r.session}")
    if status != 200 or not any(t.get("feedback") for t in transcript.get("turns", [])):
        raise FlowFailed(f"GET /v1/sessions: HTTP {status}, the feedback is not on the turn")


def flow_export(r: Rehearsal) -> None:
    """EventBridge's schedule with more sessions than the export's batch threshold: labels are written and the
    watermark claimed and committed (UpdateItem on the intent history table)."""
    populate(
        r.admin,
        client("dynamodb", r.admin),
        entries=EXPORT_SESSIONS,
        sessions=EXPORT_SESSIONS,
        start=datetime.now(UTC) - timedelta(hours=2),
        span=timedelta(hours=1),
        tag="rehearsal-export",
    )
    event = {"version": "0", "source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
    result, error = r.process("ExportFunction").invoke(event)
    if error:
        raise FlowFailed(f"export failed: {result.get('errorType')}: {str(result.get('errorMessage'))[:200]}")
    if not result.get("exported") or result.get("sessions", 0) < EXPORT_SESSIONS:
        raise FlowFailed(f"export did not write: {result}")
    _hashed_with_the_secret(r, result["files"])


def _hashed_with_the_secret(r: Rehearsal, files: list[str]) -> None:
    """The labels' session hashes are keyed by the stack's secret, which the function read at run time: the key
    is nowhere in its environment (ADR 0065)."""
    env = r.functions["ExportFunction"].environment
    if "EXPORT_HASH_KEY" in env or "EXPORT_HASH_KEY_SECRET" not in env:
        raise FlowFailed("the export's hash key is in its environment, or no secret is named")
    secret = client("secretsmanager", r.admin).get_secret_value(SecretId=env["EXPORT_HASH_KEY_SECRET"])["SecretString"]
    bucket, key = s3_uri.split(files[0])
    body = client("s3", r.admin).get_object(Bucket=bucket, Key=key)["Body"].read().decode()
    sessions = {json.loads(line)["session"] for line in body.splitlines() if line}
    expected = {session_hash(f"rehearsal-export-{n}", secret) for n in range(EXPORT_SESSIONS)}
    if not sessions & expected:
        raise FlowFailed("no exported session hash is keyed by the stack's secret")


def flow_index_sync(r: Rehearsal) -> None:
    """The scheduled sync runs its sources against the index on S3, under the writer's lease."""
    sync = next((k for k, f in r.functions.items() if f.module == "sync"), None)
    if sync is None:
        raise FlowFailed("template.yaml has no sync function (functions/sync)")

    where = r.functions[sync].environment.get("SOURCES_FILE", "")
    if not where.startswith("s3://"):
        raise FlowFailed(f"SOURCES_FILE is {where!r}, not an object on S3")
    bucket, key = s3_uri.split(where)
    with _served({"/openapi.yaml": OPENAPI}) as base:  # the operator's sources file names one spec on a host
        sources = f"sources:\n  - location: {base}/openapi.yaml\n    kind: openapi\n"
        client("s3", r.admin).put_object(Bucket=bucket, Key=key, Body=sources.encode())
        event = {"version": "0", "source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
        result, error = r.process(sync).invoke(event)
    if error:
        raise FlowFailed(f"sync failed: {result.get('errorType')}: {str(result.get('errorMessage'))[:200]}")
    if not isinstance(result, dict) or not result.get("added_docs"):
        raise FlowFailed(f"the sync added nothing: {str(result)[:200]}")


def flow_index_build(r: Rehearsal) -> None:
    """The scheduled index build: EventBridge starts the index state machine (as the schedule's role), whose Plan,
    Distributed Map of embed workers and Commit run the sync function under its role (ADR 0120)."""
    machine = next((arn for arn in r.machines if arn.endswith("-index-build")), None)
    if machine is None:
        raise FlowFailed("template.yaml has no index state machine (a StateMachineName ending in -index-build)")
    sync = next(k for k, f in r.functions.items() if f.module == "sync")
    bucket, key = s3_uri.split(r.functions[sync].environment.get("SOURCES_FILE", ""))
    schedule = next((k for k in r.roles if k.startswith("IndexBuildStateMachine") and "Schedule" in k), None)
    if schedule is None:
        raise FlowFailed("the index state machine has no schedule")
    role = r.roles[schedule]
    if not iam.check(r.denials, role.name, role.documents(), "states:StartExecution", machine):
        raise FlowFailed(f"the schedule's role may not start {machine}")
    spec = OPENAPI.replace(b"Answer one message", f"Answer one message ({uuid.uuid4().hex[:8]})".encode())
    with _served({"/openapi.yaml": spec}) as base:  # a changed page: the build has a shard to embed
        sources = f"sources:\n  - location: {base}/openapi.yaml\n    kind: openapi\n"
        client("s3", r.admin).put_object(Bucket=bucket, Key=key, Body=sources.encode())
        sfn = client("stepfunctions", r.admin)  # EventBridge, acting as the schedule's role checked above
        execution = sfn.start_execution(stateMachineArn=machine, input="{}")["executionArn"]
        desc = sfn.describe_execution(executionArn=execution)
        deadline = time.monotonic() + 600
        while desc["status"] == "RUNNING" and time.monotonic() < deadline:
            time.sleep(0.5)
            desc = sfn.describe_execution(executionArn=execution)
    if desc["status"] != "SUCCEEDED":
        raise FlowFailed(f"the build ended {desc['status']}: {desc.get('error')}: {str(desc.get('cause'))[:300]}")
    history = sfn.get_execution_history(executionArn=execution, maxResults=1000)["events"]
    states = [e["stateEnteredEventDetails"]["name"] for e in history if "stateEnteredEventDetails" in e]
    if "Embed" not in states:
        raise FlowFailed(f"no shard was embedded: {states}")
    out = json.loads(desc["output"])
    if not out.get("complete") or not out.get("added_docs"):
        raise FlowFailed(f"the build committed nothing: {str(out)[:200]}")


OPENAPI = b"""openapi: 3.0.3
info: {title: Rehearsal API, version: "1"}
paths:
  /v1/ask:
    post:
      operationId: ask
      summary: Answer one message of a session
      responses: {"200": {description: The answer with its sources}}
"""


@contextlib.contextmanager
def _served(pages: dict[str, bytes]) -> Iterator[str]:
    """`pages` on a loopback HTTP server (a documentation host the sync function reads)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path.split("?")[0])
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _cli(r: Rehearsal, logical: str, *args: str) -> dict[str, Any]:
    """`assist …` as an operator runs it with nothing but one role's temporary credentials in the environment."""
    env = {k: v for k, v in r.process(logical).env.items() if not k.startswith(("AWS_LAMBDA_", "JWT_", "FUNCTION"))}
    env.update({k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ})
    env["PYTHONPATH"] = f"{ROOT}:{ROOT / 'layers/common/python'}"
    cmd = [sys.executable, "-m", "assist.cli", *args]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise FlowFailed(f"assist {args[0]} exited {done.returncode}: {done.stderr.strip()[-240:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def flow_cli_ask(r: Rehearsal) -> None:
    """`assist ask` with the stream function's role (the one that runs a whole turn in one process)."""
    answer = _cli(
        r, "AnswerStreamFunction", "ask", "How is the engine configured?", "--session", r.session + "-cli", "--json"
    )
    _answered(200, answer, "assist ask")
    if not answer.get("sources"):
        raise FlowFailed("assist ask cited no sources")


def flow_cli_export(r: Rehearsal) -> None:
    """`assist export` with the export function's role: its watermark read, claimed and committed."""
    result = _cli(r, "ExportFunction", "export", "--force", "--json")
    if "watermark" not in result:
        raise FlowFailed(f"assist export: {str(result)[:200]}")


def flow_index_publish(r: Rehearsal) -> None:
    """An operator publishes a new index version with the sync function's role (`assist index --publish`: the
    version beside the live one, the pointer flipped), the warm Retrieve function serves it within the refresh
    interval, and `--rollback` puts the old one back (ADR 0067)."""
    sync = next(k for k, f in r.functions.items() if f.module == "sync")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "publish-canary.md").write_text(CANARY)
        published = _cli(r, sync, "index", tmp, "--publish", "--quiet")
    if not published.get("published"):
        raise FlowFailed(f"assist index --publish: {str(published)[:200]}")
    _serving(r, canary=True)
    back = _cli(r, sync, "index", "--rollback")
    if back.get("replaced") != published["version"]:
        raise FlowFailed(f"assist index --rollback: {str(back)[:200]}")
    _serving(r, canary=False)


def _serving(r: Rehearsal, canary: bool) -> None:
    def check() -> str | None:
        a = _ask(r, "What is the rehearsal publishing canary?", "RETRIEVAL")
        if any(s["id"].startswith("publish-canary") for s in a["sources"]) == canary:
            return None
        return f"the warm Retrieve function {'never served' if canary else 'still serves'} the canary"

    _until(check, 2 * INDEX_REFRESH_S + 10)


def _until(check: Callable[[], str | None], within_s: float) -> None:
    """Polls `check` until it returns None; after `within_s`, what it last said is the flow's failure."""
    deadline = time.monotonic() + within_s
    while (why := check()) is not None:
        if time.monotonic() > deadline:
            raise FlowFailed(why)
        time.sleep(0.5)


def flow_front_door(r: Rehearsal) -> None:
    """The state machine's tasks are not routes of the HTTP API; /insights serves only a token with the admin
    scope (the Ask function reads the history's by-export-day index under its role)."""
    for path in ("/v1/classify", "/v1/retrieve"):
        status, _ = r.api("POST", path, {"session_id": r.session, "message": "hello"})
        if status != 404:
            raise FlowFailed(f"POST {path} is a route of the HTTP API (HTTP {status})")
    status, page = r.api("GET", "/insights")
    if status != 403:
        raise FlowFailed(f"GET /insights without the admin scope: HTTP {status}")
    status, page = r.api("GET", "/insights", token=r.admin_token)
    if status != 200 or "<svg" not in str(page):
        raise FlowFailed(f"GET /insights with the admin scope: HTTP {status}: {str(page)[:200]}")


WIDGET_SITE = "https://docs.rehearsal.example"


def flow_widget(r: Rehearsal) -> None:
    """The widget (docs/widget.md): an admin's site key through the admin route; its script and a visitor token
    through the HTTP API with no JWT (the key and the Origin are the check, another origin is refused); an answer
    streamed with the visitor token from the stream function invoked as its function URL invokes it (a payload 2.0
    event, the Lambda Web Adapter's x-amzn-request-context), the client forging X-Forwarded-For; the visitor's limit
    hit; the address's limit hit on the session's history whatever address the client claims (ADR 0092). Each
    function under its role: the token key read from its secret, the keys and counters in the widget table."""
    # deferred, ADR 0071: httpx 0.11 s
    from assist_dev.doubles.function_url import FunctionUrl

    # the address: another origin's refusal, token, question, question, history (every request counts, ADR 0118)
    limits = {"visitor_questions": 1, "ip_requests": 5}
    status, key = r.api("POST", "/v1/admin/keys", {"origins": [WIDGET_SITE], "limits": limits}, r.admin_token)
    if status != 201 or not isinstance(key, dict):
        raise FlowFailed(f"POST /v1/admin/keys: HTTP {status}: {str(key)[:200]}")
    status, script, _ = r.call("GET", "/widget.js", authorized=False)
    stream_url = r.functions["AskFunction"].environment.get("WIDGET_STREAM_URL", "")
    if status != 200 or not stream_url or json.dumps(stream_url.rstrip("/")) not in str(script):
        raise FlowFailed(f"GET /widget.js: HTTP {status}, the stream function's URL {stream_url!r} not in it")
    path = f"/v1/widget/session?key={key['key']}"
    status, _, headers = r.call(
        "POST", path, {"key": key["key"]}, headers={"origin": "https://elsewhere.example"}, authorized=False
    )
    if status != 403 or "access-control-allow-origin" in headers:
        raise FlowFailed(f"a visitor token for another origin: HTTP {status}, {headers}")
    status, visitor, headers = r.call(
        "POST", path, {"key": key["key"]}, headers={"origin": WIDGET_SITE}, authorized=False
    )
    if status != 200 or headers.get("access-control-allow-origin") != WIDGET_SITE:
        raise FlowFailed(f"POST /v1/widget/session: HTTP {status}: {str(visitor)[:200]}")
    url = FunctionUrl(r.stream_url())
    source = r.source_ip  # the address the HTTP API saw: the same client, the same counter

    def as_visitor(forged: int) -> dict[str, str]:
        """The visitor's headers, with an X-Forwarded-For and a request context it wrote itself."""
        claimed = f"10.0.0.{forged}"
        context = json.dumps({"http": {"sourceIp": claimed}})
        return {
            "authorization": f"Bearer {visitor['token']}",
            "origin": WIDGET_SITE,
            "x-forwarded-for": claimed,
            "x-amzn-request-context": context,
        }

    ask = {"session_id": f"{visitor['visitor']}.rehearsal", "message": "How is the engine configured?"}
    with url.stream("POST", f"/v1/ask/stream?key={key['key']}", source, as_visitor(1), ask) as resp:
        body = resp.read().decode()
    if (
        resp.status_code != 200
        or "event: done" not in body
        or resp.headers.get("access-control-allow-origin") != WIDGET_SITE
    ):
        raise FlowFailed(f"the visitor's stream: HTTP {resp.status_code}: {body[:200]}")
    limited = url.request("POST", "/v1/ask/stream", source, as_visitor(2), ask)
    if limited.status_code != 429 or not limited.headers.get("retry-after"):
        raise FlowFailed(f"the visitor's second question (limit 1): HTTP {limited.status_code}: {limited.text[:200]}")
    history = f"/v1/sessions/{ask['session_id']}"
    read = url.request("GET", history, source, as_visitor(3))
    if read.status_code != 200 or len(read.json().get("turns", [])) != 1:
        raise FlowFailed(f"the visitor's history: HTTP {read.status_code}: {read.text[:200]}")
    forged = url.request("GET", history, source, as_visitor(4))  # the 6th request of the address: its limit is 5
    if forged.status_code != 429 or forged.json().get("reason") != "ip_limit":
        raise FlowFailed(f"a 5th request claiming another address: HTTP {forged.status_code}: {forged.text[:200]}")


def flow_deny_visitor(r: Rehearsal) -> None:
    """`assist keys deny-visitor` as it reaches a deployed stack (`POST /v1/admin/denied-visitors` on the HTTP API,
    admin scope, the Ask function's role writing the widget table): the visitor's token is then refused at the
    stream function's URL and its renewal at the HTTP API; another visitor of the key is still served."""
    # deferred, ADR 0071: httpx 0.11 s
    from assist_dev.doubles.function_url import FunctionUrl

    limits = {"ip_requests": 1000}  # the denial is polled for: each try is two requests of the address
    status, key = r.api("POST", "/v1/admin/keys", {"origins": [WIDGET_SITE], "limits": limits}, r.admin_token)
    if status != 201 or not isinstance(key, dict):
        raise FlowFailed(f"POST /v1/admin/keys: HTTP {status}: {str(key)[:200]}")
    path, origin = f"/v1/widget/session?key={key['key']}", {"origin": WIDGET_SITE}
    visitors = []
    for _ in range(2):
        status, visitor, _ = r.call("POST", path, {"key": key["key"]}, headers=origin, authorized=False)
        if status != 200:
            raise FlowFailed(f"POST /v1/widget/session: HTTP {status}: {str(visitor)[:200]}")
        visitors.append(visitor)
    denied, other = visitors
    status, body = r.api("POST", "/v1/admin/denied-visitors", {"visitor": denied["visitor"]})
    if status != 403:
        raise FlowFailed(f"a denial without the admin scope: HTTP {status}")
    status, body = r.api("POST", "/v1/admin/denied-visitors", {"visitor": denied["visitor"]}, r.admin_token)
    if status != 201:
        raise FlowFailed(f"POST /v1/admin/denied-visitors: HTTP {status}: {str(body)[:200]}")
    url = FunctionUrl(r.stream_url())

    def ask(visitor: dict[str, Any]) -> httpx.Response:
        sent = {"authorization": f"Bearer {visitor['token']}", **origin}
        question = {"session_id": f"{visitor['visitor']}.deny", "message": "How is the engine configured?"}
        return url.request("POST", f"/v1/ask/stream?key={key['key']}", r.source_ip, sent, question)

    def check() -> str | None:
        renewal = {**origin, "authorization": f"Bearer {denied['token']}"}
        renewed = r.call("POST", path, {"key": key["key"]}, headers=renewal, authorized=False)[0]
        streamed = ask(denied).status_code
        return None if (streamed, renewed) == (403, 403) else f"the denied visitor: stream {streamed}, token {renewed}"

    def served() -> str | None:
        got = ask(other)
        if got.status_code == 200:
            return None
        why = f"another visitor of the key after the denial: HTTP {got.status_code}: {got.text[:200]}"
        if "unknown or revoked" not in got.text:
            raise FlowFailed(why)
        return why  # the stream function's process knows a key made elsewhere within KeyCache.MISS_REREAD_S

    _until(check, r.admin.widget.key_cache_s + 5)
    _until(served, KeyCache.MISS_REREAD_S + 5)


def flow_metrics(r: Rehearsal) -> None:
    """The Answer function's log holds the turn's EMF records (namespace Assist), as CloudWatch would read them:
    no API call, so no permission (ADR 0064)."""
    answer = _ask(r, "How is the engine configured?", "RETRIEVAL")
    wanted = {"Turns", "LatencyMs", "ModelTokens"} | ({"Degraded"} if answer["degraded"] else set())

    def check() -> str | None:
        found = _emf_metric_names(r.logs / "AnswerFunction.log")
        return None if wanted <= found else f"the Answer function's log has EMF records for {sorted(found)} only"

    _until(check, 10)


def _emf_metric_names(log: Path) -> set[str]:
    """The names of the `Assist` namespace's metrics in a log's EMF records."""
    names: set[str] = set()
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("{") and '"_aws"' in line:
            for definition in json.loads(line)["_aws"]["CloudWatchMetrics"]:
                if definition["Namespace"] == "Assist":
                    names |= {m["Name"] for m in definition["Metrics"]}
    return names


FLOWS: dict[str, Callable[[Rehearsal], None]] = {
    "ask_retrieval": flow_ask_retrieval,
    "ask_code_generation": flow_ask_code_generation,
    "ask_platform": flow_ask_platform,
    "ask_conversational": flow_ask_conversational,
    "corpus_question": flow_corpus_question,
    "classifier_from_registry": flow_classifier_from_registry,
    "stream": flow_stream,
    "chat_completion": flow_chat_completion,
    "mcp_search": flow_mcp_search,
    "feedback": flow_feedback,
    "export": flow_export,
    "cli_ask": flow_cli_ask,
    "cli_export": flow_cli_export,
    "index_sync": flow_index_sync,
    "index_publish": flow_index_publish,
    "index_build": flow_index_build,
    "front_door": flow_front_door,
    "widget": flow_widget,
    "deny_visitor": flow_deny_visitor,
    "metrics": flow_metrics,
}


# -- the rehearsal ------------------------------------------------------------------------
def rehearse(
    docs: Path,
    flows: list[str] | None = None,
    without: list[str] | None = None,
    ollama: str | None = None,
    base: Settings | None = None,
) -> dict[str, Any]:
    """Run the flows (all by default) and report `{"flows": {name: "ok" | reason}, "denied": […], "wall_s"}`.
    `without`: `Function:service:Action` statements to drop from a role first (to see the rehearsal catch it)."""
    t0 = time.perf_counter()
    names = flows or list(FLOWS)
    if unknown := [n for n in names if n not in FLOWS]:
        raise AssistError(f"unknown flow(s) {', '.join(unknown)}; choose from {', '.join(FLOWS)}")
    report: dict[str, Any] = {"flows": {}, "denied": []}
    with _deployed(docs, without or [], ollama, base or Settings()) as r:
        for name in names:
            mark = len(r.denials)
            t = time.perf_counter()
            try:
                FLOWS[name](r)
                verdict = "ok"
            except FlowFailed as exc:
                verdict = str(exc)
            except Exception as exc:  # a rehearsal reports; it never stops at the first surprise
                verdict = f"{type(exc).__name__}: {str(exc)[:240]}"
            if denied := r.denials.since(mark):
                verdict = "denied: " + "; ".join(f"{d.action} on {d.resource}" for d in denied[:3])
            report["flows"][name] = verdict
            log.info("deploy.flow", flow=name, verdict=verdict, s=round(time.perf_counter() - t, 2))
        by_role = {spec.name: logical for logical, spec in r.roles.items()}
        fn_of = {spec.role: logical for logical, spec in r.functions.items()}
        report["denied"] = [
            {"function": fn_of.get(by_role.get(d["principal"], ""), d["principal"]), **d} for d in r.denials.as_dicts()
        ]
    if all(v == "ok" for v in report["flows"].values()) and not report["denied"]:
        shutil.rmtree(r.logs, ignore_errors=True)
    else:
        report["logs"] = str(r.logs)
    report["wall_s"] = round(time.perf_counter() - t0, 1)
    return report


def drop_actions(policies: dict[str, dict[str, Any]], actions: set[str]) -> dict[str, dict[str, Any]]:
    """The role's inline policies without `actions` (a statement left with no action is removed)."""
    out: dict[str, dict[str, Any]] = {}
    for name, doc in policies.items():
        statements = []
        for st in iam._listed(doc.get("Statement", [])):
            kept = [a for a in iam._listed(st.get("Action", [])) if a not in actions]
            if kept or "Action" not in st:
                statements.append({**st, "Action": kept} if "Action" in st else st)
        if statements:
            out[name] = {**doc, "Statement": statements}
    return out


@contextlib.contextmanager
def _deployed(docs: Path, without: list[str], ollama: str | None, base: Settings) -> Iterator[Rehearsal]:
    with contextlib.ExitStack() as exit_stack:
        issuer = LoopbackIssuer(AUDIENCE)
        exit_stack.callback(issuer.stop)
        parameters = {
            "OllamaHost": ollama or "http://127.0.0.1:9",  # the discard port: refused at once, i.e. no model
            "JwtIssuer": issuer.issuer,
            "JwtAudience": AUDIENCE,
            "JwtJwksUrl": issuer.jwks_url,
            "ClassifierModelKey": "routing/current",
            "IndexRefreshSeconds": str(INDEX_REFRESH_S),
        }
        cfn = expand(region=REGION, parameters=parameters)
        parameters = {k: v for k, v in parameters.items() if k in cfn.get("Parameters", {})}
        moto = MotoServer().start()
        exit_stack.callback(moto.stop)
        enable_interpreter(moto.url)
        stack = Stack(cfn, STACK, parameters, REGION)
        prefix = stack.parameters.get("IndexPrefix", "index")
        admin = base.with_(
            aws={"endpoint_url": moto.url, "region": REGION, "bucket": stack.ref("DataBucket"), **LOCAL_CREDENTIALS},
            sessions={"table": stack.ref("SessionsTable"), "intent_history_table": stack.ref("IntentHistoryTable")},
            idempotency={"table": stack.ref("IdempotencyTable")},
            widget={"table": stack.ref("WidgetTable")},
            index={"uri": f"s3://{stack.ref('DataBucket')}/{prefix}"},
            ollama={"host": "http://127.0.0.1:9"},
        )
        admin = _operator(admin)  # an IAM user's keys: the moto defaults are unknown once IAM is enforced
        s3, sm, iam_client = client("s3", admin), client("secretsmanager", admin), client("iam", admin)
        ensure_resources(admin, client("dynamodb", admin), s3)
        for logical in stack.of_type("AWS::SecretsManager::Secret"):
            arn = sm.create_secret(Name=f"{STACK}-{logical}", SecretString=secrets.token_urlsafe(36))["ARN"]
            stack.physical[logical] = arn
        stack.secrets = lambda ref: sm.get_secret_value(SecretId=ref)["SecretString"]  # CloudFormation's own read
        ingest(docs, admin, build_embedder(admin), progress=False, s3=s3)
        _publish_classifier(admin, s3)

        roles = stack.roles()
        functions = stack.functions()
        dropped = _dropped(without, functions)
        for logical, role in roles.items():
            iam_client.create_role(RoleName=role.name, AssumeRolePolicyDocument=json.dumps(role.trust))
            for name, doc in drop_actions(role.policies, dropped.get(logical, set())).items():
                # SAM's generated statements carry no Version (AWS defaults it; moto insists): no policy
                # variables are used, so the two versions mean the same here
                doc = {"Version": "2012-10-17", **doc}
                iam_client.put_role_policy(RoleName=role.name, PolicyName=name, PolicyDocument=json.dumps(doc))
        sfn = client("stepfunctions", admin)
        machines: dict[str, tuple[RoleSpec, str]] = {}  # ARN → (its role, its definition)
        for logical in stack.of_type("AWS::StepFunctions::StateMachine"):
            definition, role = stack.state_machine(logical)
            sfn.create_state_machine(
                name=stack.ref(logical).rsplit(":", 1)[-1],
                definition=definition,
                roleArn=roles[role].arn,
                type=stack.resources[logical]["Properties"].get("StateMachineType", "STANDARD"),
            )
            machines[stack.ref(logical)] = (roles[role], definition)
        sts = client("sts", admin)
        credentials = {  # what Lambda gives each function: its role's temporary keys
            logical: sts.assume_role(RoleArn=roles[f.role].arn, RoleSessionName=f.name[:64])["Credentials"]
            for logical, f in functions.items()
        }

        denials = iam.Denials()
        iam.enforce(denials)

        def may_invoke(name: str) -> bool:
            """Step Functions invokes a function as the role of the state machine whose definition names it."""
            arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
            callers = [role for role, definition in machines.values() if f'"{arn}"' in definition]
            return bool(callers) and all(
                iam.check(denials, role.name, role.documents(), "lambda:InvokeFunction", arn) for role in callers
            )

        # the Distributed Map's ItemReader: moto's interpreter reads S3 with a key of its own; AWS reads it as the
        # role of the state machine whose definition has the reader, so that role's policy decides here
        readers = [role for role, definition in machines.values() if '"ItemReader"' in definition]

        start_sync = SyncExecutions(denials, client("stepfunctions", admin))
        front = LambdaEndpoint(
            {},
            upstream=moto.url,
            targets={"AWSStepFunctions.StartSyncExecution": start_sync},
            may_invoke=may_invoke,
            interpreter_s3=InterpreterReads(denials, readers, s3),
        )
        front.start()
        exit_stack.callback(front.stop)
        exit_stack.enter_context(interpreter_calls(front))
        logs = Path(tempfile.mkdtemp(prefix="assist-rehearsal-"))
        processes: dict[str, FunctionProcess] = {}
        for logical, f in functions.items():
            c = credentials[logical]
            env = {
                **f.environment,
                "AWS_ACCESS_KEY_ID": c["AccessKeyId"],
                "AWS_SECRET_ACCESS_KEY": c["SecretAccessKey"],
                "AWS_SESSION_TOKEN": c["SessionToken"],
                "AWS_REGION": REGION,
                "AWS_DEFAULT_REGION": REGION,
                "AWS_LAMBDA_FUNCTION_NAME": f.name,
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(f.memory_mb),
                "AWS_ENDPOINT_URL": front.url,  # the emulator in AWS's place: every call goes through it
                "EMBED_MODEL_DIR": str(Path(admin.embed.model_dir).resolve()),  # the image's /opt/model
                "HF_HUB_OFFLINE": "1",
                "FUNCTION": f.module,
                "FUNCTION_ARN": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{f.name}",
            }
            log_file = (logs / f"{logical}.log").open("wb")
            exit_stack.callback(log_file.close)
            command = f.command[0] if f.command else "lambda"
            processes[logical] = FunctionProcess(f.module, command, env, ROOT, f.timeout_s, log_file)
            exit_stack.callback(processes[logical].stop)
            if command == "lambda":
                front.functions[f.name] = processes[logical]
        for p in processes.values():
            p.wait_ready()
        log.info("deploy.rehearsal_ready", functions=len(processes), logs=str(logs))
        token, admin_token = issuer.token(USER), issuer.token(USER, scope=stack.parameters.get("InsightsScope", ""))
        yield Rehearsal(
            admin, denials, processes, functions, roles, token, logs, _routes(cfn), admin_token, machines=set(machines)
        )


def _routes(cfn: dict[str, Any]) -> list[tuple[str, re.Pattern[str]]]:
    """(METHOD, path pattern) of every route of the HTTP APIs, from the OpenAPI body the translator generates."""
    out = []
    for res in cfn["Resources"].values():
        if res["Type"] == "AWS::ApiGatewayV2::Api":
            for path, methods in res["Properties"].get("Body", {}).get("paths", {}).items():
                pattern = re.compile(re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(path)))
                out += [(m.upper(), pattern) for m in methods]
    return out


def _operator(admin: Settings) -> Settings:
    """The operator who deploys: an IAM user allowed everything, whose keys stay valid under enforcement."""
    iam_client = client("iam", admin)
    iam_client.create_user(UserName="rehearsal-operator")
    everything = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    iam_client.put_user_policy(UserName="rehearsal-operator", PolicyName="all", PolicyDocument=json.dumps(everything))
    key = iam_client.create_access_key(UserName="rehearsal-operator")["AccessKey"]
    return admin.with_(
        aws={"emulator_access_key_id": key["AccessKeyId"], "emulator_secret_access_key": key["SecretAccessKey"]}
    )


def _dropped(without: list[str], functions: dict[str, Any]) -> dict[str, set[str]]:
    """`Function:service:Action` → {role logical id: actions}."""
    out: dict[str, set[str]] = {}
    for item in without:
        fn, _, action = item.partition(":")
        if fn not in functions or ":" not in action:
            raise AssistError(f"--without {item!r}: use Function:service:Action with a function of the template")
        out.setdefault(functions[fn].role, set()).add(action)
    return out


def _publish_classifier(admin: Settings, s3: Any) -> None:
    """The shipped routing model as the registry's current version, as `assist classifier promote` leaves it."""
    # deferred, ADR 0071: numpy 0.13 s
    from assist.classify.model import ClassifierModel
    from assist.classify.registry import Registry

    registry = Registry(f"s3://{admin.aws.bucket}/models/routing", s3)
    model = ClassifierModel.load(DEFAULT_CLASSIFIER_MODEL)
    registry.add(model)
    registry.make_current(model.version)
