"""The ask state machine's tasks: the engine's stages with plain JSON in and out.

Each task has a typed core (`classify_turn`, `retrieve_turn`, `answer_turn`) that the
function's HTTP routes call too, and a JSON wrapper that the Lambda entry point calls with a
Step Functions payload. Errors keep their class name as the Lambda `errorType`, which is
what the state machine's Retry and Catch match: `InvalidRequest` ends the execution as a
client error, `TransientError` is retried.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import msgspec

from assist.contracts import Answer, AskRequest, Degraded, InvalidRequest, TurnState, check_ask
from assist.deadline import sooner
from assist.logs import get_logger
from assist.serverless.payload import trim
from assist.tables.base import StoreUnavailable

if TYPE_CHECKING:
    from assist.ask.engine import Engine
    from assist.settings import Settings

log = get_logger(__name__)
# DynamoDB/S3 error codes that a retry a second later usually fixes
RETRYABLE_CODES = {
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "TransactionConflictException",
    "InternalServerError",
    "ServiceUnavailable",
    "SlowDown",
    "RequestTimeout",
}


class TransientError(RuntimeError):
    """A dependency failed in a way a retry may fix; the state machine retries this error by name."""


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, StoreUnavailable):  # the store says: throttled/unreachable, or misconfigured (no retry)
        return exc.transient
    boto = sys.modules.get("botocore.exceptions")  # not imported: the error cannot be botocore's
    if boto is not None:
        if isinstance(exc, boto.ConnectionError | boto.HTTPClientError):
            return True
        if isinstance(exc, boto.ClientError):
            return exc.response.get("Error", {}).get("Code") in RETRYABLE_CODES
    return isinstance(exc, ConnectionError | TimeoutError)


def decode(payload: Any, kind: type[Any]) -> Any:
    try:
        return msgspec.convert(payload, kind)
    except msgspec.ValidationError as exc:
        raise InvalidRequest(f"invalid {kind.__name__}: {exc}") from exc


def require_route(state: TurnState) -> None:
    if state.route is None:
        raise InvalidRequest("the turn has no route yet: classify it first (POST /v1/classify)")


@contextmanager
def until(state: TurnState, end: float | None) -> Iterator[TurnState]:
    """Within this task the turn's deadline is also the invocation's end; the request's own deadline travels on."""
    request_deadline = state.deadline
    state.deadline = sooner(request_deadline, end)
    try:
        yield state
    finally:
        state.deadline = request_deadline


# -- typed cores (the tasks and the functions' HTTP routes) ---------------------------
def classify_turn(
    engine: Engine, req: AskRequest, owner: str = "anonymous", deadline: float | None = None, end: float | None = None
) -> TurnState:
    state = engine.start(req, owner, deadline)
    with until(state, end):
        engine.classify(state)
    return trim(state)


def retrieve_turn(engine: Engine, state: TurnState) -> TurnState:
    require_route(state)
    check_ask(state.request, engine.settings)  # a turn sent to /v1/retrieve was never through Classify's check
    return trim(engine.retrieve(state))


def answer_turn(engine: Engine, state: TurnState, failures: dict[str, Any] | None = None) -> Answer:
    """`failures` names the stages the state machine caught failing; the answer says so in `degraded`."""
    require_route(state)
    for stage, failure in (failures or {}).items():
        state.degraded.append(Degraded(f"{stage}_failed"))  # classify_failed, retrieve_failed, answer_failed
        log.warning("answer.degraded_path", failed=stage, error=(failure or {}).get("Error"))
    return engine.answer(state)


# -- Step Functions tasks: JSON in, JSON out ------------------------------------------
def classify(engine: Engine, payload: dict[str, Any], end: float | None = None) -> dict[str, Any]:
    """The execution input: `{"request": AskRequest, "owner": caller, "deadline": epoch s}`, or a bare
    AskRequest (anonymous, its deadline from now)."""
    if "request" in payload:
        owner = str(payload.get("owner") or "anonymous")
        deadline = payload.get("deadline")
        if deadline is not None and not isinstance(deadline, int | float):
            raise InvalidRequest("deadline is epoch seconds (a number)")
        req = decode(payload["request"], AskRequest)
        return msgspec.to_builtins(classify_turn(engine, req, owner, deadline, end))
    return msgspec.to_builtins(classify_turn(engine, decode(payload, AskRequest), end=end))


def retrieve(engine: Engine, payload: dict[str, Any], end: float | None = None) -> dict[str, Any]:
    state = decode(payload, TurnState)
    with until(state, end):
        out = retrieve_turn(engine, state)
    return msgspec.to_builtins(out)


def answer(engine: Engine, payload: dict[str, Any], end: float | None = None) -> dict[str, Any]:
    state = decode({k: v for k, v in payload.items() if k != "failures"}, TurnState)  # failures: the Catch's
    with until(state, end):
        return msgspec.to_builtins(answer_turn(engine, state, payload.get("failures")))


def export(settings: Settings, payload: dict[str, Any]) -> dict[str, Any]:
    """The scheduled label export (EventBridge sends its event; `{"force": true}` exports below the threshold)."""
    # deferred, ADR 0104: 0.011 s that the ask path's functions, which never export, would pay
    from assist.export.labels import run_export

    log.info("export.triggered", trigger=payload.get("source", "direct"))
    return asdict(run_export(settings, force=payload.get("force") is True))


def sync(settings: Settings, payload: dict[str, Any], end: float | None = None) -> dict[str, Any]:
    """The index build: the whole sync (a schedule's event, `payload.sources_file` overriding SOURCES_FILE), or
    one step of the index state machine (`payload.step`: plan, embed, commit; ADR 0120)."""
    # deferred, ADR 0104: the sources' fetchers and parsers and the build, 0.16 s, used by the sync function only
    from assist.build.task import run

    log.info("sync.triggered", trigger=payload.get("source", "direct"), step=payload.get("step", "sync"))
    return run(settings, payload, end)
