"""The DynamoDB backend of the widget's table (`WidgetStore`, widget/store/store.py): the template's WidgetTable,
keyed (pk, sk), items expiring by TTL on `expires_at` (ADR 0089).

Each counter step is one or two conditional UpdateItems and never a read-then-write, so concurrent containers
cannot both take the last hit of a window or the last slot of a burst:
- window: "one more" (`n < limit AND window_end > now`, the old item handed back when it fails); else, if the
  window ended or never began, "a new window" (`window_end <= now OR no window`); a writer that loses that race
  to another one opening the window tries "one more" again;
- rate (GCRA): "from now" (`tat <= now OR no tat`: TAT = now + interval); else "one more interval"
  (`now < tat <= now + tolerance`: TAT = TAT + interval); both refused means the burst is spent.
The conditions are exactly the branches of `window_step` and `rate_step`.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import msgspec

from assist.tables.base import guarded
from assist.tables.dynamodb import DynamoDBTable
from assist.widget.store.store import (
    COUNTER,
    DENIED_PARTITION,
    GRACE_S,
    KEYS_PARTITION,
    SiteKey,
    Taken,
    WidgetStore,
    interval_ms,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, QueryInputTypeDef

ATTEMPTS = 6  # each failed attempt means another writer moved the item: a few always settle it


class DynamoDBWidgetStore(DynamoDBTable, WidgetStore):
    # -- keys ------------------------------------------------------------------------
    @guarded
    def put_key(self, key: SiteKey) -> None:
        self._db.put_item(
            TableName=self.table,
            Item={"pk": {"S": KEYS_PARTITION}, "sk": {"S": key.key}, "key": {"S": msgspec.json.encode(key).decode()}},
            ConditionExpression="attribute_not_exists(pk)",
        )

    @guarded
    def get_key(self, key: str) -> SiteKey | None:
        item = self._db.get_item(TableName=self.table, Key=self._key(KEYS_PARTITION, key), ConsistentRead=True).get(
            "Item"
        )
        return msgspec.json.decode(item["key"]["S"], type=SiteKey) if item else None

    @guarded
    def all_keys(self) -> list[SiteKey]:
        out: list[SiteKey] = []
        kwargs: QueryInputTypeDef = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": {":p": {"S": KEYS_PARTITION}},
            "ConsistentRead": True,
        }
        while True:
            page = self._db.query(**kwargs)
            out += [msgspec.json.decode(i["key"]["S"], type=SiteKey) for i in page.get("Items", [])]
            if "LastEvaluatedKey" not in page:
                return sorted(out, key=lambda k: k.created_at)
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    @guarded
    def revoke_key(self, key: str, at: str) -> SiteKey | None:
        found = self.get_key(key)
        if found is None or found.revoked_at:
            return found
        revoked = msgspec.structs.replace(found, revoked_at=at)
        try:  # the item as read, so a concurrent revocation keeps its own time
            self._db.put_item(
                TableName=self.table,
                Item={**self._key(KEYS_PARTITION, key), "key": {"S": msgspec.json.encode(revoked).decode()}},
                ConditionExpression="#k = :was",
                ExpressionAttributeNames={"#k": "key"},
                ExpressionAttributeValues={":was": {"S": msgspec.json.encode(found).decode()}},
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return self.get_key(key)
        return revoked

    # -- counters --------------------------------------------------------------------
    @guarded
    def window(self, name: str, limit: int, window_s: float, now_ms: int) -> Taken:
        key = self._key(name, COUNTER)
        end = now_ms + int(window_s * 1000)
        for _ in range(ATTEMPTS):
            try:  # one more in the current window
                done = self._db.update_item(
                    TableName=self.table,
                    Key=key,
                    UpdateExpression="SET n = n + :one",
                    ConditionExpression="window_end > :now AND n < :limit",
                    ExpressionAttributeValues={":one": _n(1), ":now": _n(now_ms), ":limit": _n(limit)},
                    ReturnValues="UPDATED_NEW",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
                return Taken(True, int(done["Attributes"]["n"]["N"]))
            except self._db.exceptions.ConditionalCheckFailedException as exc:
                old = exc.response.get("Item") or {}
            if old and int(old["window_end"]["N"]) > now_ms:  # the window is full
                wait = (int(old["window_end"]["N"]) - now_ms) / 1000
                return Taken(False, int(old["n"]["N"]), wait)
            if limit < 1:
                return Taken(False, 0, window_s)
            try:  # the window ended (or never began): a new one from this hit
                self._db.update_item(
                    TableName=self.table,
                    Key=key,
                    UpdateExpression="SET n = :one, window_end = :end, expires_at = :exp",
                    ConditionExpression="attribute_not_exists(window_end) OR window_end <= :now",
                    ExpressionAttributeValues={
                        ":one": _n(1),
                        ":end": _n(end),
                        ":now": _n(now_ms),
                        ":exp": _n(end // 1000 + GRACE_S),
                    },
                )
                return Taken(True, 1)
            except self._db.exceptions.ConditionalCheckFailedException:
                continue  # another writer opened the window first: count in it
        raise RuntimeError(f"counter {name} kept changing under {ATTEMPTS} attempts")

    @guarded
    def rate(self, name: str, rate_per_s: float, burst: int, now_ms: int) -> Taken:
        key = self._key(name, COUNTER)
        interval = interval_ms(rate_per_s)
        tolerance = (max(burst, 1) - 1) * interval
        for _ in range(ATTEMPTS):
            try:  # idle since the TAT passed: start from now
                self._db.update_item(
                    TableName=self.table,
                    Key=key,
                    UpdateExpression="SET tat = :next, expires_at = :exp",
                    ConditionExpression="attribute_not_exists(tat) OR tat <= :now",
                    ExpressionAttributeValues={
                        ":next": _n(now_ms + interval),
                        ":now": _n(now_ms),
                        ":exp": _n((now_ms + interval) // 1000 + GRACE_S),
                    },
                )
                return Taken(True, 1)
            except self._db.exceptions.ConditionalCheckFailedException:
                pass
            try:  # within the burst: one interval more
                done = self._db.update_item(
                    TableName=self.table,
                    Key=key,
                    UpdateExpression="SET tat = tat + :i, expires_at = :exp",
                    ConditionExpression="tat > :now AND tat <= :edge",
                    ExpressionAttributeValues={
                        ":i": _n(interval),
                        ":now": _n(now_ms),
                        ":edge": _n(now_ms + tolerance),
                        ":exp": _n((now_ms + tolerance + interval) // 1000 + GRACE_S),
                    },
                    ReturnValues="UPDATED_OLD",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
                tat = int(done["Attributes"]["tat"]["N"])
                return Taken(True, round((tat - now_ms) / interval) + 1)
            except self._db.exceptions.ConditionalCheckFailedException as exc:
                old = exc.response.get("Item") or {}
            if old and int(old["tat"]["N"]) > now_ms + tolerance:  # the burst is spent
                return Taken(False, burst, (int(old["tat"]["N"]) - tolerance - now_ms) / 1000)
        raise RuntimeError(f"counter {name} kept changing under {ATTEMPTS} attempts")

    @guarded
    def count(self, name: str, now_ms: int) -> int:
        item = self._db.get_item(TableName=self.table, Key=self._key(name, COUNTER), ConsistentRead=True).get("Item")
        if not item or int(item.get("window_end", {"N": "0"})["N"]) <= now_ms:
            return 0
        return int(item["n"]["N"])

    @guarded
    def deny_visitor(self, visitor: str, at: str) -> str:
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):  # denied before: keep that
            self._db.put_item(
                TableName=self.table,
                Item={**self._key(DENIED_PARTITION, visitor), "denied_at": {"S": at}},
                ConditionExpression="attribute_not_exists(pk)",
            )
        return self.denied(visitor) or at

    @guarded
    def denied(self, visitor: str) -> str | None:
        item = self._db.get_item(
            TableName=self.table, Key=self._key(DENIED_PARTITION, visitor), ConsistentRead=True
        ).get("Item")
        return item["denied_at"]["S"] if item else None

    @staticmethod
    def _key(pk: str, sk: str) -> dict[str, AttributeValueTypeDef]:
        return {"pk": {"S": pk}, "sk": {"S": sk}}


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}
