"""The local DynamoDB emulator's fixes (`assist_dev.local.emulator`) keep DynamoDB's semantics: a cancelled
transaction changes nothing, a Query reads one partition, and routing computed once still sends each
service's requests to its own backend."""

from __future__ import annotations

import pytest

from assist.aws.clients import client
from assist.settings import Settings


def _key(session_id: str, turn: int) -> dict:
    return {"session_id": {"S": session_id}, "turn": {"N": str(turn)}}


def _get(db, table: str, session_id: str, turn: int) -> dict | None:
    return db.get_item(TableName=table, Key=_key(session_id, turn), ConsistentRead=True).get("Item")


def test_a_cancelled_transaction_rolls_back_updates_puts_and_deletes(base_settings: Settings, session_id: str):
    db = client("dynamodb", base_settings)
    sessions, history = base_settings.sessions.table, base_settings.sessions.intent_history_table
    db.put_item(TableName=sessions, Item={**_key(session_id, 0), "turns": {"N": "1"}})
    db.put_item(TableName=sessions, Item={**_key(session_id, 1), "message": {"S": "kept"}})
    db.put_item(TableName=history, Item={**_key(session_id, 1), "topic": {"S": "taken"}})
    items = [
        {
            "Update": {
                "TableName": sessions,
                "Key": _key(session_id, 0),
                "UpdateExpression": "ADD turns :one",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            }
        },
        {"Delete": {"TableName": sessions, "Key": _key(session_id, 1)}},
        {"Put": {"TableName": sessions, "Item": {**_key(session_id, 2), "message": {"S": "new"}}}},
        {  # fails: the key is taken, so everything above must be undone
            "Put": {
                "TableName": history,
                "Item": {**_key(session_id, 1), "topic": {"S": "other"}},
                "ConditionExpression": "attribute_not_exists(session_id)",
            }
        },
    ]
    with pytest.raises(db.exceptions.TransactionCanceledException):
        db.transact_write_items(TransactItems=items)
    assert _get(db, sessions, session_id, 0)["turns"] == {"N": "1"}
    assert _get(db, sessions, session_id, 1)["message"] == {"S": "kept"}
    assert _get(db, sessions, session_id, 2) is None
    assert _get(db, history, session_id, 1)["topic"] == {"S": "taken"}

    items[-1]["Put"]["Item"] = {**_key(session_id, 2), "topic": {"S": "free"}}  # now it can succeed
    db.transact_write_items(TransactItems=items)
    assert _get(db, sessions, session_id, 0)["turns"] == {"N": "2"}
    assert _get(db, sessions, session_id, 1) is None
    assert _get(db, sessions, session_id, 2)["message"] == {"S": "new"}


def test_a_base_table_query_reads_its_partition_with_dynamodb_semantics(base_settings: Settings, session_id: str):
    db = client("dynamodb", base_settings)
    table = base_settings.sessions.table
    for sid in (session_id, session_id + "-other"):
        for turn in range(4):
            db.put_item(TableName=table, Item={**_key(sid, turn), "message": {"S": f"{sid}/{turn}"}})

    def query(**kw) -> list[str]:
        items = db.query(
            TableName=table,
            KeyConditionExpression="session_id = :s AND turn > :t",
            ExpressionAttributeValues={":s": {"S": session_id}, ":t": {"N": "0"}},
            **kw,
        )["Items"]
        return [i["message"]["S"] for i in items]

    assert query() == [f"{session_id}/{t}" for t in (1, 2, 3)]
    assert query(ScanIndexForward=False, Limit=2) == [f"{session_id}/{t}" for t in (3, 2)]
    missing = db.query(
        TableName=table,
        KeyConditionExpression="session_id = :s",
        ExpressionAttributeValues={":s": {"S": session_id + "-none"}},
    )
    assert missing["Items"] == []


def test_each_service_still_reaches_its_own_backend(base_settings: Settings):
    """Routing is computed once per host: S3, DynamoDB and Step Functions calls, interleaved, each get
    their own service's answer (a cache keyed wrongly would send them all to the first one)."""
    s3, db, sfn = (client(name, base_settings) for name in ("s3", "dynamodb", "stepfunctions"))
    for _ in range(2):
        assert base_settings.aws.bucket in {b["Name"] for b in s3.list_buckets()["Buckets"]}
        assert base_settings.sessions.table in db.list_tables()["TableNames"]
        assert isinstance(sfn.list_state_machines()["stateMachines"], list)
