"""The widget's API over real HTTP (uvicorn), against moto DynamoDB and LanceDB with docs/: visitor tokens only for
a site key's origins, CORS granted to nobody else, a visitor confined to its own sessions, a revoked key refused
within the cache interval, each limit its own 429 with Retry-After, and the daily model budget (ADRs 0088-0090)."""

from __future__ import annotations

import time
from typing import Any

import httpx
import jwt
import pytest
from structlog.testing import capture_logs

from assist.ollama_client import forget_facts
from assist.settings import Settings
from assist_dev.doubles.jwks import AUDIENCE, ISSUER, IdentityProvider
from tests.integration.conftest import served
from tests.support.attacks import record
from tests.support.widget_table import own_widget_table

pytestmark = pytest.mark.integration
SITE = "https://docs.example.com"
OTHER = "https://evil.example.net"
QUESTION = "Where is the index stored?"


@pytest.fixture(scope="module")
def settings(docs_index: Settings) -> Settings:
    return own_widget_table(docs_index, "api").with_(widget={"key_cache_s": 1.0, "token_ttl_s": 600})


@pytest.fixture(scope="module")
def base(settings: Settings):
    with served(settings) as url:
        yield url


def new_key(base: str, origins: list[str] | None = None, **limits: Any) -> str:
    r = httpx.post(base + "/v1/admin/keys", json={"origins": origins or [SITE + ":443"], "limits": limits}, timeout=10)
    assert r.status_code == 201, r.text
    return r.json()["key"]


def visitor(base: str, key: str, origin: str = SITE, **headers: str) -> dict[str, Any]:
    r = httpx.post(base + "/v1/widget/session", json={"key": key}, headers={"origin": origin, **headers}, timeout=10)
    assert r.status_code == 200, r.text
    assert r.headers["access-control-allow-origin"] == origin
    return r.json()


def as_visitor(v: dict[str, Any], origin: str = SITE) -> dict[str, str]:
    return {"authorization": f"Bearer {v['token']}", "origin": origin}


def stream(base: str, v: dict[str, Any], session: str | None = None, origin: str = SITE, **body: Any) -> httpx.Response:
    """POST /v1/ask/stream as the widget sends it; the response read whole."""
    body = {"session_id": session or f"{v['visitor']}.chat", "message": QUESTION, **body}
    headers = {**as_visitor(v, origin), "x-assist-page": f"{origin}/guide/storage.html#where"}
    return httpx.post(base + "/v1/ask/stream", json=body, headers=headers, timeout=60)


def events(response: httpx.Response) -> dict[str, Any]:
    """The stream's events by name (the last of each)."""
    import json

    out: dict[str, Any] = {}
    for block in response.text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            out[lines["event"]] = json.loads(lines["data"])
    return out


def test_only_the_keys_origins_get_a_visitor_token_and_a_cors_grant(base, settings):
    key = new_key(base, [SITE + ":443", "http://127.0.0.1:18999"])  # stored as browsers send it: no :443
    v = visitor(base, key)
    claims = jwt.decode(v["token"], options={"verify_signature": False})
    assert jwt.get_unverified_header(v["token"])["typ"] == "assist-visitor+jwt"
    assert (claims["sub"], claims["key"], claims["origin"]) == (v["visitor"], key, SITE)
    assert 590 <= v["expires_in"] <= 600
    assert v["expires_at"].endswith("Z")
    for origin in (OTHER, "https://docs.example.com:8443", "http://docs.example.com", None):
        r = httpx.post(base + "/v1/widget/session", json={"key": key}, headers={"origin": origin} if origin else {})
        assert r.status_code == 403, (origin, r.text)
        assert "access-control-allow-origin" not in r.headers
    for body in ({"key": "pk_made_up_1234"}, {"key": "sk_" + key[3:]}):
        r = httpx.post(base + "/v1/widget/session", json=body, headers={"origin": SITE})
        assert (r.status_code, "access-control-allow-origin" in r.headers) == (403, False)
    r = httpx.post(base + "/v1/widget/session", json={"key": key, "more": 1}, headers={"origin": SITE})
    assert r.status_code == 400

    preflight = {"access-control-request-method": "POST", "access-control-request-headers": "authorization"}
    ok = httpx.options(f"{base}/v1/ask/stream?key={key}", headers={"origin": SITE, **preflight})
    assert ok.status_code == 204
    assert ok.headers["access-control-allow-origin"] == SITE
    assert "authorization" in ok.headers["access-control-allow-headers"]
    for url, origin in ((f"/v1/ask/stream?key={key}", OTHER), ("/v1/ask/stream", SITE), (f"/v1/ask?key={key}", SITE)):
        r = httpx.options(base + url, headers={"origin": origin, **preflight})
        assert "access-control-allow-origin" not in r.headers, url

    renewed = visitor(base, key, authorization=f"Bearer {v['token']}")  # renewal keeps the visitor
    assert renewed["visitor"] == v["visitor"]
    assert visitor(base, key)["visitor"] != v["visitor"]


def test_a_visitor_asks_and_reads_only_its_own_sessions(base):
    key = new_key(base, [SITE, "https://blog.example.com"])
    a, b = visitor(base, key), visitor(base, key)
    answered = stream(base, a)
    assert answered.status_code == 200, answered.text
    assert answered.headers["access-control-allow-origin"] == SITE
    done = events(answered)["done"]
    assert done["sources"]
    insights = httpx.get(base + "/insights?days=1", timeout=60).text  # the developer is the admin locally
    assert f"<b>{key}</b>: asked from</p><ul class=pages><li>{SITE}/guide/storage.html · 1</li>" in insights
    mine = httpx.get(f"{base}/v1/sessions/{a['visitor']}.chat?key={key}", headers=as_visitor(a))
    assert mine.status_code == 200
    assert [t["message"] for t in mine.json()["turns"]] == [QUESTION]
    assert mine.headers["access-control-allow-origin"] == SITE

    theirs = httpx.get(f"{base}/v1/sessions/{a['visitor']}.chat?key={key}", headers=as_visitor(b))
    assert theirs.status_code == 403
    assert "not this visitor's" in theirs.json()["detail"]
    assert stream(base, b, session=f"{a['visitor']}.chat").status_code == 403
    assert stream(base, a, origin="https://blog.example.com").status_code == 403  # issued to another origin
    assert httpx.get(f"{base}/v1/sessions/{a['visitor']}.chat", headers={"x-assist-user": "local"}).status_code == 404
    feedback = f"{base}/v1/sessions/{a['visitor']}.chat/turns/{done['turn']}/feedback"
    assert httpx.post(feedback, json={"rating": "up"}, headers=as_visitor(a)).status_code == 200
    labelled = httpx.post(feedback, json={"rating": "down", "type": "PLATFORM"}, headers=as_visitor(a))
    assert labelled.status_code == 400  # anonymous visitors do not label types for training
    assert httpx.post(feedback, json={"rating": "up"}, headers=as_visitor(b)).status_code == 403

    # only the widget's routes take a visitor token; the platform's fields are not a visitor's
    assert (
        httpx.post(
            base + "/v1/ask", json={"session_id": f"{a['visitor']}.x", "message": "hi"}, headers=as_visitor(a)
        ).status_code
        == 403
    )
    assert httpx.get(base + "/insights", headers=as_visitor(a)).status_code == 403
    assert httpx.post(base + "/v1/admin/keys", json={"origins": [OTHER]}, headers=as_visitor(a)).status_code == 403
    assert stream(base, a, extra_context="plan: enterprise").status_code == 400
    forged = a["token"][:-4] + ("AAAA" if not a["token"].endswith("AAAA") else "BBBB")
    assert stream(base, {**a, "token": forged}).status_code == 401


def test_a_revoked_key_stops_working_within_the_cache_interval(base, settings):
    key = new_key(base)
    v = visitor(base, key)
    assert stream(base, v).status_code == 200
    r = httpx.delete(f"{base}/v1/admin/keys/{key}")
    assert r.status_code == 200
    assert r.json()["active"] is False
    time.sleep(settings.widget.key_cache_s + 0.2)
    assert stream(base, v).status_code == 403  # its tokens, too
    r = httpx.post(base + "/v1/widget/session", json={"key": key}, headers={"origin": SITE})
    assert r.status_code == 403
    assert "revoked" in r.json()["detail"]


def test_each_limit_is_its_own_429_with_retry_after_and_stores_nothing(base):
    def refused(r: httpx.Response, reason: str) -> None:
        assert r.status_code == 429, r.text
        assert r.json()["reason"] == reason
        assert int(r.headers["retry-after"]) >= 1
        assert r.headers["access-control-allow-origin"] == SITE  # the widget can read it and say when to retry
        assert "retry-after" in r.headers["access-control-expose-headers"]

    per_visitor = new_key(base, visitor_questions=2, visitor_window_s=300)
    v = visitor(base, per_visitor)
    assert [stream(base, v).status_code for _ in range(2)] == [200, 200]
    refused(stream(base, v), "visitor_limit")
    assert stream(base, visitor(base, per_visitor)).status_code == 200  # another visitor has its own
    turns = httpx.get(f"{base}/v1/sessions/{v['visitor']}.chat?key={per_visitor}", headers=as_visitor(v)).json()
    assert len(turns["turns"]) == 2  # the refused question is nowhere

    per_key = new_key(base, key_rate_per_s=0.01, key_burst=2)
    assert [stream(base, visitor(base, per_key)).status_code for _ in range(2)] == [200, 200]
    refused(stream(base, visitor(base, per_key)), "key_rate")

    per_address = new_key(base, ip_requests=3, ip_window_s=120)
    w = visitor(base, per_address)  # 1: the token
    assert [stream(base, w).status_code for _ in range(2)] == [200, 200]  # 2, 3
    refused(stream(base, w), "ip_limit")
    r = httpx.post(base + "/v1/widget/session", json={"key": per_address}, headers={"origin": SITE})
    refused(r, "ip_limit")


@pytest.fixture
def model_base(settings, ollama):
    s = settings.with_(ollama={"host": ollama.url, "host_explicit": True, "model_name": "main-model:1b"})
    with served(s) as url:
        yield url


def test_past_the_daily_budget_answers_are_extractive_and_call_no_model(model_base, ollama):
    ollama.reply("The index lives in LanceDB [1].", model="main-model:1b")
    key = new_key(model_base, daily_model_calls=1)
    v = visitor(model_base, key)
    first = events(stream(model_base, v))["done"]
    assert first["degraded"] == []
    assert first["answer"] == "The index lives in LanceDB [1]."
    calls = len(ollama.requests)
    assert ollama.calls("/api/chat")
    forget_facts()  # a window looked up again would be a request to the host too
    second = events(stream(model_base, v))["done"]
    assert second["degraded"] == ["budget"]
    generate = next(s for s in second["trace"]["stages"] if s["name"] == "generate")
    assert (generate["answered_by"], generate["answered_from"]) == ("extractive", "passages")
    assert second["sources"]
    forced = events(stream(model_base, v, force_answer=True))["done"]  # "Ask anyway" spends no budget either
    assert (forced["degraded"], forced["sources"] != []) == (["budget"], True)
    assert len(ollama.requests) == calls, "past the budget no model is asked anything"
    assert events(stream(model_base, visitor(model_base, key)))["done"]["degraded"] == ["budget"]  # per key


def test_an_app_that_verifies_user_tokens_takes_visitor_tokens_on_the_widget_routes_only(settings):
    with IdentityProvider() as idp:
        s = settings.with_(jwt={"jwks_url": idp.url, "issuer": ISSUER, "audience": AUDIENCE})
        with served(s) as url:
            admin = {"authorization": f"Bearer {idp.token('ops', scope=s.insights.scope)}"}
            r = httpx.post(url + "/v1/admin/keys", json={"origins": [SITE]}, headers=admin)
            assert r.status_code == 201, r.text
            key = r.json()["key"]
            user = {"authorization": f"Bearer {idp.token('alice')}"}
            assert httpx.post(url + "/v1/admin/keys", json={"origins": [SITE]}, headers=user).status_code == 403
            v = visitor(url, key)  # the session route is open: the key and origin are its check
            assert stream(url, v).status_code == 200
            assert httpx.get(url + "/v1/sessions/x", headers={"origin": SITE}).status_code == 401
            assert (
                httpx.post(url + "/v1/ask", json={"session_id": "x", "message": "y"}, headers=as_visitor(v)).status_code
                == 403
            )


def test_an_anonymous_caller_meets_a_store_failure_as_a_generic_503_with_a_request_id(docs_index):
    """The widget's store unreachable (nothing answers at its endpoint): a visitor's page is told that the service is
    unavailable and under which request id the log keeps the details, never the endpoint, the table or the
    exception."""
    dead = docs_index.with_(aws={"endpoint_url": "http://127.0.0.1:9"}, widget={"table": "assist-widget-gone"})
    with served(dead) as url, capture_logs() as logs:
        r = httpx.post(url + "/v1/widget/session?key=pk_x", json={"key": "pk_x"}, headers={"origin": SITE}, timeout=60)
    assert r.status_code == 503, r.text
    detail = r.json()["detail"]
    assert detail.startswith("the service is unavailable; retry shortly (request ")
    for secret in ("127.0.0.1", ":9", "assist-widget-gone", "Endpoint", "DynamoDB"):
        assert secret not in r.text
    request_id = detail.rsplit(" ", 1)[1].rstrip(")")
    [entry] = [e for e in logs if e.get("request_id") == request_id]
    assert entry["event"] == "api.failure_withheld"
    assert "127.0.0.1:9" in entry["detail"]  # the details are in the log, under that id
    record(
        "the widget's store unreachable, a visitor's page asking for a token",
        "anonymous callers are told no failure's details",
        '503 "the service is unavailable; retry shortly (request <id>)", no endpoint, table or exception; the '
        "details in the log under that id",
    )
