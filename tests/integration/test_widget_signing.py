"""Where visitor tokens' keys come from (ADR 0093), with the real parts: a Secrets Manager secret on the moto
server rotated under a warm process (read again after WIDGET_TOKEN_KEY_CACHE_S, the previous version still
verifying), a weak secret refused naming it, and the key made once when nothing is configured kept out of the
widget table (a file only its owner reads beside the embedded store; a secret named after the DynamoDB table)."""

from __future__ import annotations

import secrets
import sqlite3
import stat
import time
import uuid

import pytest

from assist.aws.clients import client
from assist.settings import WeakKey
from assist.widget.signing import KEY_FILE_SUFFIX, SigningKeys
from assist.widget.store.backends import open_widget_store

pytestmark = pytest.mark.integration


class Clock:
    def __init__(self) -> None:
        self.now = 1_900_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_rotated_secret_reaches_a_warm_process_within_the_interval_and_the_old_key_still_verifies(base_settings):
    sm = client("secretsmanager", base_settings)
    name = f"token-key-{uuid.uuid4().hex[:8]}"
    old, new = secrets.token_urlsafe(48), secrets.token_urlsafe(48)
    sm.create_secret(Name=name, SecretString=old)
    clock = Clock()
    keys = SigningKeys(base_settings.with_(widget={"token_key_secret": name, "token_key_cache_s": 300}), clock)
    first = keys.ring()
    assert (first.current, first.previous) == (old, None)
    sm.put_secret_value(SecretId=name, SecretString=new)  # the rotation: AWSCURRENT new, AWSPREVIOUS old
    clock.now += 299
    assert keys.ring().current == old  # kept for the interval: no read per token
    clock.now += 1
    ring = keys.ring()
    assert (ring.current, ring.previous) == (new, old)
    # the rotation's time is the current version's creation, as Secrets Manager records it (moto: to the second)
    assert first.rotated_at <= ring.rotated_at <= time.time() + 1


def test_a_weak_secret_is_refused_naming_it(base_settings):
    sm = client("secretsmanager", base_settings)
    name = f"weak-{uuid.uuid4().hex[:8]}"
    sm.create_secret(Name=name, SecretString="abcde")
    keys = SigningKeys(base_settings.with_(widget={"token_key_secret": name}))
    with pytest.raises(WeakKey, match=f"WIDGET_TOKEN_KEY_SECRET={name} is 5 bytes"):
        keys.ring()
    sm.put_secret_value(SecretId=name, SecretString="secret" * 8)  # long enough, 5 distinct bytes
    with pytest.raises(WeakKey, match=f"WIDGET_TOKEN_KEY_SECRET={name} has 5 distinct bytes"):
        SigningKeys(base_settings.with_(widget={"token_key_secret": name})).ring()


def test_with_no_key_configured_the_embedded_store_keeps_its_key_in_a_private_file_not_in_its_table(
    base_settings, tmp_path
):
    s = base_settings.with_(sessions={"store": "file", "store_file": str(tmp_path / "s.sqlite3")})
    store = open_widget_store(s)
    store.denied("v" + "0" * 24)  # the table exists
    rings = [SigningKeys(s).ring() for _ in range(3)]  # three processes' first reads agree
    assert len({r.current for r in rings}) == 1
    assert len(rings[0].current) >= 32
    path = tmp_path / f"s.sqlite3{KEY_FILE_SUFFIX}"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    rows = sqlite3.connect(tmp_path / "s.sqlite3").execute("SELECT pk, sk, item FROM widget").fetchall()
    assert not [r for r in rows if rings[0].current in r[2] or r[0] == "secrets"]


def test_with_no_key_configured_dynamodb_processes_share_a_generated_secret_not_a_table_row(base_settings):
    s = base_settings.with_(widget={"table": base_settings.widget.table})
    one, two = SigningKeys(s).ring(), SigningKeys(s).ring()
    assert one.current == two.current
    assert len(one.current) >= 32
    stored = client("secretsmanager", s).get_secret_value(SecretId=f"{s.widget.table}/visitor-token-key")
    assert stored["SecretString"] == one.current
    items = client("dynamodb", s).scan(TableName=s.widget.table)["Items"]
    assert not [i for i in items if one.current in str(i)]
