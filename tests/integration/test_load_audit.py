"""The load bench's audit: it must find what is lost or duplicated, not just report zeros."""

from __future__ import annotations

import pytest

from assist.api.app import create_app
from assist.ask.build import build_engine
from assist.aws.clients import client
from assist_dev.bench.load import _audit, run
from tests.support.http import serve

pytestmark = pytest.mark.integration


def test_small_load_run_is_clean_and_the_audit_sees_tampering(docs_index):
    engine = build_engine(docs_index, client("dynamodb", docs_index))
    with serve(create_app(engine)) as base:
        result = run(base, sessions=3, turns=4, settings=docs_index)
        assert (result["requests"], result["errors"], result["lost"], result["duplicated"]) == (12, 0, 0, 0)
        assert result["p50_ms"] <= result["p95_ms"] <= result["p99_ms"]

        ddb = client("dynamodb", docs_index)
        sid = next(iter(_sessions(ddb, docs_index.sessions.table)))
        items = ddb.query(
            TableName=docs_index.sessions.table,
            KeyConditionExpression="session_id = :s AND turn > :z",
            ExpressionAttributeValues={":s": {"S": sid}, ":z": {"N": "0"}},
        )["Items"]
        copy = {**items[0], "turn": {"N": "99"}}
        ddb.put_item(TableName=docs_index.sessions.table, Item=copy)  # a duplicated message
        ddb.delete_item(TableName=docs_index.sessions.table, Key={"session_id": {"S": sid}, "turn": items[1]["turn"]})
        answered = {sid: [i["message"]["S"] for i in items]}
        lost, duplicated = _audit(base, answered)
    assert duplicated == 1
    assert lost == 2  # the deleted message, and turn 99 which has no intent entry


def _sessions(ddb, table):
    items = ddb.scan(
        TableName=table, FilterExpression="begins_with(session_id, :p)", ExpressionAttributeValues={":p": {"S": "load"}}
    )["Items"]
    return {i["session_id"]["S"] for i in items}
