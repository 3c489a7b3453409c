"""Label export through the real parts: turns asked through the engine (moto DynamoDB over HTTP),
exported incrementally to a local directory or the emulated S3, with crashes injected at the sink."""

from __future__ import annotations

import json
import time

import pytest

from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.contracts import AskRequest, QueryType
from assist.export.labels import LabelExporter
from assist.export.sink import LocalSink, S3Sink
from assist.sessions.backends import open_store
from assist.settings import Settings
from assist_dev.local.resources import ensure_resources

pytestmark = pytest.mark.integration
SECRET = "ACCT-SECRET-7731"


def tables(docs_index: Settings, request) -> Settings:
    """Fresh tables per test: the export counts every turn in them."""
    tag = request.node.name[-20:].replace("[", "-").replace("]", "")
    return docs_index.with_(
        sessions={"table": f"s-{tag}", "intent_history_table": f"h-{tag}"}, export={"settle_s": 0.0, "threshold": 500}
    )


@pytest.fixture
def env(docs_index: Settings, request):
    s = tables(docs_index, request)
    ensure_resources(s, client("dynamodb", s), client("s3", s))
    return s, build_engine(s, client("dynamodb", s))


@pytest.fixture(params=["dynamodb", "file"])
def stores(docs_index: Settings, request, tmp_path):
    """The engine writing to DynamoDB or to the embedded store, and `exporter(sink)` reading the same store."""
    if request.param == "dynamodb":
        s, engine = request.getfixturevalue("env")
        return engine, lambda sink: LabelExporter(s, open_store(s), sink)
    s = tables(docs_index, request).with_(sessions={"store": "file", "store_file": str(tmp_path / "s.sqlite3")})
    store = open_store(s)
    return build_engine(s), lambda sink: LabelExporter(s, store, sink)


def ask_many(engine, sessions: int, turns: int = 1, prefix: str = "s") -> int:
    for i in range(sessions):
        for t in range(turns):
            qtype = None if (i + t) % 10 else QueryType.CONVERSATIONAL  # mostly the platform prefix rule: cheap
            engine.ask(
                AskRequest(
                    session_id=f"{prefix}{i}",
                    query_type=qtype,
                    message=f"You are a direct and concise assistant. Usage {i}% mail me at u{i}@x.io",
                    extra_context=f"{SECRET} plan for {i}",
                )
            )
    # an export with no settle time covers keys strictly before its start, to the millisecond: a turn
    # written in the export's own millisecond waits for the next run (the embedded store is that fast)
    time.sleep(0.002)
    return sessions * turns


def lines(sink) -> list[dict]:
    return [json.loads(ln) for name in sink.names() for ln in sink.read(name).decode().splitlines()]


class Crash(Exception):
    pass


class CrashingSink(LocalSink):
    """Crashes after writing a part (before the watermark moves), or halfway through it."""

    def __init__(self, root, mode: str) -> None:
        super().__init__(root)
        self.mode = mode

    def write(self, name: str, data: bytes) -> str:
        if self.mode == "halfway":  # as a storage without atomic writes would leave it
            (self.root / name).parent.mkdir(parents=True, exist_ok=True)
            (self.root / name).write_bytes(data[: len(data) // 2])
            raise Crash("halfway")
        super().write(name, data)
        raise Crash("after write")


def test_incremental_export_of_600_sessions(stores, tmp_path):
    engine, exporter = stores
    asked = ask_many(engine, 600)
    sink = LocalSink(tmp_path / "labels")
    first = exporter(sink).run()
    assert first.exported
    assert (first.sessions, first.records) == (600, asked)
    recs = lines(sink)
    assert len(recs) == asked
    assert len({r["id"] for r in recs}) == asked
    assert all(n.startswith("date=") for n in sink.names())
    raw = b"".join(sink.read(n) for n in sink.names())
    assert SECRET.encode() not in raw, "extra_context never reaches an export"
    assert b"@x.io" not in raw
    assert b"<EMAIL>" in raw
    assert {r["type"] for r in recs} == {"PLATFORM", "CONVERSATIONAL"}
    assert all(r["session"] != "s1" and len(r["session"]) == 20 for r in recs)

    second = exporter(sink).run()
    assert (second.exported, second.records) == (False, 0)
    assert len(lines(sink)) == asked

    new = ask_many(engine, 5, turns=2, prefix="later")
    below = exporter(sink).run()
    assert (below.exported, below.sessions) == (False, 5), "5 new sessions are below the threshold"
    third = exporter(sink).run(force=True)
    assert third.records == new
    assert len(lines(sink)) == asked + new
    assert sorted({r["turn"] for r in lines(sink) if r["time"] > first.watermark}) == [1, 2]


@pytest.mark.parametrize("mode", ["after_write", "halfway"])
def test_a_crash_leaves_exactly_one_copy_after_the_next_run(stores, tmp_path, mode):
    engine, exporter = stores
    asked = ask_many(engine, 12, turns=2)
    with pytest.raises(Crash):
        exporter(CrashingSink(tmp_path / "labels", mode)).run(force=True)
    ask_many(engine, 3, prefix="during")  # turns that arrive between the crash and the re-run
    sink = LocalSink(tmp_path / "labels")
    rerun = exporter(sink).run()
    assert rerun.resumed
    assert rerun.records == asked
    recs = lines(sink)
    assert len(recs) == asked
    assert len({r["id"] for r in recs}) == asked
    rest = exporter(sink).run(force=True)
    assert rest.records == 3
    assert len({r["id"] for r in lines(sink)}) == len(lines(sink)) == asked + 3


def test_export_to_s3_and_embedding_labels_are_marked(env):
    s, engine = env
    ask_many(engine, 3)
    store_client = client("dynamodb", s)
    store_client.update_item(  # one turn decided by the embedding layer (the classifier's own guess)
        TableName=s.sessions.intent_history_table,
        Key={"session_id": {"S": "s1"}, "turn": {"N": "1"}},
        UpdateExpression="SET layer = :l",
        ExpressionAttributeValues={":l": {"S": "embedding"}},
    )
    sink = S3Sink(f"s3://{s.aws.bucket}/labels-{s.sessions.intent_history_table}", client("s3", s))
    result = LabelExporter(s, open_store(s, store_client), sink).run(force=True)
    assert result.files[0].startswith(f"s3://{s.aws.bucket}/labels-")
    recs = lines(sink)
    assert [r["self_labeled"] for r in sorted(recs, key=lambda r: r["message"])].count(True) == 1
    assert result.read_units > 0
