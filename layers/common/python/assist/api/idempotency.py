"""`Idempotency-Key` on the routes that store a turn: `POST /v1/ask`, `/v1/ask/stream` and
`/v1/chat/completions` (ADR 0049).

A request with a key claims it (caller × route × key) before any work. The first one runs and
records its answer under the key; a retry with the same key and body gets that answer back
(a stream replays it as events: route, one token, done) and stores nothing;
the same key with another body is a 422. A retry that arrives while the first request still runs
waits for it (IDEMPOTENCY_WAIT_S), then answers as a retry would, or 409 if it is still running.
A request that fails gives its key back, so a retry runs again. No header: nothing of this runs
(Powertools is imported by the first keyed request).

Records live with the sessions: Powertools' DynamoDB persistence layer on IDEMPOTENCY_TABLE, or
our SQLite layer in the embedded store's file (`assist.api.idempotency_file`).
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncGenerator, Callable
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import msgspec
from litestar.exceptions import ClientException, ServiceUnavailableException, ValidationException

from assist.aws.clients import client
from assist.contracts import Answer, AnswerEvent, DoneEvent, PassageSource, RouteEvent, TokenEvent, on_wire
from assist.lazy import Lazy
from assist.logs import get_logger

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import BasePersistenceLayer
    from litestar import Request

    from assist.ask.engine import Engine
    from assist.contracts import AskRequest, Site
    from assist.settings import Settings

log = get_logger(__name__)
T = TypeVar("T")
KEY_HEADER = "idempotency-key"
_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")  # visible ASCII, as the IETF draft's examples (UUIDs and the like)
KEY_PREFIX = "assist"  # one namespace for every function: the Ask and stream functions share the records
POLL_S = 0.1
Events = AsyncGenerator[AnswerEvent, None]


class Idempotency:
    """The keyed routes' guard. `dynamodb`: a client, or None to build one from the settings on the
    first keyed request (only when SESSION_STORE resolves to DynamoDB)."""

    def __init__(self, settings: Settings, dynamodb: Any = None) -> None:
        self.settings = settings
        self._layer: Lazy[BasePersistenceLayer] = Lazy(lambda: persistence_layer(settings, dynamodb))

    # -- the two shapes of a keyed route -------------------------------------------------
    def once(self, request: Request, owner: str, body: Any, run: Callable[[], T]) -> T | Answer:
        """A plain answer: `run()` under the request's key, or the answer already recorded under it."""
        claim = self.claim(request, owner, body)
        if claim is None:
            return run()
        if claim.replay is not None:
            return msgspec.convert(claim.replay, Answer)
        try:
            answer = run()
        except BaseException:
            claim.release()
            raise
        claim.complete(msgspec.to_builtins(answer))
        return answer

    async def events(
        self, engine: Engine, request: Request, ask: AskRequest, owner: str, body: Any, site: Site | None = None
    ) -> Events:
        """A streamed answer's events: phase 1 here and phase 2 as the engine streams it, recorded under
        the request's key; or, for a key already answered, the recorded answer as events. `site`: a widget
        visitor's question (its key, page and model budget)."""
        claim = await anyio.to_thread.run_sync(self.claim, request, owner, body)
        if claim is not None and claim.replay is not None:
            return replayed(claim.replay)
        try:
            state = await anyio.to_thread.run_sync(lambda: engine.prepare(ask, owner, site=site))
        except BaseException:
            if claim is not None:
                await anyio.to_thread.run_sync(claim.release)
            raise
        stream = engine.events(state)
        return stream if claim is None else claim.recorded(stream)

    # -- the claim -----------------------------------------------------------------------
    def claim(self, request: Request, owner: str, body: Any) -> Claim | None:
        """None without a key; else this request's claim on it: `replay` set when the key is answered."""
        key = request.headers.get(KEY_HEADER)
        if key is None:
            return None
        if not _KEY.match(key):
            raise ValidationException("Idempotency-Key must be 1-255 visible ASCII characters (a UUID, say)")
        errors = _powertools().exceptions
        route = request.scope["path"]
        payload = {"route": route, "owner": owner, "key": key, "body": body}
        layer = self._layer.get()
        deadline = time.monotonic() + self.settings.idempotency.wait_s
        lock_ms = int(self.settings.idempotency.lock_s * 1000)
        try:
            while True:
                try:
                    layer.save_inprogress(payload, remaining_time_in_millis=lock_ms)
                    log.info("idempotency.claimed", route=route)
                    return Claim(layer, payload)
                except errors.IdempotencyItemAlreadyExistsError as exc:
                    try:
                        record = exc.old_data_record or layer.get_record(payload)
                    except errors.IdempotencyItemNotFoundError:
                        continue  # the holder failed and gave the key back: claim it again
                    if record is not None and record.status == "COMPLETED":
                        log.info("idempotency.replayed", route=route)
                        return Claim(layer, payload, replay=record.response_json_as_dict())
                    if time.monotonic() > deadline:
                        raise ClientException(
                            "a request with this Idempotency-Key is still in progress: retry it shortly",
                            status_code=409,
                            headers={"Retry-After": "2"},
                        ) from None
                    time.sleep(POLL_S)  # the first request is still answering: wait for its answer
        except errors.IdempotencyValidationError as exc:
            raise ClientException(
                f"Idempotency-Key {key!r} was already used on {route} with another request body: "
                "send the same body to get its answer, or use a new key for a new request",
                status_code=422,
            ) from exc
        except (ClientException, ValidationException):
            raise
        except Exception as exc:  # the records' store failed: nothing ran, so the client's retry is safe
            log.warning("idempotency.unavailable", error=type(exc).__name__, detail=str(exc)[:200])
            raise ServiceUnavailableException(
                f"idempotency records unavailable ({type(exc).__name__}); retry shortly", headers={"Retry-After": "2"}
            ) from exc


class Claim:
    """A key this request holds (`replay` None) or found answered (`replay`: the recorded answer)."""

    def __init__(self, layer: BasePersistenceLayer, payload: dict[str, Any], replay: Any = None) -> None:
        self._layer, self._payload, self.replay = layer, payload, replay

    def complete(self, answer: dict[str, Any]) -> None:
        """Record the answer. Failing that, the answer is still the client's (the turn is stored), and the
        key stays claimed until its lock runs out: a retry meanwhile is a 409, never a second turn."""
        try:
            self._layer.save_success(self._payload, answer)
        except Exception as exc:
            log.warning("idempotency.record_failed", error=type(exc).__name__, detail=str(exc)[:200])

    def release(self) -> None:
        """The request failed: the key is free again (a retry runs), and a failure to free it only waits
        out the claim's lock."""
        try:
            self._layer.delete_record(self._payload, exception=RuntimeError("request failed"))
        except Exception as exc:
            log.warning("idempotency.release_failed", error=type(exc).__name__)

    async def recorded(self, stream: Events) -> Events:
        """The stream passed through; its `done` answer recorded under the key (as the wire carries it). A stream
        that ends without one (a failure, a client gone) gives the key back."""
        done = False
        try:
            async for event in stream:
                if isinstance(event, DoneEvent):
                    await anyio.to_thread.run_sync(self.complete, on_wire(event)[1])
                    done = True
                yield event
        finally:  # shielded: a cancelled response (client gone) must still end the turn and free the key
            with anyio.CancelScope(shield=True):
                await stream.aclose()
                if not done:
                    await anyio.to_thread.run_sync(self.release)


async def replayed(record: dict[str, Any]) -> Events:
    """A recorded answer as a stream's events: route, one token with the whole text, done (with the model's
    figures when a stream recorded it)."""
    answer = msgspec.convert(record, Answer)
    yield RouteEvent(answer.route, msgspec.convert(record["sources"], list[PassageSource]), answer.degraded)
    yield TokenEvent(answer.answer)
    yield DoneEvent(answer, usage=record.get("usage", msgspec.UNSET))


def persistence_layer(settings: Settings, dynamodb: Any = None) -> BasePersistenceLayer:
    """Powertools' DynamoDB layer when SESSION_STORE resolves to DynamoDB, else ours on the embedded file;
    configured once: the key hashes caller, route and key; the payload hash is the body's."""
    powertools = _powertools()
    layer: BasePersistenceLayer
    if settings.session_backend == "file":
        # deferred, ADR 0104: Powertools' idempotency utility, 0.10 s, on the first request with an Idempotency-Key
        from assist.api.idempotency_file import SQLitePersistenceLayer

        layer = SQLitePersistenceLayer(settings.sessions.store_file)
    else:
        if dynamodb is None:
            dynamodb = client("dynamodb", settings)
        layer = powertools.DynamoDBPersistenceLayer(settings.idempotency.table, boto3_client=dynamodb)
    config = powertools.IdempotencyConfig(
        event_key_jmespath="[route, owner, key]",
        payload_validation_jmespath="body",
        raise_on_no_idempotency_key=True,
        expires_after_seconds=settings.idempotency.ttl_s,
        hash_function="sha256",
    )
    layer.configure(config, key_prefix=KEY_PREFIX)
    return layer


@cache
def _powertools() -> ModuleType:
    """Powertools' idempotency utility (its persistence layers, config and errors)."""
    # deferred, ADR 0104: 0.10 s, on the first request with an Idempotency-Key (the metrics extra installs it)
    from aws_lambda_powertools.utilities import idempotency

    return idempotency
