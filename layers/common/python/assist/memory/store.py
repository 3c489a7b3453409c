"""Sessions and intent history in DynamoDB.

Both tables are keyed (session_id, turn). A turn is written to both in one transaction whose
puts are conditional on the key being new, so two concurrent turns of one session can never
overwrite each other: the loser re-reads and takes the next turn number.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from assist.contracts import IntentEntry, QueryType
from assist.logs import get_logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

log = get_logger(__name__)
HISTORY_WINDOW = 6
TOPIC_CHARS = 60
MAX_TURN_ATTEMPTS = 8


class TurnConflict(RuntimeError):
    """Could not find a free turn number after several attempts (pathological contention)."""


@dataclass
class Turn:
    session_id: str
    message: str
    answer: str
    entry: IntentEntry
    owner: str = "anonymous"
    sources: list[str] = field(default_factory=list)
    degraded: list[str] = field(default_factory=list)


def topic_of(message: str) -> str:
    return " ".join(message.split())[:TOPIC_CHARS]


class SessionStore:
    def __init__(self, client: DynamoDBClient, sessions_table: str, history_table: str, ttl_days: int = 30) -> None:
        from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

        self._db = client
        self._sessions = sessions_table
        self._history = history_table
        self._ttl_s = ttl_days * 86400
        self._ser = TypeSerializer()
        self._de = TypeDeserializer()

    # -- reads -------------------------------------------------------------------
    def recent_intents(self, session_id: str, limit: int = HISTORY_WINDOW) -> tuple[list[IntentEntry], int]:
        """The last `limit` intent entries, oldest first, and the last turn number (0 if new)."""
        resp = self._db.query(
            TableName=self._history,
            KeyConditionExpression="session_id = :s",
            ExpressionAttributeValues={":s": {"S": session_id}},
            ScanIndexForward=False,
            Limit=limit,
            ConsistentRead=True,
        )
        items = [self._plain(i) for i in resp.get("Items", [])]
        last_turn = int(items[0]["turn"]) if items else 0
        entries = [
            IntentEntry(
                type=QueryType(i["type"]),
                topic=i["topic"],
                layer=i.get("layer", ""),
                confidence=float(i.get("confidence", 0)),
            )
            for i in reversed(items)
        ]
        return entries, last_turn

    def messages(self, session_id: str, limit: int = 20) -> list[dict[str, Any]]:
        resp = self._db.query(
            TableName=self._sessions,
            KeyConditionExpression="session_id = :s",
            ExpressionAttributeValues={":s": {"S": session_id}},
            ScanIndexForward=False,
            Limit=limit,
            ConsistentRead=True,
        )
        return [self._plain(i) for i in reversed(resp.get("Items", []))]

    # -- writes ------------------------------------------------------------------
    def append_turn(self, turn: Turn, after: int) -> int:
        """Write the turn after turn number `after`; returns the turn number it got."""
        number = after + 1
        for _ in range(MAX_TURN_ATTEMPTS):
            try:
                self._db.transact_write_items(TransactItems=self._puts(turn, number))
                return number
            except self._db.exceptions.TransactionCanceledException as exc:
                reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
                if "ConditionalCheckFailed" not in reasons:
                    raise
                _, last = self.recent_intents(turn.session_id, limit=1)
                number = max(number, last) + 1
                log.info("memory.turn_conflict", session_id=turn.session_id, retry_turn=number)
        raise TurnConflict(f"session {turn.session_id}: no free turn after {MAX_TURN_ATTEMPTS} attempts")

    def _puts(self, turn: Turn, number: int) -> list[dict[str, Any]]:
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        expires = int(time.time()) + self._ttl_s
        key = {"session_id": turn.session_id, "turn": number}
        session_item = {
            **key,
            "owner": turn.owner,
            "message": turn.message,
            "answer": turn.answer,
            "type": turn.entry.type.value,
            "sources": turn.sources,
            "degraded": turn.degraded,
            "created_at": now,
            "expires_at": expires,
        }
        history_item = {
            **key,
            "owner": turn.owner,
            "type": turn.entry.type.value,
            "topic": turn.entry.topic,
            "layer": turn.entry.layer,
            "confidence": Decimal(str(round(turn.entry.confidence, 4))),
            "created_at": now,
            "expires_at": expires,
        }
        cond = "attribute_not_exists(session_id)"
        return [
            {"Put": {"TableName": self._sessions, "Item": self._typed(session_item), "ConditionExpression": cond}},
            {"Put": {"TableName": self._history, "Item": self._typed(history_item), "ConditionExpression": cond}},
        ]

    def _typed(self, item: dict[str, Any]) -> dict[str, Any]:
        return {k: self._ser.serialize(v) for k, v in item.items() if v is not None}

    def _plain(self, item: dict[str, Any]) -> dict[str, Any]:
        return {k: self._de.deserialize(v) for k, v in item.items()}
