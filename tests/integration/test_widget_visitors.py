"""An attacker with only a public page, against the keys and what visitors see (ADR 0093), through the real parts:
the stream function's template environment with a weak signing key (the app must not start), tokens forged with
another key or another key id, a denied visitor, a token of the previous key after a Secrets Manager rotation,
and a visitor's `done` event read through the real stream route (no model names, token counts or verdict
signals; the operator keeps the whole trace). Each ends with a row of the attacker's table."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from assist.aws.clients import client
from assist.ollama_client import forget_facts
from assist.settings import Settings
from assist.widget.tokens import TYP, key_id
from assist_dev.rehearsal.template import Stack, expand
from tests.integration.conftest import served
from tests.integration.test_widget_api import SITE, new_key, stream, visitor
from tests.support.attacks import record
from tests.support.folder_urls import in_folder
from tests.support.widget_table import own_widget_table

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
PARAMETERS = {"OllamaHost": "https://ollama.internal", "JwtIssuer": "https://i", "JwtAudience": "a"}
MODEL = "main-model:1b"


def stream_function_environment() -> dict[str, str]:
    cfn = expand(parameters=PARAMETERS)
    functions = Stack(cfn, "attack", PARAMETERS, secrets=lambda ref: "secret").functions()
    return functions["AnswerStreamFunction"].environment


def test_a_weak_signing_key_in_the_stream_functions_environment_stops_the_app_from_starting():
    env = stream_function_environment()
    assert env["WIDGET_TOKEN_KEY_SECRET"]  # the template's own: a key read at run time
    strong = secrets.token_urlsafe(32)
    assert Settings.from_env({**env, "WIDGET_TOKEN_KEY": strong}).widget.token_key  # the key is the only fault
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "HF_HUB_OFFLINE")}
    python_path = os.pathsep.join([str(ROOT / "layers/common/python"), str(ROOT / "tooling"), str(ROOT)])
    run = subprocess.run(
        # the image's `http` command (infra/entry.sh), as the Lambda Web Adapter starts it
        [sys.executable, "-m", "uvicorn", "functions.answer.app:app", "--port", "1", "--no-proxy-headers"],
        env={**base, **env, "WIDGET_TOKEN_KEY": "abcde", "PYTHONPATH": python_path},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode != 0
    assert "WIDGET_TOKEN_KEY is 5 bytes" in run.stderr, run.stderr[-2000:]
    assert "at least 32" in run.stderr
    record(
        "a 5-byte WIDGET_TOKEN_KEY in the stream function's template environment",
        "signing keys of 32 bytes at least",
        "the app did not start: the error names WIDGET_TOKEN_KEY",
    )


@pytest.fixture(scope="module")
def settings(docs_index: Settings) -> Settings:
    return own_widget_table(docs_index, "visitors").with_(widget={"key_cache_s": 1.0, "token_ttl_s": 600})


@pytest.fixture(scope="module")
def base(settings: Settings):
    with served(settings) as url:
        yield url


def every_event(response: httpx.Response) -> dict[str, Any]:
    """Each event's name and its last payload, whatever line ends the server wrote."""
    out: dict[str, Any] = {}
    name = None
    for line in response.text.splitlines():
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: ") and name:
            out[name] = json.loads(line.removeprefix("data: "))
    return out


def forged(claims: dict[str, Any], key: str, kid: str) -> str:
    return jwt.encode(claims, key, algorithm="HS256", headers={"typ": TYP, "kid": kid})


def test_a_token_forged_with_another_key_or_key_id_is_refused(base):
    v = visitor(base, new_key(base))
    assert stream(base, v).status_code == 200
    claims = jwt.decode(v["token"], options={"verify_signature": False})
    kid = jwt.get_unverified_header(v["token"])["kid"]
    guessed = "x" * 48
    for token, why in [
        (forged(claims, guessed, kid), "our key id, another key"),
        (forged(claims, guessed, key_id(guessed)), "another key and its own id"),
        (jwt.encode(claims, guessed, algorithm="HS256", headers={"typ": TYP}), "no key id"),
    ]:
        r = stream(base, {**v, "token": token})
        assert r.status_code == 401, (why, r.text)
        assert "invalid_token" in r.headers["www-authenticate"]
    record("a visitor token signed with a guessed key (our kid, its own kid, none)", "kid and HS256", "401 each")


def test_a_denied_visitor_is_refused_within_the_cache_interval_and_others_are_not(base):
    key = new_key(base)
    denied, other = visitor(base, key), visitor(base, key)
    assert stream(base, denied).status_code == 200
    r = httpx.post(base + "/v1/admin/denied-visitors", json={"visitor": denied["visitor"]}, timeout=10)
    assert r.status_code == 201, r.text
    assert httpx.post(base + "/v1/admin/denied-visitors", json={"visitor": "v123"}).status_code == 400
    time.sleep(1.1)  # WIDGET_KEY_CACHE_S
    refused = stream(base, denied)
    assert refused.status_code == 403, refused.text
    assert "denied" in refused.json()["detail"]
    renewed = httpx.post(  # nor can it renew its token into a fresh one
        base + f"/v1/widget/session?key={key}",
        json={"key": key},
        headers={"origin": SITE, "authorization": f"Bearer {denied['token']}"},
        timeout=10,
    )
    assert renewed.status_code == 403
    assert stream(base, other).status_code == 200
    record(
        "a visitor id denied by the operator",
        "assist keys deny-visitor",
        "403 on its stream and its token renewal; another visitor of the key still answered",
    )


def test_the_previous_key_verifies_for_one_token_life_after_a_rotation_and_no_longer(docs_index):
    sm = client("secretsmanager", docs_index)
    name = f"widget-token-key-{uuid.uuid4().hex[:8]}"
    old, new = secrets.token_urlsafe(48), secrets.token_urlsafe(48)
    sm.create_secret(Name=name, SecretString=old)
    ttl = 4
    s = own_widget_table(docs_index, "rotation").with_(
        widget={"token_key_secret": name, "token_key_cache_s": 1.0, "token_ttl_s": ttl}
    )

    def signed_now_with_the_old_key(token: str) -> str:
        claims = {**jwt.decode(token, options={"verify_signature": False}), "iat": int(time.time())}
        return forged({**claims, "exp": claims["iat"] + ttl}, old, key_id(old))

    with served(s) as url:
        key = new_key(url)
        before = visitor(url, key)
        sm.put_secret_value(SecretId=name, SecretString=new)  # the rotation
        time.sleep(1.1)  # WIDGET_TOKEN_KEY_CACHE_S: the warm process reads it again
        after = visitor(url, key)
        assert jwt.get_unverified_header(after["token"])["kid"] == key_id(new)
        assert stream(url, before).status_code == 200  # signed before the rotation: still accepted
        # signed after it by a process that has not read the rotated secret yet: accepted too (ADR 0119)
        assert stream(url, {**before, "token": signed_now_with_the_old_key(before["token"])}).status_code == 200
        time.sleep(max(0.0, before["expires_in"] - 1) + 2.5)  # one token life after the rotation, and more
        late = stream(url, before)
        assert late.status_code == 401, late.text
        too_late = stream(url, {**before, "token": signed_now_with_the_old_key(before["token"])})
        assert too_late.status_code == 401, too_late.text  # the old key signing a token life after: not
        assert stream(url, visitor(url, key)).status_code == 200
    record(
        "a token of the previous key after a rotation of the secret",
        "kid; the previous key for one token life after the rotation (ADR 0119)",
        "accepted within its life, and when a process signed it after the rotation; refused a token life later",
    )


def test_a_visitors_uncertain_answer_keeps_the_passages_found_as_near_misses(base):
    r = stream(base, visitor(base, new_key(base)), message="How do I bake sourdough bread?")
    assert r.status_code == 200, r.text
    seen = every_event(r)
    route, done = seen["route"], seen["done"]
    assert (done["uncertain"], route["uncertain"]) == (True, True)
    assert done["sources"], "a wrong verdict must not cost the visitor the passages (ADR 0102)"
    for s in route["sources"]:  # what a visitor sees (ADR 0093) keeps the mark, the page and the passage
        assert (s["near_miss"], in_folder(s["url"]), bool(s["passage"])) == (True, True, True)
    assert [(s["id"], s["near_miss"]) for s in done["sources"]] == [(s["id"], True) for s in route["sources"]]


@pytest.fixture
def model_base(settings, ollama):
    s = settings.with_(ollama={"host": ollama.url, "host_explicit": True, "model_name": MODEL})
    with served(s) as url:
        yield url


def test_a_visitors_events_carry_the_answer_but_not_the_traces_internals(model_base, ollama):
    ollama.reply("The index lives in LanceDB [1].", model=MODEL)
    forget_facts()
    v = visitor(model_base, new_key(model_base))
    r = stream(model_base, v)
    assert r.status_code == 200, r.text
    seen = every_event(r)
    done, route = seen["done"], seen["route"]
    assert done["answer"] == "The index lives in LanceDB [1]."
    assert done["sources"]
    assert route["sources"][0]["passage"]
    assert (done["route"]["type"], done["degraded"], done["uncertain"]) == ("RETRIEVAL", [], False)
    assert done["trace"] == {"stages": [{"name": "generate", "answered_by": "main"}]}  # a slot, not a model
    for name, payload in seen.items():
        text = json.dumps(payload)
        assert MODEL not in text, name  # no model names
        for internal in ("usage", "prompt_tokens", "num_ctx", "verdict", "similarity", "retrieval_query", "history"):
            assert f'"{internal}"' not in text, (name, internal)
    # the operator's caller on the same route keeps the whole trace
    body = {"session_id": f"op-{uuid.uuid4().hex[:8]}", "message": "Where is the index stored?"}
    operator = httpx.post(model_base + "/v1/ask/stream", json=body, headers={"x-assist-user": "ops"}, timeout=60)
    own = every_event(operator)
    assert own["done"]["route"]["model"] == MODEL
    assert own["done"]["usage"]
    assert any(s["name"] == "retrieve" for s in own["done"]["trace"]["stages"])
    record(
        "reading the trace from a visitor's stream",
        "visitor events: route, sources, degraded, uncertain",
        "no model name, token count, prompt size or verdict signal in any event",
    )


@pytest.mark.parametrize("backend", ["dynamodb", "file"])
def test_a_visitors_turn_is_marked_with_its_site_key_in_storage_and_export_and_left_out_of_training(
    docs_index, tmp_path, backend
):
    from assist.export.labels import LabelExporter
    from assist.export.sink import LocalSink
    from assist.offline.classify.sources import read_sources
    from assist.sessions.backends import open_store
    from assist_dev.local.resources import ensure_resources

    tag = uuid.uuid4().hex[:8]
    if backend == "file":
        s = own_widget_table(docs_index, "marked").with_(
            sessions={"store": "file", "store_file": str(tmp_path / "s.sqlite3")}
        )
    else:
        s = own_widget_table(docs_index, "marked").with_(
            sessions={"table": f"s-anon-{tag}", "intent_history_table": f"h-anon-{tag}"}
        )
        ensure_resources(s, client("dynamodb", s), client("s3", s))
    s = s.with_(export={"settle_s": 0.0})
    with served(s) as url:
        key = new_key(url)
        v = visitor(url, key)
        assert stream(url, v).status_code == 200
        r = httpx.post(
            url + "/v1/ask",
            # declared: not the embedding layer's own guess, which training leaves out anyway
            json={"session_id": f"user-{tag}", "message": "Where is the index stored?", "query_type": "RETRIEVAL"},
            headers={"x-assist-user": "alice"},
            timeout=60,
        )
        assert r.status_code == 200, r.text
    store = open_store(s, client("dynamodb", s))
    visitor_session = f"{v['visitor']}.chat"
    assert store.item(visitor_session, 1)["site_key"] == key  # the sessions item
    assert [i.get("site_key") for i in store.intents(visitor_session)] == [key]  # the intent history
    assert store.item(f"user-{tag}", 1).get("site_key") is None
    sink = LocalSink(tmp_path / "labels")
    LabelExporter(s, store, sink).run(force=True)
    records = [json.loads(ln) for name in sink.names() for ln in sink.read(name).decode().splitlines()]
    assert sorted(r.get("site_key", "-") for r in records) == sorted([key, "-"])
    default, info = read_sources([str(tmp_path / "labels")])
    assert [e.text for e in default] == ["Where is the index stored?"]  # the user's turn only
    assert info[0]["skipped"] == {"visitor": 1}
    _, asked = read_sources([str(tmp_path / "labels")], visitors=True)
    # asked for, the visitor's turn is judged as any other (here the embedding layer's own guess: left out as such)
    assert asked[0]["skipped"] == {"self_labeled": 1}
    record(
        f"crafted questions into the router's training set ({backend} store)",
        "visitor turns marked by site key; training without them by default",
        "marked in storage and export; skipped: visitor 1 unless --include-visitors",
    )
