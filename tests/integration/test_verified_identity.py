"""Verified identity (ADR 0050): with JWT_JWKS_URL, JWT_ISSUER and JWT_AUDIENCE set, every route of the
answer app takes its caller from a bearer token checked against an identity provider's keys — served
here on loopback — and nothing else: not `X-Assist-User`, even in local mode. Driven over real HTTP
(uvicorn), with the `openai` and `mcp` clients, against moto DynamoDB and LanceDB with docs/."""

from __future__ import annotations

import anyio
import httpx
import openai
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from assist.settings import Settings, SettingsError
from assist_dev.doubles.jwks import AUDIENCE, ISSUER, IdentityProvider, rsa_key
from tests.integration.conftest import ask as post_ask
from tests.integration.conftest import served

pytestmark = pytest.mark.integration
QUESTION = "Where is the index stored?"


@pytest.fixture(scope="module")
def idp():
    with IdentityProvider() as provider:
        yield provider


@pytest.fixture(scope="module")
def settings(docs_index: Settings, idp: IdentityProvider) -> Settings:
    # local mode stays on (as on `assist local up`): the X-Assist-User header would name the caller without JWT_*
    assert docs_index.api.local_mode
    return docs_index.with_(jwt={"jwks_url": idp.url, "issuer": ISSUER, "audience": AUDIENCE})


@pytest.fixture(scope="module")
def base(settings: Settings):
    with served(settings) as url:
        yield url


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def ask(base: str, session_id: str, headers: dict[str, str]) -> httpx.Response:
    return post_ask(base, headers, session_id=session_id, message=QUESTION)


@pytest.mark.parametrize(
    ("token", "says"),
    [
        (None, "missing bearer token"),
        (lambda idp: idp.token("alice", ttl_s=-60), "token expired"),
        (lambda idp: idp.token("alice", aud="another-app"), f"audience is not {AUDIENCE}"),
        (lambda idp: idp.token("alice", iss="https://elsewhere.invalid/"), f"issuer is not {ISSUER}"),
        (lambda idp: idp.token("alice", key=rsa_key()), "signature does not verify"),  # the provider's kid, not its key
        (lambda idp: idp.token("alice", kid="unknown-key"), "not signed by a key of the identity provider"),
        (lambda idp: "not.a.jwt", "invalid token"),
    ],
    ids=["missing", "expired", "wrong-audience", "wrong-issuer", "wrong-signature", "unknown-kid", "garbage"],
)
def test_a_request_without_a_valid_token_is_a_401_saying_what_is_wrong(base, idp, session_id, token, says):
    headers = {"X-Assist-User": "alice"} | (bearer(token(idp)) if token else {})
    r = ask(base, session_id, headers)
    assert r.status_code == 401, r.text
    assert says in r.json()["detail"]
    challenge = r.headers["www-authenticate"]
    assert challenge.startswith("Bearer")
    assert ('error="invalid_token"' in challenge) is (token is not None)  # RFC 6750: no error code without a token
    # nothing was stored for the refused request
    stored = httpx.get(f"{base}/v1/sessions/{session_id}", headers=bearer(idp.token("alice")), timeout=10)
    assert stored.status_code == 404


def test_the_caller_is_the_tokens_subject_and_the_dev_header_is_ignored(base, idp, session_id):
    alice, bob = bearer(idp.token("alice")), bearer(idp.token("bob"))
    first = ask(base, session_id, alice | {"X-Assist-User": "bob"})
    assert first.status_code == 200, first.text
    assert first.json()["turn"] == 1
    # the session is alice's: bob's token does not read it, whatever the dev header says
    assert httpx.get(f"{base}/v1/sessions/{session_id}", headers=bob | {"X-Assist-User": "alice"}).status_code == 404
    own = httpx.get(f"{base}/v1/sessions/{session_id}", headers=alice, timeout=10)
    assert own.status_code == 200
    assert [t["message"] for t in own.json()["turns"]] == [QUESTION]
    # and a token-less request naming alice in the dev header is refused
    assert httpx.get(f"{base}/v1/sessions/{session_id}", headers={"X-Assist-User": "alice"}).status_code == 401


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/ask/stream"),
        ("GET", "/v1/sessions/s1"),
        ("POST", "/v1/sessions/s1/turns/1/feedback"),
        ("GET", "/insights"),
        ("GET", "/v1/models"),
        ("GET", "/v1/models/assist"),
        ("POST", "/v1/chat/completions"),
        ("POST", "/mcp"),
    ],
)
def test_every_route_refuses_a_request_without_a_token(base, method, path):
    r = httpx.request(method, base + path, json={}, headers={"X-Assist-User": "alice"}, timeout=10)
    assert r.status_code == 401, (path, r.text)
    assert r.headers["www-authenticate"] == "Bearer"
    body = r.json()
    openai_shaped = path.startswith(("/v1/chat", "/v1/models"))
    detail = body["error"]["message"] if openai_shaped else body["detail"]
    assert "missing bearer token" in detail


@pytest.mark.parametrize("path", ["/healthz", "/", "/static/app.js", "/schema/openapi.json"])
def test_health_the_page_and_the_schema_need_no_token(base, path):
    assert httpx.get(base + path, timeout=10).status_code == 200


def test_openai_client_sends_the_token_as_its_api_key(base, idp, session_id):
    good = openai.OpenAI(base_url=base + "/v1", api_key=idp.token("carol"), max_retries=0)
    messages = [{"role": "user", "content": QUESTION}]
    resp = good.chat.completions.create(model="assist", messages=messages, user=session_id)
    assert resp.model_extra["assist"]["session_id"] == session_id
    stored = httpx.get(f"{base}/v1/sessions/{session_id}", headers=bearer(idp.token("carol")), timeout=10)
    assert stored.status_code == 200
    bad = openai.OpenAI(base_url=base + "/v1", api_key=idp.token("carol", ttl_s=-60), max_retries=0)
    with pytest.raises(openai.AuthenticationError) as err:
        bad.models.list()
    assert err.value.body["type"] == "authentication_error"
    assert "token expired" in err.value.body["message"]


def test_mcp_client_with_a_bearer_token(base, idp):
    async def tools(token: str) -> set[str]:
        async with (
            create_mcp_http_client(headers=bearer(token)) as http,
            Client(streamable_http_client(base + "/mcp", http_client=http), mode="legacy") as mcp,
        ):
            found = await mcp.call_tool("search_docs", {"query": "where is the index stored", "k": 1})
            assert not found.is_error
            return {t.name for t in (await mcp.list_tools()).tools}

    assert "search_docs" in anyio.run(tools, idp.token("dave"))
    refused = httpx.post(
        base + "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers=bearer(idp.token("dave", aud="another-app")) | {"accept": "application/json, text/event-stream"},
        timeout=10,
    )
    assert refused.status_code == 401
    assert "audience" in refused.json()["detail"]


def test_the_keys_are_fetched_once_not_per_request(base, idp, session_id):
    def models() -> int:
        return httpx.get(f"{base}/v1/models", headers=bearer(idp.token("erin")), timeout=10).status_code

    assert models() == 200
    before = idp.fetches
    assert [models() for _ in range(3)] == [200, 200, 200]
    assert idp.fetches == before  # the key set is cached: verification is local after the first fetch


def test_settings_need_all_three_or_none():
    env = {"JWT_JWKS_URL": "https://idp.example/jwks.json", "JWT_ISSUER": ISSUER, "JWT_AUDIENCE": AUDIENCE}
    assert Settings.from_env(env).jwt.audience == AUDIENCE
    with pytest.raises(SettingsError, match="JWT_AUDIENCE"):
        Settings.from_env({k: v for k, v in env.items() if k != "JWT_AUDIENCE"})
    assert Settings.from_env({}).jwt.jwks_url is None


def test_the_local_stack_keeps_the_jwt_settings():
    """`assist local up` starts from Settings.from_env: with JWT_* set, its app verifies tokens (as above,
    local mode and all) instead of trusting X-Assist-User."""
    from assist_dev.local.stack import local_settings

    env = {"JWT_JWKS_URL": "http://127.0.0.1:1/jwks.json", "JWT_ISSUER": ISSUER, "JWT_AUDIENCE": AUDIENCE}
    s = local_settings(Settings.from_env(env), "http://127.0.0.1:2", None)
    assert s.api.local_mode
    assert (s.jwt.jwks_url, s.jwt.issuer, s.jwt.audience) == tuple(env.values())
