"""The front door (ADR 0066): `/insights` only for tokens with the admin scope (verified against the loopback
identity provider), the state machine's tasks absent from the public HTTP API, and the Ollama bearer token
reaching the model host (the wire-compatible test server, through the real `ollama` client)."""

from __future__ import annotations

import httpx
import pytest

from assist.api.app import create_app
from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.contracts import AskRequest
from assist.settings import Settings
from assist_dev.doubles.jwks import AUDIENCE, ISSUER, IdentityProvider
from assist_dev.rehearsal.template import Stack, expand
from tests.support.http import serve

pytestmark = pytest.mark.integration
PARAMETERS = {"OllamaHost": "https://ollama.internal", "JwtIssuer": "https://i", "JwtAudience": "a"}


@pytest.fixture(scope="module")
def idp():
    with IdentityProvider() as provider:
        yield provider


@pytest.fixture(scope="module")
def base(docs_index: Settings, idp: IdentityProvider):
    s = docs_index.with_(
        jwt={"jwks_url": idp.url, "issuer": ISSUER, "audience": AUDIENCE},
        insights={"scope": "support/admin"},
        sessions={"table": "s-front-door", "intent_history_table": "h-front-door"},
    )
    from assist_dev.local.resources import ensure_resources

    ensure_resources(s, client("dynamodb", s), client("s3", s))
    with serve(create_app(build_engine(s, client("dynamodb", s)))) as url:
        yield url


def insights(base: str, token: str) -> httpx.Response:
    return httpx.get(base + "/insights?days=1", headers={"Authorization": f"Bearer {token}"}, timeout=120)


@pytest.mark.parametrize(
    "claims",
    [{}, {"scope": "openid profile"}, {"scope": "assist/admin"}, {"scp": ["support/read"]}],
    ids=["no-scope", "other-scopes", "default-name-not-configured", "scp-list-without-it"],
)
def test_insights_refuses_a_valid_token_without_the_configured_admin_scope(base, idp, claims):
    r = insights(base, idp.token("mallory", **claims))
    assert r.status_code == 403, r.text
    assert "'support/admin'" in r.json()["detail"]


@pytest.mark.parametrize("claims", [{"scope": "openid support/admin"}, {"scp": ["support/read", "support/admin"]}])
def test_insights_serves_a_token_with_the_admin_scope(base, idp, claims):
    r = insights(base, idp.token("admin", **claims))
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/html")


def test_insights_without_a_token_is_still_a_401(base):
    assert httpx.get(base + "/insights", timeout=10).status_code == 401


def test_internal_routes_are_not_on_the_public_http_api_and_insights_needs_its_scope():
    cfn = expand(parameters=PARAMETERS)
    paths = cfn["Resources"]["HttpApi"]["Properties"]["Body"]["paths"]
    assert "/v1/ask" in paths
    assert "/v1/classify" not in paths
    assert "/v1/retrieve" not in paths
    assert not [k for k, v in cfn["Resources"].items() if v["Type"] == "AWS::ApiGatewayV2::Route"]
    # no permission lets API Gateway invoke the internal functions at all
    for logical, res in cfn["Resources"].items():
        if res["Type"] == "AWS::Lambda::Permission" and res["Properties"]["Principal"] == "apigateway.amazonaws.com":
            assert res["Properties"]["FunctionName"] == {"Ref": "AskFunction"}, logical
    assert paths["/insights"]["get"]["security"] == [{"JwtAuthorizer": [{"Ref": "InsightsScope"}]}]
    # the state machine still invokes them, as it does today
    stack = Stack(cfn, "t", {}, secrets=lambda ref: "s")
    definition, role = stack.state_machine("AskStateMachine")
    for fn in ("ClassifyFunction", "RetrieveFunction", "AnswerFunction"):
        assert stack.get_att(fn, "Arn") in definition
    invokable = str(stack.roles()[role].policies)
    assert "ClassifyFunction" in invokable
    assert "RetrieveFunction" in invokable


def test_the_ollama_bearer_token_reaches_the_model_host(docs_index, ollama, session_id, tmp_path):
    s = docs_index.with_(
        ollama={
            "host": ollama.url,
            "host_explicit": True,
            "model_name": "main-model:1b",
            "model_name_conversational": "light-model:0.5b",
            "api_key": "sk-model-host",
        },
        sessions={"store": "file", "store_file": str(tmp_path / "sessions.sqlite3")},
    )
    answer = build_engine(s).ask(AskRequest(session_id=session_id, message="How is the engine configured?"))
    assert answer.degraded == []
    assert ollama.calls("/api/chat")
    assert {r.authorization for r in ollama.requests} == {"Bearer sk-model-host"}


def test_https_model_hosts_and_the_key_are_read_from_the_environment():
    s = Settings.from_env({"OLLAMA_HOST": "https://ollama.internal:443", "OLLAMA_API_KEY": "sk-1"})
    from assist.ollama_client import build_client

    c = build_client(s.ollama.host, 1, 1, api_key=s.ollama.api_key)
    assert str(c._client.base_url).startswith("https://ollama.internal")
    assert c._client.headers["authorization"] == "Bearer sk-1"
    assert "sk-1" not in repr(s)
