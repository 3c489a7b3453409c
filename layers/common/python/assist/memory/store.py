"""Sessions and intent history: the store interface, and its DynamoDB implementation.

Two backends keep the same data with the same guarantees (ADR 0044): `SessionStore` here
(DynamoDB, what deployments and the local stack use) and `FileSessionStore` in file.py (one
SQLite file under .assist/, the default when no AWS is configured). `open_store` picks one
from the settings.

Both tables are keyed (session_id, turn). A turn reads the session once (`recent`: the last
turns of the sessions table, which also carry the intent entries). A session's header item
(turn 0) holds an atomic turn counter: `begin_turn` takes the next number with one UpdateItem,
so concurrent turns of one session never compete for a number; only the write needs the
number, so callers may take it while the model answers. The turn is written to both tables
in one transaction whose puts are conditional on the key being new and carry the request id:
a retried write of the same request is recognised and not duplicated, and no write can
overwrite another turn.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

from assist.contracts import IntentEntry, QueryType
from assist.errors import AssistError
from assist.logs import get_logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from assist.settings import Settings

log = get_logger(__name__)
P = ParamSpec("P")
R = TypeVar("R")
HISTORY_WINDOW = 6
TOPIC_CHARS = 60
HEADER_TURN = 0
EXPORT_INDEX = "by-export-day"
EXPORT_DAY = "export_day"
EXPORT_KEY = "export_key"
FEEDBACK_ATTEMPTS = 8


class SessionNotFound(AssistError, LookupError):
    """No such session for this caller (another owner's session looks exactly like a missing one)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} not found")


class TurnNotFound(SessionNotFound):
    """The caller's session has no such turn."""

    def __init__(self, session_id: str, turn: int) -> None:
        AssistError.__init__(self, f"session {session_id!r} has no turn {turn}")


class StoreUnavailable(AssistError, RuntimeError):
    """The session store did not serve the call: DynamoDB throttled after retries, unreachable or
    misconfigured, or the session file could not be used.

    No honest answer can be given without recording the turn: callers answer 503, and since
    nothing was written, the client's retry duplicates nothing. The message says what to do:
    `transient` failures are retried; configuration ones name the variable to set."""

    retry_after_s = 2

    def __init__(self, operation: str, code: str, advice: str | None = None) -> None:
        self.code = code
        self.transient = advice is None
        super().__init__(f"the session store is unavailable ({operation}: {code}); {advice or 'retry shortly'}")


#: DynamoDB failures that no retry fixes, and what to do about each ({endpoint}, {table} filled in)
NO_CREDENTIALS = (
    "no AWS credentials for DynamoDB: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), "
    'or run `eval "$(assist local env)"` for the local stack, or unset the AWS_* variables '
    "(or set SESSION_STORE=file) to use the embedded store in .assist/"
)
ADVICE = {
    "NoCredentialsError": NO_CREDENTIALS,
    "PartialCredentialsError": NO_CREDENTIALS,
    "NoRegionError": "no AWS region: set AWS_REGION, or unset the AWS_* variables to use the embedded store",
    "EndpointConnectionError": "nothing answers at {endpoint}: is the local stack running? Start it with "
    '`make run`, then `eval "$(assist local env)"`; or unset AWS_ENDPOINT_URL to use the embedded store',
    "ResourceNotFoundException": "no table {table} at {endpoint}: deploy the stack, set SESSIONS_TABLE and "
    "INTENT_HISTORY_TABLE to its tables, or start the local stack with `make run`",
    "UnrecognizedClientException": "AWS rejected the credentials: refresh AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)",
    "InvalidSignatureException": "AWS rejected the credentials' signature: check AWS_SECRET_ACCESS_KEY",
    "ExpiredTokenException": "the AWS session token has expired: refresh the credentials",
    "AccessDeniedException": "these AWS credentials may not use {table}: grant them access to the tables",
}


def advice(cause: BaseException, endpoint: str | None, table: str) -> tuple[str, str | None]:
    """The failure's code, and what to do about it (None: transient, retry)."""
    code = getattr(cause, "response", {}).get("Error", {}).get("Code") or type(cause).__name__
    hint = ADVICE.get(code)
    if code == "EndpointConnectionError" and not endpoint:
        hint = None  # the real AWS endpoint unreachable: the network, not our configuration
    return code, hint.format(endpoint=endpoint or "AWS", table=table) if hint else None


def guarded(method: Callable[P, R]) -> Callable[P, R]:
    """Translate AWS failures into StoreUnavailable; our own outcomes (not found, conflicts) pass."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return method(*args, **kwargs)
        except (ClientError, BotoCoreError) as exc:
            store = cast("SessionStore", args[0])
            code, hint = advice(exc, store.endpoint, store.sessions_table)
            log.warning("memory.store_unavailable", operation=method.__name__, code=code, error=str(exc)[:200])
            raise StoreUnavailable(method.__name__, code, hint) from exc

    return wrapper


class TurnConflict(RuntimeError):
    """The turn's key holds another request's turn: the counter and the items disagree."""


@dataclass
class Turn:
    session_id: str
    number: int
    request_id: str
    message: str
    answer: str
    entry: IntentEntry
    owner: str = "anonymous"
    sources: list[str] = field(default_factory=list)
    degraded: list[str] = field(default_factory=list)
    history: list[IntentEntry] = field(default_factory=list)  # what the classifier saw (kept for labels)
    retrieval_confidence: str | None = None  # None: the turn did not search the docs
    uncertain: str | None = None  # why the docs do not cover the question (ADR 0055); None: they do


def export_key(created_at: str, session_id: str, turn: int) -> str:
    """Sorts by time within a day; unique per turn."""
    return f"{created_at}#{session_id}#{turn:08d}"


def topic_of(message: str) -> str:
    return " ".join(message.split())[:TOPIC_CHARS]


def intent_entries(items: list[dict[str, Any]]) -> list[IntentEntry]:
    """The intent history as the classifier sees it, from the sessions table's turn items."""
    return [
        IntentEntry(
            type=QueryType(i["type"]),
            topic=topic_of(i["message"]),
            layer=i.get("layer", ""),
            confidence=float(i.get("confidence", 0)),
        )
        for i in items
    ]


class Store:
    """What the engine, the API and the export rely on, whichever backend keeps the data.

    Items are plain dicts: a sessions item per turn (`turn_items`), its intent-history twin, and
    a header (turn 0) per session with its owner and turn counter. Guarantees, per backend:
    `begin_turn` is an atomic counter; a turn's two items are written together or not at all and
    only once (`append_turn`: a retry of the same request is recognised, a different request's
    turn is a TurnConflict); another owner's session is SessionNotFound, like a missing one."""

    def messages(self, session_id: str, limit: int = 20) -> list[dict[str, Any]]:
        """The session's last `limit` turn items, oldest first (no owner check: callers do it)."""
        raise NotImplementedError

    def begin_turn(self, session_id: str, owner: str) -> int:
        """Take the session's next turn number; the first turn makes `owner` the session's owner."""
        raise NotImplementedError

    def transcript(self, session_id: str, owner: str, limit: int = 200) -> tuple[list[dict], list[dict]]:
        """The session's turns and intent entries, oldest first, for its owner only."""
        raise NotImplementedError

    def append_turn(self, turn: Turn) -> bool:
        """Write the turn to both tables; False when this very request was already written (a retry)."""
        raise NotImplementedError

    def set_feedback(self, session_id: str, owner: str, turn: int, feedback: dict[str, Any]) -> None:
        """Replace a turn's feedback on both of its items, whole (no lost update between two writers), and
        move its export key to the feedback's time so the next label export carries it again. Another
        owner's or a missing session: SessionNotFound; a missing turn: TurnNotFound."""
        raise NotImplementedError

    def recent(self, session_id: str, owner: str, limit: int = HISTORY_WINDOW) -> list[dict[str, Any]]:
        """The session's last `limit` turns, oldest first: one read serves the classifier's intent
        history and a CONVERSATIONAL answer's memory. Another owner's session is not found."""
        items = self.messages(session_id, limit=limit)
        if any(i.get("owner") != owner for i in items):
            log.warning("memory.owner_refused", session_id=session_id)
            raise SessionNotFound(session_id)
        return items


def open_store(settings: Settings, dynamodb: Any = None) -> Store:
    """The store SESSION_STORE names (ADR 0044): DynamoDB through `dynamodb` (a client, or a callable
    that builds one), or the embedded SQLite file. boto3 is not imported for the file store."""
    if settings.session_backend == "file":
        from assist.memory.file import FileSessionStore

        log.info("memory.store_opened", backend="file", path=settings.session_store_file)
        return FileSessionStore(settings.session_store_file, settings.session_ttl_days)
    if dynamodb is None or callable(dynamodb):
        from assist.aws.clients import client

        dynamodb = dynamodb() if callable(dynamodb) else client("dynamodb", settings)
    return SessionStore(dynamodb, settings.sessions_table, settings.intent_history_table, settings.session_ttl_days)


def turn_items(turn: Turn, at: datetime | None = None, ttl_s: int = 30 * 86400) -> tuple[dict, dict]:
    """The turn's sessions item and intent-history item, as plain values."""
    when = at or datetime.now(UTC)
    now = when.isoformat(timespec="milliseconds")
    expires = int(when.timestamp()) + ttl_s
    key = {"session_id": turn.session_id, "turn": turn.number, "request_id": turn.request_id}
    session_item = {
        **key,
        "owner": turn.owner,
        "message": turn.message,
        "answer": turn.answer,
        "type": turn.entry.type.value,
        # the intent entry again: the next turn's single read then yields its history (no second query)
        "layer": turn.entry.layer,
        "confidence": Decimal(str(round(turn.entry.confidence, 4))),
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
        "history": [{"type": h.type.value, "topic": h.topic} for h in turn.history],
        # the message again: the label export then reads one Query per day and no second table
        "message": turn.message,
        # for the insights page: how well the docs answered, and what went wrong
        "retrieval_confidence": turn.retrieval_confidence,
        "uncertain": turn.uncertain,
        "degraded": turn.degraded,
        # the export index: "entries of day D after key K" is one Query, never a scan
        EXPORT_DAY: now[:10],
        EXPORT_KEY: export_key(now, turn.session_id, turn.number),
    }
    return session_item, history_item


class SessionStore(Store):
    """The DynamoDB backend."""

    def __init__(self, client: DynamoDBClient, sessions_table: str, history_table: str, ttl_days: int = 30) -> None:
        from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

        self._db = client
        self.endpoint = client.meta.endpoint_url if "amazonaws.com" not in client.meta.endpoint_url else None
        self.sessions_table = self._sessions = sessions_table
        self._history = history_table
        self._ttl_s = ttl_days * 86400
        self._ser = TypeSerializer()
        self._de = TypeDeserializer()

    # -- reads -------------------------------------------------------------------
    @guarded
    def messages(self, session_id: str, limit: int = 20) -> list[dict[str, Any]]:
        resp = self._db.query(
            TableName=self._sessions,
            KeyConditionExpression="session_id = :s AND turn > :header",
            ExpressionAttributeValues={":s": {"S": session_id}, ":header": {"N": str(HEADER_TURN)}},
            ScanIndexForward=False,
            Limit=limit,
            ConsistentRead=True,
        )
        return [self._plain(i) for i in reversed(resp.get("Items", []))]

    # -- writes ------------------------------------------------------------------
    @guarded
    def begin_turn(self, session_id: str, owner: str) -> int:
        """Take the session's next turn number (atomic counter on the header item).

        The first turn makes the caller the session's owner; anyone else gets SessionNotFound,
        exactly as for a session that does not exist (no hint that it does)."""
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
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
            log.warning("memory.owner_refused", session_id=session_id)
            raise SessionNotFound(session_id) from exc
        return int(resp["Attributes"]["turns"]["N"])

    @guarded
    def transcript(self, session_id: str, owner: str, limit: int = 200) -> tuple[list[dict], list[dict]]:
        """The session's turns and intent entries, oldest first, for its owner only."""
        self.check_owner(session_id, owner)
        intents = self._db.query(
            TableName=self._history,
            KeyConditionExpression="session_id = :s",
            ExpressionAttributeValues={":s": {"S": session_id}},
            Limit=limit,
            ConsistentRead=True,
        ).get("Items", [])
        return self.messages(session_id, limit=limit), [self._plain(i) for i in intents]

    def check_owner(self, session_id: str, owner: str) -> None:
        """SessionNotFound unless the session exists and is the caller's (its header item says so)."""
        header = self._db.get_item(
            TableName=self._sessions,
            Key={"session_id": {"S": session_id}, "turn": {"N": str(HEADER_TURN)}},
            ConsistentRead=True,
        ).get("Item")
        if not header or header.get("owner", {}).get("S") != owner:
            raise SessionNotFound(session_id)

    @guarded
    def append_turn(self, turn: Turn) -> bool:
        """Write the turn to both tables; False when this very request was already written (a retry)."""
        try:
            self._db.transact_write_items(TransactItems=self._puts(turn))
            return True
        except self._db.exceptions.TransactionCanceledException as exc:
            reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
            if "ConditionalCheckFailed" not in reasons:
                raise
        existing = self._db.get_item(
            TableName=self._sessions,
            Key={"session_id": {"S": turn.session_id}, "turn": {"N": str(turn.number)}},
            ConsistentRead=True,
        ).get("Item", {})
        if existing.get("request_id", {}).get("S") == turn.request_id:
            log.info("memory.turn_already_written", session_id=turn.session_id, turn=turn.number)
            return False
        raise TurnConflict(f"session {turn.session_id} turn {turn.number} belongs to another request")

    @guarded
    def set_feedback(self, session_id: str, owner: str, turn: int, feedback: dict[str, Any]) -> None:
        """Replace a turn's feedback (`{rating, type, comment?, at}`) on its sessions item and its intent-history
        item, in one transaction conditional on the `feedback_version` just read: two concurrent writes never
        mix their halves, the later one re-reads and replaces the earlier whole. The history item's export key
        moves to the feedback's time, so the next label export carries the turn again, as a later revision.

        Another owner's session and a missing one raise SessionNotFound; a missing turn TurnNotFound."""
        key = {"session_id": {"S": session_id}, "turn": {"N": str(turn)}}
        last: Exception | None = None
        for _ in range(FEEDBACK_ATTEMPTS):
            item = self._db.get_item(TableName=self._sessions, Key=key, ConsistentRead=True).get("Item")
            if turn <= HEADER_TURN or not item:
                self.check_owner(session_id, owner)  # a foreign or missing session is that, not a turn
                raise TurnNotFound(session_id, turn)
            if item.get("owner", {}).get("S") != owner:
                raise SessionNotFound(session_id)
            version = int(item.get("feedback_version", {}).get("N", "0"))
            try:
                self._db.transact_write_items(TransactItems=self._feedback_updates(key, owner, version, feedback))
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
        self, key: dict[str, Any], owner: str, version: int, feedback: dict[str, Any]
    ) -> list[dict[str, Any]]:
        at = feedback["at"]
        values = {":f": self._ser.serialize(feedback), ":next": {"N": str(version + 1)}}
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
                ":day": {"S": at[:10]},
                ":key": {"S": export_key(at, key["session_id"]["S"], int(key["turn"]["N"]))},
            },
        }
        return [{"Update": session_update}, {"Update": history_update}]

    def _puts(self, turn: Turn) -> list[dict[str, Any]]:
        session_item, history_item = self.items(turn)
        cond = "attribute_not_exists(session_id)"
        return [
            {"Put": {"TableName": self._sessions, "Item": session_item, "ConditionExpression": cond}},
            {"Put": {"TableName": self._history, "Item": history_item, "ConditionExpression": cond}},
        ]

    def items(self, turn: Turn, at: datetime | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """The turn's sessions item and intent-history item, typed for the DynamoDB API."""
        session_item, history_item = turn_items(turn, at, self._ttl_s)
        return self._typed(session_item), self._typed(history_item)

    def _typed(self, item: dict[str, Any]) -> dict[str, Any]:
        return {k: self._ser.serialize(v) for k, v in item.items() if v is not None}

    def _plain(self, item: dict[str, Any]) -> dict[str, Any]:
        return {k: self._de.deserialize(v) for k, v in item.items()}
