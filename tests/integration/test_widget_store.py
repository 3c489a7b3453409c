"""The widget's table on both backends: the DynamoDB table of template.yaml on the moto server, and the embedded
store's file. Site keys, and counters that stay exact when many writers hit them at once (ADR 0089)."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from assist.aws.clients import client
from assist.widget.store.dynamodb import DynamoDBWidgetStore
from assist.widget.store.sqlite import SQLiteWidgetStore
from assist.widget.store.store import Limits, SiteKey, rate_step, window_step

pytestmark = pytest.mark.integration
NOW = 1_800_000_000_000  # ms


@pytest.fixture(params=["dynamodb", "file"])
def store(request, base_settings, tmp_path):
    if request.param == "file":
        return SQLiteWidgetStore(tmp_path / "sessions.sqlite3")
    return DynamoDBWidgetStore(client("dynamodb", base_settings), base_settings.widget.table)


def name() -> str:
    return f"test#{uuid.uuid4().hex}"


def test_a_key_is_stored_listed_and_revoked_once(store):
    key = SiteKey(key=f"pk_{uuid.uuid4().hex}", origins=["https://docs.example.com"], created_at="2026-01-01T00:00:00")
    key.limits = Limits(visitor_questions=5)
    store.put_key(key)
    assert store.get_key(key.key) == key
    assert store.get_key("pk_never") is None
    assert key.key in [k.key for k in store.all_keys()]
    revoked = store.revoke_key(key.key, "2026-01-02T00:00:00")
    assert revoked.revoked_at == "2026-01-02T00:00:00"
    assert not revoked.active
    assert store.revoke_key(key.key, "2026-01-03T00:00:00").revoked_at == "2026-01-02T00:00:00"  # the first stays
    assert store.get_key(key.key).limits.visitor_questions == 5


def test_a_window_allows_its_limit_then_says_when_to_retry_and_reopens(store):
    counter = name()
    taken = [store.window(counter, 3, 10, NOW + i) for i in range(5)]
    assert [t.allowed for t in taken] == [True, True, True, False, False]
    assert [t.count for t in taken[:3]] == [1, 2, 3]
    assert taken[3].retry_after_s == pytest.approx(10 - 0.003)
    assert taken[3].retry_after == 10
    assert store.count(counter, NOW + 5) == 3
    again = store.window(counter, 3, 10, NOW + 10_000)  # the window (first hit + 10 s) has ended
    assert (again.allowed, again.count) == (True, 1)
    assert store.count(counter, NOW + 10_001) == 1


@pytest.mark.parametrize("writers", [16])
def test_concurrent_hits_on_one_window_take_exactly_its_limit(store, writers):
    counter = name()
    with ThreadPoolExecutor(writers) as pool:
        taken = list(pool.map(lambda i: store.window(counter, 20, 600, NOW + i % 3), range(100)))
    allowed = [t for t in taken if t.allowed]
    assert len(allowed) == 20
    assert sorted(t.count for t in allowed) == list(range(1, 21))  # no count given twice
    assert all(t.retry_after >= 599 for t in taken if not t.allowed)
    assert store.count(counter, NOW + 3) == 20


def test_a_rate_allows_a_burst_then_the_steady_rate(store):
    counter = name()
    burst = [store.rate(counter, 2.0, 3, NOW) for _ in range(4)]  # 2 per second, 3 at once
    assert [t.allowed for t in burst] == [True, True, True, False]
    assert burst[3].retry_after_s == pytest.approx(0.5)  # the next slot opens one interval (500 ms) later
    assert store.rate(counter, 2.0, 3, NOW + 499).allowed is False
    assert store.rate(counter, 2.0, 3, NOW + 500).allowed is True
    assert store.rate(counter, 2.0, 3, NOW + 10_000).allowed is True  # idle: from now again


def test_concurrent_hits_on_one_rate_take_exactly_its_burst(store):
    counter = name()
    with ThreadPoolExecutor(16) as pool:
        taken = list(pool.map(lambda _: store.rate(counter, 1.0, 10, NOW), range(60)))
    assert sum(t.allowed for t in taken) == 10


def test_a_denied_visitor_stays_denied_from_its_first_denial(store):
    visitor = name()
    assert store.denied(visitor) is None
    assert store.deny_visitor(visitor, "2026-11-28T04:00:00+00:00") == "2026-11-28T04:00:00+00:00"
    assert store.deny_visitor(visitor, "2026-11-28T05:00:00+00:00") == "2026-11-28T04:00:00+00:00"
    assert store.denied(visitor) == "2026-11-28T04:00:00+00:00"
    assert store.denied(name()) is None


def test_the_steps_are_what_both_backends_do():
    assert window_step(0, None, NOW, 0, 5)[0].allowed is False  # a limit of 0 allows nothing
    taken, count, end = window_step(2, NOW + 1000, NOW, 2, 5)
    assert (taken.allowed, count, end, taken.retry_after_s) == (False, 2, NOW + 1000, 1.0)
    taken, tat = rate_step(NOW + 1000, NOW, 1.0, 2)  # one in flight, burst 2: allowed, TAT one more second on
    assert (taken.allowed, tat) == (True, NOW + 2000)
