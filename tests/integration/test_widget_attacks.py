"""The attacker's suite (ADR 0092): the front door tried as someone with only a public docs page would,
against the app run with the stream function's own environment from template.yaml, each request shaped as a
Lambda function URL delivers it through the Lambda Web Adapter (`assist_dev.doubles.function_url`), and the Ask
function's behind API Gateway through mangum. Moto DynamoDB and Secrets Manager, LanceDB with docs/, the Ollama
test double where models answer. Each attack ends with a row of the table printed at the end of the run."""

from __future__ import annotations

import json
import re
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from assist.api.app import create_app
from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.settings import Settings
from assist.widget.gate import budget_counter
from assist.widget.store.backends import open_widget_store
from assist_dev.doubles.function_url import FunctionUrl
from assist_dev.doubles.jwks import AUDIENCE, ISSUER, IdentityProvider
from assist_dev.doubles.ollama_server import OllamaTestServer
from assist_dev.local.resources import ensure_resources
from assist_dev.rehearsal.template import Stack, expand
from tests.integration.test_widget_api import events
from tests.support.attacks import record
from tests.support.http import serve

pytestmark = pytest.mark.integration
STACK = "attack"
SITE = "https://docs.example.com"
QUESTION = "Where is the index stored?"
ATTACKER, VICTIM, BYSTANDER, ADMIN = "198.51.100.20", "203.0.113.50", "203.0.113.77", "192.0.2.1"
MAIN, LIGHT = "qwen3:1.7b", "qwen3:0.6b"
CLOUDFRONT_RANGE = "130.176.0.0/16"  # one of CloudFront's origin-facing ranges (its published ip-ranges.json)


def template_env(function: str, jwks_url: str) -> dict[str, str]:
    """A function's environment as template.yaml gives it, for a stack named STACK."""
    parameters = {"JwtIssuer": ISSUER, "JwtAudience": AUDIENCE, "JwtJwksUrl": jwks_url}
    stack = Stack(expand(parameters=parameters), STACK, parameters, secrets=lambda ref: "unused")
    return stack.functions()[function].environment


def deployed(env: dict[str, str], base: Settings, **changes: str) -> Settings:
    """Settings read from `env` as the function reads them, on the test's emulator, index and embedding model;
    its tables and the token key's secret made there."""
    local = {"INDEX_URI": base.index.uri, "EMBED_MODEL_DIR": str(base.embed.model_dir), "LOG_FORMAT": "console"}
    s = Settings.from_env({**env, **local, **changes}).with_(aws=base.aws)
    ensure_resources(s, client("dynamodb", s), client("s3", s))
    sm = client("secretsmanager", s)
    name = s.widget.token_key_secret
    assert name, "the template reads the token key from its secret"
    if name not in {x["Name"] for x in sm.list_secrets()["SecretList"]}:
        sm.create_secret(Name=name, SecretString=secrets.token_urlsafe(48))
    return s


@pytest.fixture(scope="module")
def idp():
    with IdentityProvider() as provider:
        yield provider


@pytest.fixture(scope="module")
def stream_env(idp) -> dict[str, str]:
    return template_env("AnswerStreamFunction", idp.url)


@pytest.fixture(scope="module")
def front(docs_index: Settings, stream_env, idp):
    """The stream function's app behind its function URL: (the URL, its settings, the app, an admin's headers)."""
    s = deployed(stream_env, docs_index)
    app = create_app(build_engine(s, client("dynamodb", s)))
    with serve(app) as url:
        admin = {"authorization": f"Bearer {idp.token('ops', scope=s.insights.scope)}"}
        yield SimpleNamespace(url=FunctionUrl(url), settings=s, app=app, admin=admin)


def test_the_stream_functions_environment_names_the_adapter_and_no_proxy(front):
    assert front.settings.widget.address_from == "lambda-web-adapter"
    assert front.settings.widget.trusted_proxies == ()


# -- helpers ----------------------------------------------------------------------------------------------
def new_key(front: Any, **limits: Any) -> str:
    r = front.url.request("POST", "/v1/admin/keys", ADMIN, front.admin, {"origins": [SITE], "limits": limits})
    assert r.status_code == 201, r.text
    return r.json()["key"]


def session(front: Any, key: str, ip: str, **headers: str) -> httpx.Response:
    sent = {"origin": SITE} | {k.replace("_", "-"): v for k, v in headers.items()}
    return front.url.request("POST", f"/v1/widget/session?key={key}", ip, sent, {"key": key})  # as widget.js sends it


def visitor(front: Any, key: str, ip: str) -> dict[str, Any]:
    r = session(front, key, ip)
    assert r.status_code == 200, r.text
    return r.json()


def as_visitor(v: dict[str, Any]) -> dict[str, str]:
    return {"authorization": f"Bearer {v['token']}", "origin": SITE}


def ask(front: Any, v: dict[str, Any], ip: str, message: str = QUESTION, **body: Any) -> httpx.Response:
    body = {"session_id": f"{v['visitor']}.chat", "message": message, **body}
    return front.url.request("POST", "/v1/ask/stream", ip, as_visitor(v), body)


def answered(r: httpx.Response) -> dict[str, Any]:
    assert r.status_code == 200, r.text
    done = events(r)["done"]
    assert done["answer"]
    return done


def refused(r: httpx.Response, reason: str) -> None:
    assert r.status_code == 429, r.text
    assert r.json()["reason"] == reason
    assert int(r.headers["retry-after"]) >= 1


def forged(i: int, address: str | None = None) -> dict[str, str]:
    """What a client writes to pass for another address: X-Forwarded-For and a request context of its own."""
    ip = address or f"10.{i // 250}.{i % 250}.9"
    return {"x_forwarded_for": ip, "x_amzn_request_context": json.dumps({"http": {"sourceIp": ip}})}


# -- addresses ----------------------------------------------------------------------------------------------
def test_one_address_forging_x_forwarded_for_on_the_function_url_gets_no_more_than_its_limit(front):
    key = new_key(front, ip_requests=5)
    replies = [session(front, key, ATTACKER, **forged(i)) for i in range(20)]
    assert [r.status_code for r in replies] == [200] * 5 + [429] * 15
    for r in replies[5:]:
        refused(r, "ip_limit")
    assert visitor(front, key, BYSTANDER)["token"]  # another address has its own count
    record(
        "forged X-Forwarded-For (and x-amzn-request-context) on 20 `POST /v1/widget/session`, function URL",
        "ip_requests 5 per address",
        "5 tokens, then 15 × 429 ip_limit: the address is requestContext.http.sourceIp",
    )


def test_one_address_forging_x_forwarded_for_on_the_api_gateway_event_gets_no_more_than_its_limit(
    front, docs_index, idp
):
    """The Ask function (visitor tokens behind API Gateway's HTTP API), through mangum as in Lambda."""
    from mangum import Mangum

    s = deployed(template_env("AskFunction", idp.url), docs_index)
    handler = Mangum(create_app(build_engine(s, client("dynamodb", s))), lifespan="off")
    key = new_key(front, ip_requests=5)  # the same widget table: the Ask function reads it

    def call(source_ip: str, headers: dict[str, str]) -> dict[str, Any]:
        body = json.dumps({"key": key})
        sent = {
            "content-type": "application/json",
            "origin": SITE,
            **{k.replace("_", "-"): v for k, v in headers.items()},
        }
        context = {
            "http": {"method": "POST", "path": "/v1/widget/session", "protocol": "HTTP/1.1", "sourceIp": source_ip}
        }
        event = {
            "version": "2.0",
            "routeKey": "POST /v1/widget/session",
            "rawPath": "/v1/widget/session",
            "rawQueryString": f"key={key}",  # as widget.js sends it
            "headers": sent,
            "requestContext": {**context, "requestId": secrets.token_hex(8), "stage": "$default"},
            "body": body,
            "isBase64Encoded": False,
        }
        return handler(event, SimpleNamespace(aws_request_id="r", get_remaining_time_in_millis=lambda: 29000))

    replies = [call(ATTACKER, {"x_forwarded_for": f"10.0.{i}.9, 10.9.9.9"}) for i in range(20)]
    assert [r["statusCode"] for r in replies] == [200] * 5 + [429] * 15
    assert json.loads(replies[-1]["body"])["reason"] == "ip_limit"
    assert call(BYSTANDER, {})["statusCode"] == 200
    record(
        "forged X-Forwarded-For on 20 `POST /v1/widget/session`, API Gateway event (mangum)",
        "ip_requests 5 per address",
        "5 tokens, then 15 × 429 ip_limit: the address is the event's requestContext.http.sourceIp",
    )


def test_one_address_forging_x_forwarded_for_through_uvicorn_in_socket_mode_gets_no_more_than_its_limit(
    docs_index, stream_env, idp
):
    """uvicorn with its defaults believes X-Forwarded-For from 127.0.0.1: every uvicorn here runs without it."""
    s = deployed(stream_env, docs_index, WIDGET_ADDRESS_FROM="socket")
    with serve(create_app(build_engine(s, client("dynamodb", s)))) as url:
        admin = {"authorization": f"Bearer {idp.token('ops', scope=s.insights.scope)}"}
        key = new_key(SimpleNamespace(url=FunctionUrl(url), admin=admin), ip_requests=5)
        lying = [{"origin": SITE, "x-forwarded-for": f"10.0.{i}.9"} for i in range(20)]
        sent = [httpx.post(url + "/v1/widget/session", json={"key": key}, headers=h, timeout=10) for h in lying]
    assert [r.status_code for r in sent] == [200] * 5 + [429] * 15
    assert {r.json()["reason"] for r in sent[5:]} == {"ip_limit"}
    record(
        "forged X-Forwarded-For on 20 `POST /v1/widget/session` through uvicorn in socket mode, from 127.0.0.1",
        "ip_requests 5 per address",
        "5 tokens, then 15 × 429 ip_limit: uvicorn runs with --no-proxy-headers wherever the app is served",
    )


def test_behind_cloudfront_one_viewer_forging_x_forwarded_for_gets_no_more_than_its_limit(docs_index, stream_env, idp):
    """CloudFront in front of the function URL: the function URL's sourceIp is an edge's (inside the trusted
    CloudFront range); the viewer's address is in CloudFront-Viewer-Address, which CloudFront sets."""
    s = deployed(stream_env, docs_index, WIDGET_ADDRESS_FROM="cloudfront", WIDGET_TRUSTED_PROXIES=CLOUDFRONT_RANGE)
    with serve(create_app(build_engine(s, client("dynamodb", s)))) as url:
        cdn = SimpleNamespace(
            url=FunctionUrl(url), admin={"authorization": f"Bearer {idp.token('ops', scope=s.insights.scope)}"}
        )
        key = new_key(cdn, ip_requests=5)
        replies = [
            session(cdn, key, f"130.176.{i}.20", **forged(i), cloudfront_viewer_address=f"{ATTACKER}:{40000 + i}")
            for i in range(20)
        ]
        # straight to the function URL, claiming a victim in CloudFront's header: its own sourceIp counts
        direct = [session(cdn, key, BYSTANDER, cloudfront_viewer_address=f"{VICTIM}:443") for _ in range(6)]
        victim = session(cdn, key, "130.176.99.20", cloudfront_viewer_address=f"{VICTIM}:50000")
    assert [r.status_code for r in replies] == [200] * 5 + [429] * 15
    assert [r.status_code for r in direct] == [200] * 5 + [429]
    assert victim.status_code == 200, victim.text
    record(
        "behind CloudFront (sourceIp an edge's, trusted): one viewer in CloudFront-Viewer-Address forging "
        "X-Forwarded-For on 20 `POST /v1/widget/session`; a direct caller forging CloudFront's header",
        "ip_requests 5 per address (WIDGET_ADDRESS_FROM=cloudfront)",
        "5 tokens, then 15 × 429 ip_limit; the direct caller counted on its own sourceIp; the victim answered",
    )


def test_forging_a_victims_address_leaves_the_victim_answered(front):
    key = new_key(front, ip_requests=5)
    replies = [session(front, key, ATTACKER, **forged(0, VICTIM)) for _ in range(10)]
    assert [r.status_code for r in replies] == [200] * 5 + [429] * 5
    victim = visitor(front, key, VICTIM)
    done = answered(ask(front, victim, VICTIM))
    assert done["sources"]
    record(
        "10 requests claiming the victim's address (X-Forwarded-For, x-amzn-request-context)",
        "ip_requests 5 per address",
        "the attacker's own address refused after 5; the victim got its token and its answer",
    )


def test_a_thousand_visitor_ids_from_one_address_get_the_new_visitor_limit(front):
    key = new_key(front, ip_requests=5000)  # the address's requests are not what stops this
    with ThreadPoolExecutor(4) as pool:
        replies = list(pool.map(lambda i: session(front, key, ATTACKER, **forged(i)), range(1000)))
    granted = [r.json() for r in replies if r.status_code == 200]
    limit = front.settings.widget.new_visitors
    assert len({v["visitor"] for v in granted}) == len(granted) == limit
    for r in (r for r in replies if r.status_code != 200):
        refused(r, "new_visitor_limit")
    renewed = session(front, key, ATTACKER, authorization=f"Bearer {granted[0]['token']}")
    assert renewed.status_code == 200  # renewing a visitor's token is not a new id
    assert renewed.json()["visitor"] == granted[0]["visitor"]
    assert visitor(front, key, BYSTANDER)["visitor"] not in {v["visitor"] for v in granted}
    record(
        "1,000 `POST /v1/widget/session` (new visitor ids) from one address",
        f"new_visitors {limit} per address per ip_window_s",
        f"{limit} visitor ids, then 980 × 429 new_visitor_limit; renewals and other addresses unaffected",
    )


def test_random_keys_count_against_the_address(front):
    limit = front.settings.widget.ip_requests
    made_up = [f"pk_{secrets.token_urlsafe(18)}" for _ in range(limit + 10)]
    replies = [front.url.request("POST", "/v1/widget/session", ATTACKER, {"origin": SITE}, {"key": k}) for k in made_up]
    assert [r.status_code for r in replies] == [403] * limit + [429] * 10
    refused(replies[-1], "ip_limit")
    preflight = {"origin": SITE, "access-control-request-method": "POST"}
    r = front.url.request("OPTIONS", f"/v1/ask/stream?key={made_up[0]}", ATTACKER, preflight)
    refused(r, "ip_limit")
    other = front.url.request("OPTIONS", f"/v1/ask/stream?key={made_up[1]}", BYSTANDER, preflight)
    assert other.status_code == 403
    record(
        f"{limit + 10} made-up `pk_` keys from one address (sessions and preflights)",
        f"ip_requests {limit} per address (the deployment's), no store read per made-up key",
        f"{limit} × 403, then 429 ip_limit; another address still gets its 403",
    )


def test_every_refusal_counts_against_the_address_before_any_other_work(front):
    preflight = {"access-control-request-method": "POST", "access-control-request-headers": "authorization"}
    kinds = {
        "a foreign Origin": lambda key, ip: session(front, key, ip, origin="https://evil.example.net"),
        "no Origin": lambda key, ip: front.url.request("POST", f"/v1/widget/session?key={key}", ip, {}, {"key": key}),
        "a preflight": lambda key, ip: front.url.request(
            "OPTIONS", f"/v1/ask/stream?key={key}", ip, {"origin": SITE, **preflight}
        ),
        "an invalid body": lambda key, ip: front.url.request(
            "POST", f"/v1/widget/session?key={key}", ip, {"origin": SITE}, {"key": key, "more": 1}
        ),
    }
    seen = {}
    for n, (kind, send) in enumerate(kinds.items()):
        key, ip = new_key(front, ip_requests=5), f"192.0.2.{100 + n}"
        codes = [send(key, ip).status_code for _ in range(8)]
        assert codes[5:] == [429] * 3, (kind, codes)
        assert session(front, key, ip).status_code == 429, kind  # a real request from there too, now
        assert session(front, key, BYSTANDER).status_code == 200  # another address is untouched
        seen[kind] = codes[0]
    assert seen == {"a foreign Origin": 403, "no Origin": 403, "a preflight": 204, "an invalid body": 400}

    key, ip = new_key(front, ip_requests=5), "192.0.2.120"  # refused questions: the token, then 4 refusals
    v, other = visitor(front, key, ip), visitor(front, key, BYSTANDER)
    refusals = [
        ask(front, v, ip, message="   "),
        ask(front, v, ip, session_id=f"{other['visitor']}.chat"),
        front.url.request("POST", "/v1/ask/stream", ip, {**as_visitor(v), "origin": "https://evil.example.net"}, {}),
        ask(front, v, ip, message="\u200b\ufeff"),
    ]
    assert [r.status_code for r in refusals] == [400, 403, 403, 400]
    refused(ask(front, v, ip), "ip_limit")  # the real question after them
    record(
        "refusals from one address: a foreign Origin, no Origin, preflights, an invalid body (8 each); "
        "refused questions (blank, another visitor's session, a foreign Origin, invisible characters only)",
        "ip_requests 5 per address, counted on entry before any other check (ADR 0118)",
        "5 × 403 / 204 / 400, then 429 ip_limit, for each kind; after 4 refused questions the real one 429 ip_limit",
    )


def test_a_key_revoked_mid_stream_ends_its_visitors_at_the_next_request(front):
    key = new_key(front)
    v = visitor(front, key, VICTIM)
    body = {"session_id": f"{v['visitor']}.chat", "message": QUESTION}
    with front.url.stream("POST", "/v1/ask/stream", VICTIM, as_visitor(v), body) as stream:
        text = stream.iter_text()
        first = next(text)  # the route event: the question was admitted, the answer is on its way
        revoked = front.url.request("DELETE", f"/v1/admin/keys/{key}", ADMIN, front.admin)
        assert revoked.status_code == 200
        rest = first + "".join(text)
    assert rest.startswith("event: route")
    assert "event: done" in rest  # the question admitted is answered
    assert ask(front, v, VICTIM).status_code == 403
    history = front.url.request("GET", f"/v1/sessions/{v['visitor']}.chat", VICTIM, as_visitor(v))
    assert history.status_code == 403
    assert session(front, key, VICTIM).status_code == 403
    preflight = {"origin": SITE, "access-control-request-method": "POST"}
    assert front.url.request("OPTIONS", f"/v1/ask/stream?key={key}", VICTIM, preflight).status_code == 403
    record(
        "a site key revoked while its visitor's answer streams",
        "the key's active flag (in-process at once; other processes within WIDGET_KEY_CACHE_S)",
        "the streaming answer completes; its next question, history, token and preflight are 403",
    )


def handlers(route: Any) -> list[tuple[str, Any]]:
    """(method, handler) of each of an app's routes that a visitor's token may not reach: not the widget's."""
    by_method = getattr(route, "route_handler_map", None)
    if by_method is None:  # an ASGI app mounted at the path (MCP): every method
        return [("POST", route.route_handler)] if not route.route_handler.opt.get("visitor") else []
    return [(m, h[0] if isinstance(h, tuple) else h) for m, h in by_method.items() if not _visitor_route(h)]


def _visitor_route(handler: Any) -> bool:
    return bool((handler[0] if isinstance(handler, tuple) else handler).opt.get("visitor"))


def test_a_visitors_token_is_refused_on_every_route_but_the_widgets(front):
    key = new_key(front)
    v, other = visitor(front, key, VICTIM), visitor(front, key, VICTIM)
    routes = [(method, route.path) for route in front.app.routes for method, handler in handlers(route)]
    routes = [(m, path) for m, path in routes if m not in ("HEAD", "OPTIONS")]
    assert {("POST", "/v1/ask"), ("GET", "/insights"), ("POST", "/mcp"), ("DELETE", "/v1/admin/keys/{key:str}")} < set(
        routes
    )
    statuses = {}
    for method, path in routes:
        url = re.sub(r"\{[^}]+\}", "x", path)
        statuses[(method, path)] = front.url.request(method, url, VICTIM, as_visitor(v), {}).status_code
    assert set(statuses.values()) == {403}, {k: s for k, s in statuses.items() if s != 403}
    theirs = f"/v1/sessions/{other['visitor']}.chat"
    assert front.url.request("GET", theirs, VICTIM, as_visitor(v)).status_code == 403
    assert ask(front, v, VICTIM, session_id=f"{other['visitor']}.chat").status_code == 403
    feedback = front.url.request("POST", theirs + "/turns/1/feedback", VICTIM, as_visitor(v), {"rating": "up"})
    assert feedback.status_code == 403
    record(
        f"a visitor's token on the {len(routes)} routes that are not the widget's, and on another visitor's session",
        "the guard: visitor tokens only on the widget's routes, on their own sessions",
        f"403 on all {len(routes)} (incl. /v1/ask, /insights, admin keys, /mcp, completions) and on the others'",
    )


# -- limits in order ---------------------------------------------------------------------------------------
def test_a_visitor_over_its_own_limit_costs_the_keys_rate_nothing(front):
    key = new_key(front, visitor_questions=2, key_rate_per_s=0.001, key_burst=3)
    a, b = visitor(front, key, VICTIM), visitor(front, key, BYSTANDER)
    answered(ask(front, a, VICTIM))
    answered(ask(front, a, VICTIM))
    for _ in range(5):
        refused(ask(front, a, VICTIM), "visitor_limit")
    answered(ask(front, b, BYSTANDER))  # the key's third question: a's refused ones took none of its rate
    refused(ask(front, visitor(front, key, BYSTANDER), BYSTANDER), "key_rate")  # and its rate is 3, as set
    record(
        "one visitor asking past its own limit, to use up the key's shared rate",
        "visitor_questions 2 checked before the key's rate (burst 3)",
        "its 5 extra questions 429 visitor_limit, the key's rate untouched: another visitor answered",
    )


def test_history_and_feedback_count_against_the_address(front):
    key = new_key(front, ip_requests=4)
    v = visitor(front, key, VICTIM)  # 1
    done = answered(ask(front, v, VICTIM))  # 2
    history = f"/v1/sessions/{v['visitor']}.chat"
    feedback = f"{history}/turns/{done['turn']}/feedback"
    assert front.url.request("GET", history, VICTIM, as_visitor(v)).status_code == 200  # 3
    assert front.url.request("POST", feedback, VICTIM, as_visitor(v), {"rating": "up"}).status_code == 200  # 4
    refused(front.url.request("GET", history, VICTIM, as_visitor(v)), "ip_limit")
    refused(front.url.request("POST", feedback, VICTIM, as_visitor(v), {"rating": "down"}), "ip_limit")
    refused(ask(front, v, VICTIM), "ip_limit")
    record(
        "session history and feedback called in a loop",
        "ip_requests 4 per address (token, question, history, feedback together)",
        "the 5th request and after, history and feedback alike, 429 ip_limit",
    )


# -- the model budget ----------------------------------------------------------------------------------------
@pytest.fixture
def models(docs_index, stream_env, idp):
    """The stream function's app with a model host (the Ollama double) and the LLM classifier layer deciding every
    free-text message (CLASSIFIER_CONFIDENCE_THRESHOLD above 1: the embedding layer always abstains)."""
    with OllamaTestServer([MAIN, LIGHT]) as host:
        s = deployed(
            stream_env,
            docs_index,
            OLLAMA_HOST=host.url,
            OLLAMA_MODEL_NAME=MAIN,
            OLLAMA_MODEL_NAME_CONVERSATIONAL=LIGHT,
            CLASSIFIER_CONFIDENCE_THRESHOLD="1.01",
        )
        with serve(create_app(build_engine(s, client("dynamodb", s)))) as url:
            admin = {"authorization": f"Bearer {idp.token('ops', scope=s.insights.scope)}"}
            yield SimpleNamespace(url=FunctionUrl(url), settings=s, admin=admin, host=host)


def spent(front: Any, key: str) -> int:
    """The key's model calls today, as its counter holds them."""
    now = time.time()
    day = datetime.fromtimestamp(now, UTC).date().isoformat()
    return open_widget_store(front.settings).count(budget_counter(key, day), int(now * 1000))


def test_every_model_call_is_charged_the_classifiers_second_ask_a_rewrite_a_fallback_and_the_answer(models):
    key = new_key(models, daily_model_calls=100)
    v = visitor(models, key, VICTIM)
    models.host.reply("RETRIEVAL", model=MAIN)  # the classifier's verdict, and the answer
    models.host.queue_replies(["It is about the documentation."], model=MAIN)  # not a label: the classifier asks again
    answered(ask(models, v, VICTIM, "How do I configure the light model slot?"))
    assert spent(models, key) == len(models.host.calls("/api/chat")) == 3  # classifier twice, answer
    models.host.queue_replies(["Documentation."], model=MAIN)
    models.host.queue_replies(["configure the light model slot on another Ollama host"], model=LIGHT)
    answered(ask(models, v, VICTIM, "and how do I do that on another host?"))
    assert spent(models, key) == len(models.host.calls("/api/chat")) == 7  # classifier twice, rewrite, answer
    rewrite = models.host.calls("/api/chat", model=LIGHT)
    assert len(rewrite) == 1
    assert "another host" in rewrite[0].body["messages"][-1]["content"]
    models.host.set_down(LIGHT)  # the rewrite's light slot fails and falls back to main
    try:
        answered(ask(models, v, VICTIM, "and is that the same on the other host?"))
    finally:
        models.host.set_up(LIGHT)
    assert spent(models, key) == len(models.host.calls("/api/chat")) == 11  # classifier, light, main, answer
    record(
        "one question whose classifier reply is not a label (asked twice), a rewrite and the answer; a slot fallback",
        "daily_model_calls counts every model call where it is made (assist.llm.charge)",
        "7 counted on the key's budget, 7 chat calls at the model host; with a slot fallback, 4 and 4",
    )


def test_past_the_budget_not_one_call_reaches_the_model_host(models):
    key = new_key(models, daily_model_calls=3)
    v = visitor(models, key, VICTIM)
    models.host.reply("RETRIEVAL", model=MAIN)
    models.host.queue_replies(["It is about the documentation."], model=MAIN)
    assert answered(ask(models, v, VICTIM))["degraded"] == []  # classifier twice, answer: the budget's 3
    calls = len(models.host.calls("/api/chat"))
    models.host.queue_replies(["Documentation."], model=MAIN)
    assert answered(ask(models, v, VICTIM, "How do I configure the light model slot?"))["degraded"] == ["budget"]
    assert len(models.host.calls("/api/chat")) == calls  # the classifier's call was refused before it was sent
    assert spent(models, key) == 3
    record(
        "a question past the key's daily model budget, its classifier reply made to miss a label",
        "daily_model_calls 3",
        "the first question's 3 calls counted; then 0 calls at the model host, an extractive answer with budget",
    )


def test_force_answer_past_the_budget_asks_no_model_and_counts_as_a_question(models):
    key = new_key(models, daily_model_calls=2, visitor_questions=3)
    v = visitor(models, key, VICTIM)
    models.host.reply("RETRIEVAL", model=MAIN)
    assert answered(ask(models, v, VICTIM))["degraded"] == []  # classifier and answer: the budget's 2
    calls = len(models.host.calls("/api/chat"))
    for _ in range(2):
        forced = answered(ask(models, v, VICTIM, force_answer=True))
        assert forced["degraded"] == ["budget"]
        assert forced["sources"]
    assert len(models.host.calls("/api/chat")) == calls  # no stage asked a model
    assert spent(models, key) == 2
    refused(ask(models, v, VICTIM, force_answer=True), "visitor_limit")  # a forced question is a question
    record(
        "`force_answer: true` past the key's daily model budget, and past the visitor's limit",
        "daily_model_calls 2 (model calls, any stage); visitor_questions 3",
        "extractive answers with degraded budget, no model call; the 4th question 429 visitor_limit",
    )
