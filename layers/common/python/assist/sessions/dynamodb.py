"""The DynamoDB backend of the session store (`Store`, sessions/store.py): what deployments and the local
stack use.

A turn reads the session once (`recent`: the last turns of the sessions table, which also carry
the intent entries). A session's header item (turn 0) holds an atomic turn counter: `begin_turn`
takes the next number with one UpdateItem, so concurrent turns of one session never compete for a
number; only the write needs the number, so callers may take it while the model answers. The turn
is written to both tables in one transaction whose puts are conditional on the key being new and
carry the request id. A feedback write is one transaction conditional on the `feedback_version`
just read; a loser re-reads and replaces the earlier feedback whole. History is read by day through
the `by-export-day` index, a Query per page.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import msgspec

from assist.aws.capacity import batch_get_units, query_units
from assist.contracts import Feedback
from assist.logs import get_logger
from assist.sessions.items import ExportMark, FeedbackMark, Turn, now_iso, turn_items
from assist.sessions.keys import EXPORT_DAY, EXPORT_INDEX, EXPORT_KEY, HEADER_TURN, LAST_KEY, WATERMARK
from assist.sessions.store import (
    BUSY,
    ExportBusy,
    HistoryRecord,
    Page,
    SessionStore,
    StoredItem,
    TurnNotFound,
    TurnRecord,
    records,
)
from assist.tables.base import StoreUnavailable, guarded
from assist.tables.dynamodb import DynamoDBTable

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        QueryInputTypeDef,
        QueryOutputTypeDef,
        TransactWriteItemTypeDef,
    )

log = get_logger(__name__)
FEEDBACK_ATTEMPTS = 8


class DynamoDBStore(DynamoDBTable, SessionStore):
    """The sessions and intent-history tables of one deployment (or the local stack's moto)."""

    def __init__(self, client: DynamoDBClient, sessions_table: str, history_table: str, ttl_days: int = 30) -> None:
        # deferred, ADR 0104: boto3's DynamoDB types, 0.10 s, for a DynamoDB store only
        from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

        super().__init__(client, sessions_table)
        self._sessions = sessions_table
        self._history = history_table
        self._ttl_s = ttl_days * 86400
        self._ser = TypeSerializer()
        self._de = TypeDeserializer()
        self.read_units = 0.0

    # -- reads -------------------------------------------------------------------
    def item(self, session_id: str, turn: int) -> StoredItem | None:
        key = {"session_id": {"S": session_id}, "turn": {"N": str(turn)}}
        found = self._db.get_item(TableName=self._sessions, Key=key, ConsistentRead=True).get("Item")
        return msgspec.convert(self._plain(found), StoredItem, strict=False) if found else None

    @guarded
    def messages(self, session_id: str, limit: int = 20) -> list[TurnRecord]:
        resp = self._db.query(
            TableName=self._sessions,
            KeyConditionExpression="session_id = :s AND turn > :header",
            ExpressionAttributeValues={":s": {"S": session_id}, ":header": {"N": str(HEADER_TURN)}},
            ScanIndexForward=False,
            Limit=limit,
            ConsistentRead=True,
        )
        return records([self._plain(i) for i in reversed(resp.get("Items", []))], TurnRecord)

    def intents(self, session_id: str, limit: int = 200) -> list[HistoryRecord]:
        items = self._db.query(
            TableName=self._history,
            KeyConditionExpression="session_id = :s",
            ExpressionAttributeValues={":s": {"S": session_id}},
            Limit=limit,
            ConsistentRead=True,
        ).get("Items", [])
        return records([self._plain(i) for i in items], HistoryRecord)

    def history_pages(
        self, day: str, after: str = "", before: str = LAST_KEY, newest_first: bool = False
    ) -> Iterator[Page]:
        kwargs: QueryInputTypeDef = {
            "TableName": self._history,
            "IndexName": EXPORT_INDEX,
            "KeyConditionExpression": "#d = :d",
            "ExpressionAttributeNames": {"#d": EXPORT_DAY},
            "ExpressionAttributeValues": {":d": {"S": day}},
            "ScanIndexForward": not newest_first,
        }
        if after or before != LAST_KEY:  # a key attribute's value may not be empty: no range, no condition
            kwargs["KeyConditionExpression"] += " AND #k BETWEEN :a AND :b"
            kwargs["ExpressionAttributeNames"]["#k"] = EXPORT_KEY
            kwargs["ExpressionAttributeValues"] |= {":a": {"S": after or day}, ":b": {"S": before}}
        while True:
            page = self._query(kwargs)
            units = query_units(page.get("Items", []))
            self.read_units += units
            kept = [self._plain(i) for i in page.get("Items", []) if after < i[EXPORT_KEY]["S"] < before]
            yield Page(records(kept, HistoryRecord), units, more="LastEvaluatedKey" in page)
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    @guarded
    def _query(self, kwargs: QueryInputTypeDef) -> QueryOutputTypeDef:
        return self._db.query(**kwargs)

    # -- writes ------------------------------------------------------------------
    @guarded
    def begin_turn(self, session_id: str, owner: str) -> int:
        """One UpdateItem on the header: the counter, and the owner on the first turn."""
        now = now_iso()
        try:
            resp = self._db.update_item(
                TableName=self._sessions,
                Key={"session_id": {"S": session_id}, "turn": {"N": str(HEADER_TURN)}},
                UpdateExpression="ADD turns :one SET #o = if_not_exists(#o, :owner), "
                "created_at = if_not_exists(created_at, :now), expires_at = :exp",
                ConditionExpression="attribute_not_exists(#o) OR #o = :owner",
                ExpressionAttributeNames={"#o": "owner"},
                ExpressionAttributeValues={
                    ":one": {"N": "1"},
                    ":owner": {"S": owner},
                    ":now": {"S": now},
                    ":exp": {"N": str(int(time.time()) + self._ttl_s)},
                },
                ReturnValues="UPDATED_NEW",
            )
        except self._db.exceptions.ConditionalCheckFailedException as exc:
            raise self.refused(session_id) from exc
        return int(resp["Attributes"]["turns"]["N"])

    def insert_turn(self, turn: Turn) -> bool:
        try:
            self._db.transact_write_items(TransactItems=self._puts(turn))
            return True
        except self._db.exceptions.TransactionCanceledException as exc:
            reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
            if "ConditionalCheckFailed" not in reasons:
                raise
        return False

    def write_feedback(self, session_id: str, owner: str, turn: int, feedback: Feedback) -> None:
        key = {"session_id": {"S": session_id}, "turn": {"N": str(turn)}}
        last: Exception | None = None
        for _ in range(FEEDBACK_ATTEMPTS):
            item = self.feedback_target(session_id, owner, turn)
            version = item.feedback_version
            mark = FeedbackMark.after(version, feedback, session_id, turn)
            try:
                self._db.transact_write_items(TransactItems=self._feedback_updates(key, owner, version, mark))
                return
            except self._db.exceptions.TransactionCanceledException as exc:
                reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
                if reasons[:1] != ["ConditionalCheckFailed"]:
                    log.error("memory.feedback_history_missing", session_id=session_id, turn=turn, reasons=reasons)
                    raise TurnNotFound(session_id, turn) from exc
                last = exc
                log.info("memory.feedback_retry", session_id=session_id, turn=turn, version=version)
                time.sleep(random.uniform(0.005, 0.05))  # spread concurrent writers of one turn apart
        # every attempt lost a race to another writer of the same turn: transient, the client retries
        raise StoreUnavailable("set_feedback", type(last).__name__ if last else "ConditionalCheckFailed")

    def _feedback_updates(
        self, key: dict[str, AttributeValueTypeDef], owner: str, version: int, mark: FeedbackMark
    ) -> list[TransactWriteItemTypeDef]:
        """The mark's fields on both items, each conditional: the sessions item on its owner and on the version
        read (another writer's feedback in between fails it), the history item on existing."""
        values = {
            ":f": self._ser.serialize(msgspec.to_builtins(mark.feedback)),
            ":next": {"N": str(mark.feedback_version)},
        }
        seen = "feedback_version = :v" if version else "attribute_not_exists(feedback_version)"
        if version:
            values[":v"] = {"N": str(version)}
        session_update = {
            "TableName": self._sessions,
            "Key": key,
            "UpdateExpression": "SET feedback = :f, feedback_version = :next",
            "ConditionExpression": f"#o = :owner AND {seen}",
            "ExpressionAttributeNames": {"#o": "owner"},
            "ExpressionAttributeValues": {**values, ":owner": {"S": owner}},
        }
        history_update = {
            "TableName": self._history,
            "Key": key,
            "UpdateExpression": "SET feedback = :f, feedback_version = :next, #d = :day, #k = :key",
            "ConditionExpression": "attribute_exists(session_id)",
            "ExpressionAttributeNames": {"#d": EXPORT_DAY, "#k": EXPORT_KEY},
            "ExpressionAttributeValues": {
                ":f": values[":f"],
                ":next": values[":next"],
                ":day": {"S": mark.export_day},
                ":key": {"S": mark.export_key},
            },
        }
        return [{"Update": session_update}, {"Update": history_update}]

    def _puts(self, turn: Turn) -> list[TransactWriteItemTypeDef]:
        session_item, history_item = self.items(turn)
        cond = "attribute_not_exists(session_id)"
        return [
            {"Put": {"TableName": self._sessions, "Item": session_item, "ConditionExpression": cond}},
            {"Put": {"TableName": self._history, "Item": history_item, "ConditionExpression": cond}},
        ]

    def items(
        self, turn: Turn, at: datetime | None = None
    ) -> tuple[dict[str, AttributeValueTypeDef], dict[str, AttributeValueTypeDef]]:
        """The turn's sessions item and intent-history item, typed for the DynamoDB API."""
        session_item, history_item = turn_items(turn, at, self._ttl_s)
        return self._typed(msgspec.to_builtins(session_item)), self._typed(msgspec.to_builtins(history_item))

    # -- the export's watermark ---------------------------------------------------
    @guarded
    def export_mark(self) -> ExportMark:
        item = self._db.get_item(TableName=self._history, Key=self._mark_key(), ConsistentRead=True)
        self.read_units += batch_get_units([item["Item"]], consistent=True) if "Item" in item else 1.0
        return msgspec.convert(self._plain(item.get("Item", {})), ExportMark)

    @guarded
    def claim_export(self, current: str | None, start: str, end: str, parts: list[str]) -> None:
        """`ExportMark.claimable` as the update's condition."""
        cond = "attribute_not_exists(pending) AND " + (
            "watermark = :current" if current else "attribute_not_exists(watermark)"
        )
        claimed = ExportMark(current).claimed(start, end, parts)
        values: dict[str, AttributeValueTypeDef] = {":p": self._ser.serialize(msgspec.to_builtins(claimed.pending))}
        if current:
            values[":current"] = {"S": current}
        try:
            self._db.update_item(
                TableName=self._history,
                Key=self._mark_key(),
                UpdateExpression="SET pending = :p",
                ConditionExpression=cond,
                ExpressionAttributeValues=values,
            )
        except self._db.exceptions.ConditionalCheckFailedException as exc:
            raise ExportBusy(BUSY) from exc

    @guarded
    def commit_export(self, end: str) -> None:
        committed = ExportMark().committed(end)
        try:
            self._db.update_item(
                TableName=self._history,
                Key=self._mark_key(),
                UpdateExpression="SET watermark = :end, exported_at = :now REMOVE pending",
                ConditionExpression="pending.#e = :end",
                ExpressionAttributeNames={"#e": "end"},
                ExpressionAttributeValues={":end": {"S": end}, ":now": {"S": committed.exported_at}},
            )
        except self._db.exceptions.ConditionalCheckFailedException as exc:
            raise ExportBusy("the export's pending range changed under it; run the export again") from exc

    @staticmethod
    def _mark_key() -> dict[str, AttributeValueTypeDef]:
        return {"session_id": {"S": WATERMARK[0]}, "turn": {"N": str(WATERMARK[1])}}

    def _typed(self, item: dict[str, Any]) -> dict[str, AttributeValueTypeDef]:
        """A plain item in DynamoDB's attribute values (its numbers are Decimal)."""
        return {k: self._ser.serialize(_decimals(v)) for k, v in item.items() if v is not None}

    def _plain(self, item: dict[str, AttributeValueTypeDef]) -> dict[str, Any]:
        """An item read as plain values: DynamoDB's Decimal numbers become int or float here, never further."""
        return {k: _numbers(self._de.deserialize(v)) for k, v in item.items()}


def _decimals(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: _decimals(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decimals(v) for v in value]
    return value


def _numbers(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    return value
