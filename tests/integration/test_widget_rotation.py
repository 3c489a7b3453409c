"""A key rotation nobody notices (ADR 0119): two answer processes as deployed (`uvicorn functions.answer.app:app`,
each its own process) on one widget table and one token-key secret on the moto server, one reading the secret
again every 3 s and one every 300 s. The secret is rotated while a visitor asks every second, alternately at
each, renewing its token now at one, now at the other: not one request is refused."""

from __future__ import annotations

import contextlib
import secrets
import time
import uuid

import httpx
import jwt
import pytest

from assist.aws.clients import client
from assist.settings import Settings
from assist.widget import keys
from assist.widget.store.backends import open_widget_store
from assist.widget.tokens import key_id
from assist_dev.bench.containers import answer_containers, container_env
from assist_dev.local.resources import ensure_resources
from tests.support.attacks import record

pytestmark = pytest.mark.integration
SITE = "https://docs.example.com"


def test_a_rotation_between_two_processes_with_different_key_caches_refuses_no_visitor(docs_index: Settings):
    suffix = f"-rotation-{uuid.uuid4().hex[:8]}"
    aws = docs_index.aws
    env = container_env(
        INDEX_URI=docs_index.index.uri,
        OLLAMA_HOST="http://127.0.0.1:9",  # no model: answers are extractive
        SESSION_STORE="dynamodb",
        AWS_ENDPOINT_URL=str(aws.endpoint_url),
        AWS_REGION=aws.region,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",  # the emulator's
        SESSIONS_TABLE="assist-sessions" + suffix,
        INTENT_HISTORY_TABLE="assist-intent-history" + suffix,
        IDEMPOTENCY_TABLE="assist-idempotency" + suffix,
        WIDGET_TABLE="assist-widget" + suffix,
        WIDGET_TOKEN_KEY_SECRET="token-key" + suffix,
    )
    s = Settings.from_env(env).with_(aws=aws)
    ensure_resources(s, client("dynamodb", s), client("s3", s))
    sm = client("secretsmanager", s)
    old, new = secrets.token_urlsafe(48), secrets.token_urlsafe(48)
    sm.create_secret(Name=s.widget.token_key_secret, SecretString=old)
    limits = keys.Limits(visitor_questions=1000, ip_requests=1000, new_visitors=100)
    key = keys.create(open_widget_store(s), keys.NewKey(origins=[SITE], name="rotation", limits=limits)).key

    with contextlib.ExitStack() as stack:
        quick, slow = (
            stack.enter_context(answer_containers({**env, "WIDGET_TOKEN_KEY_CACHE_S": cache}, 1))[0].base
            for cache in ("3", "300")
        )
        replies: list[tuple[str, str, int]] = []
        signed: set[str] = set()

        def renew(base: str, token: str | None) -> str:
            auth = {"authorization": f"Bearer {token}"} if token else {}
            r = httpx.post(
                f"{base}/v1/widget/session?key={key}", json={"key": key}, headers={"origin": SITE, **auth}, timeout=30
            )
            replies.append((base, "token", r.status_code))
            fresh = r.json()["token"] if r.status_code == 200 else token
            signed.add(jwt.get_unverified_header(fresh)["kid"])
            return fresh

        token = renew(quick, None)
        visitor = jwt.decode(token, options={"verify_signature": False})["sub"]
        for i in range(16):
            base = (quick, slow)[i % 2]
            if i == 4:
                sm.put_secret_value(SecretId=s.widget.token_key_secret, SecretString=new)  # the rotation
            if i % 3 == 2:  # renewed now at one process, now at the other
                token = renew((slow, quick)[i % 2], token)
            r = httpx.post(
                f"{base}/v1/ask/stream?key={key}",
                json={"session_id": f"{visitor}.chat", "message": f"Where is the index stored? ({i})"},
                headers={"authorization": f"Bearer {token}", "origin": SITE},
                timeout=60,
            )
            replies.append((base, "question", r.status_code))
            time.sleep(1)
    refused = [r for r in replies if r[2] != 200]
    assert refused == [], refused
    # both keys signed tokens the other process verified: the rotation happened across the two
    assert signed == {key_id(old), key_id(new)}
    assert len([r for r in replies if r[1] == "question"]) == 16
    record(
        "a token-key rotation between two processes with key caches of 3 s and 300 s, a visitor asking every second "
        "at each (tests/integration/test_widget_rotation.py)",
        "either key verifies what it signed up to one token life after the rotation; an unknown key id is read "
        "(ADR 0119)",
        f"16 questions and {len(replies) - 16} token calls, 0 refused; the widget drops a token on a 401 and gets a "
        "new one once (Chromium)",
    )
