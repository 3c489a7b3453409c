"""The session store's guarantees, on both backends (ADR 0044): DynamoDB on the moto server and
the embedded SQLite file. Same tests, same expectations."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from assist.aws.clients import client
from assist.contracts import Feedback, IntentEntry, QueryType
from assist.sessions.backends import open_store
from assist.sessions.dynamodb import DynamoDBStore
from assist.sessions.sqlite import SQLiteStore
from assist.sessions.store import (
    SessionNotFound,
    Turn,
    TurnConflict,
    TurnNotFound,
)
from assist.tables.base import StoreUnavailable

pytestmark = pytest.mark.integration


@pytest.fixture(params=["dynamodb", "file"])
def store(request, base_settings, tmp_path):
    if request.param == "dynamodb":
        s = base_settings
        return DynamoDBStore(client("dynamodb", s), s.sessions.table, s.sessions.intent_history_table)
    return SQLiteStore(tmp_path / "sessions.sqlite3")


def turn(session_id: str, n: int, request_id: str, message: str = "hello", owner: str = "me") -> Turn:
    entry = IntentEntry(QueryType.RETRIEVAL, message)
    return Turn(session_id, n, request_id, message, f"answer to {message}", entry, owner)


def test_a_retried_write_of_the_same_turn_is_not_duplicated(store, session_id):
    n = store.begin_turn(session_id, "me")
    assert store.append_turn(turn(session_id, n, "req-1")) is True
    assert store.append_turn(turn(session_id, n, "req-1")) is False  # e.g. a Step Functions retry after the write
    with pytest.raises(TurnConflict):
        store.append_turn(turn(session_id, n, "req-2", "other"))
    turns, intents = store.transcript(session_id, "me")
    assert [(t.turn, t.message) for t in turns] == [(1, "hello")]
    assert [i.turn for i in intents] == [1]
    assert [(i.turn, i.request_id) for i in store.messages(session_id)] == [(1, "req-1")]
    assert [(i.turn, i.request_id) for i in store.intents(session_id)] == [(1, "req-1")]


def test_concurrent_turns_get_distinct_numbers_and_are_all_written_to_both_tables(store, session_id):
    def one(i: int) -> int:
        n = store.begin_turn(session_id, "me")
        store.append_turn(turn(session_id, n, f"req-{i}", f"question {i}"))
        return n

    with ThreadPoolExecutor(8) as pool:
        numbers = list(pool.map(one, range(16)))
    assert sorted(numbers) == list(range(1, 17))
    turns, intents = store.transcript(session_id, "me")
    assert [t.turn for t in turns] == list(range(1, 17))  # oldest first
    assert sorted(t.message for t in turns) == sorted(f"question {i}" for i in range(16))
    assert [i.turn for i in intents] == list(range(1, 17))


def test_another_owners_session_is_not_found_on_every_read_and_write(store, session_id):
    n = store.begin_turn(session_id, "alice")
    store.append_turn(turn(session_id, n, "req-1", owner="alice"))
    for call in (
        lambda: store.begin_turn(session_id, "mallory"),
        lambda: store.recent(session_id, "mallory"),
        lambda: store.transcript(session_id, "mallory"),
    ):
        with pytest.raises(SessionNotFound, match="not found"):
            call()
    with pytest.raises(SessionNotFound):
        store.transcript("never-started-" + session_id, "alice")  # a missing session looks the same
    assert store.begin_turn(session_id, "alice") == 2  # the refused calls took no number


def test_feedback_on_a_turn_replaces_the_earlier_one_for_its_owner_only(store, session_id):
    n = store.begin_turn(session_id, "me")
    store.append_turn(turn(session_id, n, "req-1"))
    down = Feedback(rating="down", type=QueryType.CODE_GENERATION, at="2026-11-23T10:00:00.000+00:00")
    up = Feedback(rating="up", at="2026-11-23T10:05:00.000+00:00", type=None)
    store.set_feedback(session_id, "me", n, down)
    store.set_feedback(session_id, "me", n, up)
    turns, _ = store.transcript(session_id, "me")
    assert turns[0].feedback == up
    intents = store.intents(session_id)
    assert intents[0].feedback == up  # both items, whole: the later write replaced the earlier
    assert intents[0].export_key.startswith("2026-11-23T10:05")  # the next export carries it again
    with pytest.raises(SessionNotFound):
        store.set_feedback(session_id, "someone-else", n, down)
    with pytest.raises(TurnNotFound):
        store.set_feedback(session_id, "me", n + 1, down)
    assert store.transcript(session_id, "me")[0][0].feedback.rating == "up"


def test_recent_is_the_last_turns_oldest_first_with_their_intent_entries(store, session_id):
    for i in range(5):
        store.append_turn(turn(session_id, store.begin_turn(session_id, "me"), f"r{i}", f"q{i}"))
    recent = store.recent(session_id, "me", limit=3)
    assert [r.message for r in recent] == ["q2", "q3", "q4"]
    assert {r.type for r in recent} == {QueryType.RETRIEVAL}
    assert store.recent("nothing-yet-" + session_id, "me") == []


def test_open_store_follows_the_setting(base_settings, tmp_path):
    path = str(tmp_path / "s.sqlite3")
    assert isinstance(open_store(base_settings.with_(sessions={"store": "file", "store_file": path})), SQLiteStore)
    assert isinstance(open_store(base_settings), DynamoDBStore)  # an endpoint is configured: auto means DynamoDB
    bare = base_settings.with_(
        aws={"endpoint_url": None, "emulator_access_key_id": None, "emulator_secret_access_key": None}
    )
    assert isinstance(open_store(bare.with_(sessions={"store_file": path})), SQLiteStore)


def test_an_unreachable_local_endpoint_says_to_start_the_stack(base_settings, session_id):
    dead = base_settings.with_(aws={"endpoint_url": "http://127.0.0.1:9"})
    store = DynamoDBStore(client("dynamodb", dead), dead.sessions.table, dead.sessions.intent_history_table)
    with pytest.raises(StoreUnavailable, match=r"is the local stack running\? Start it with `make run`") as err:
        store.recent(session_id, "me")
    assert not err.value.transient


def test_a_session_file_that_cannot_be_opened_says_which_and_what_to_do(tmp_path, session_id):
    (tmp_path / "blocked").mkdir()
    store = SQLiteStore(tmp_path / "blocked")  # a directory where the file should be
    with pytest.raises(StoreUnavailable, match="SESSION_STORE_FILE") as err:
        store.begin_turn(session_id, "me")
    assert str(tmp_path / "blocked") in str(err.value)
    assert not err.value.transient


WRITER = """
import sys
from assist.contracts import IntentEntry, QueryType
from assist.sessions.sqlite import SQLiteStore
from assist.sessions.items import Turn
store = SQLiteStore(sys.argv[1])
for i in range(int(sys.argv[3])):
    n = store.begin_turn("shared", "me")
    store.append_turn(Turn("shared", n, f"{sys.argv[2]}-{i}", "m", "a", IntentEntry(QueryType.RETRIEVAL, "m"), "me"))
"""


def test_the_file_store_keeps_its_guarantees_across_processes(tmp_path: Path):
    path = tmp_path / "sessions.sqlite3"
    procs = [
        subprocess.Popen([sys.executable, "-c", textwrap.dedent(WRITER), str(path), f"p{p}", "15"]) for p in range(3)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    store = SQLiteStore(path)
    turns, intents = store.transcript("shared", "me")
    assert [t.turn for t in turns] == list(range(1, 46))
    assert len({i.request_id for i in store.messages("shared", limit=100)}) == 45
    assert [i.turn for i in intents] == list(range(1, 46))


def test_the_sessions_bench_times_both_stores_side_by_side(base_settings):
    from assist_dev.bench.figures import render
    from assist_dev.bench.sessions import run
    from assist_dev.commands.bench import sessions_table

    result = run(base_settings, turns=3)
    for store in ("file", "dynamodb"):
        assert set(result[store]) == {"recent_p50_ms", "begin_turn_p50_ms", "append_turn_p50_ms"}
        assert all(v > 0 for v in result[store].values())
    r = result["ratio_file_to_dynamodb"]["append_turn_p50_ms"]
    assert r == pytest.approx(result["file"]["append_turn_p50_ms"] / result["dynamodb"]["append_turn_p50_ms"], abs=1e-3)
    assert [line.split()[0] for line in render(sessions_table(result)).splitlines()[1:4]] == [
        "recent",
        "begin_turn",
        "append_turn",
    ]
