"""The functions' tasks: the ask state machine's stages, the label export and the index build.

Each ask task has a typed core (`classify_turn`, `retrieve_turn`, `answer_turn`) that the function's HTTP routes
call too. The Lambda entry point decodes a task's payload into its input struct (`lambda_entry.TASKS`) and encodes
what it returns. Errors keep their class name as the Lambda `errorType`, which is what the state machine's Retry
and Catch match: `InvalidRequest` ends the execution as a client error, `TransientError` is retried.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import msgspec

from assist.build.event import BuildEvent
from assist.contracts import Answer, AskRequest, Degraded, InvalidRequest, TurnState, check_ask
from assist.deadline import sooner
from assist.logs import get_logger
from assist.serverless.execution import ExecutionInput
from assist.serverless.payload import trim
from assist.tables.base import StoreUnavailable

if TYPE_CHECKING:
    from assist.ask.engine import Engine
    from assist.build.event import Embedded, Planned
    from assist.export.labels import ExportResult
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


class Caught(msgspec.Struct):
    """What the state machine's Catch hands on about a stage that kept failing (Step Functions' field names)."""

    Error: str = ""
    Cause: str = ""


class CaughtTurn(TurnState):
    """The Answer task's input: the turn, and the stages caught failing on the way (`$.failures.<stage>`)."""

    failures: dict[str, Caught | None] = msgspec.field(default_factory=dict)


class ExportEvent(msgspec.Struct):
    """The export's input: EventBridge's scheduled event (its `source`), the HTTP route's, or a direct
    invocation's; `force` exports below the threshold."""

    source: str = "direct"
    force: bool = False


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


def answer_turn(engine: Engine, state: TurnState, failures: dict[str, Caught | None] | None = None) -> Answer:
    """`failures` names the stages the state machine caught failing; the answer says so in `degraded`."""
    require_route(state)
    for stage, failure in (failures or {}).items():
        state.degraded.append(Degraded(f"{stage}_failed"))  # classify_failed, retrieve_failed, answer_failed
        log.warning("answer.degraded_path", failed=stage, error=failure.Error if failure else None)
    return engine.answer(state)


# -- the tasks: the payload decoded into their input, what they return encoded by the entry point ----------
def execution(payload: Any) -> ExecutionInput:
    """Classify's input: the execution input (`ExecutionInput`), or a bare AskRequest (anonymous, its deadline
    from now)."""
    if isinstance(payload, dict) and "request" in payload:
        return decode(payload, ExecutionInput)
    return ExecutionInput(decode(payload, AskRequest))


def classify(engine: Engine, given: ExecutionInput, end: float | None = None) -> TurnState:
    return classify_turn(engine, given.request, given.owner, given.deadline, end)


def retrieve(engine: Engine, state: TurnState, end: float | None = None) -> TurnState:
    with until(state, end):
        return retrieve_turn(engine, state)


def answer(engine: Engine, turn: CaughtTurn, end: float | None = None) -> Answer:
    with until(turn, end):
        return answer_turn(engine, turn, turn.failures)


def export(settings: Settings, event: ExportEvent) -> ExportResult:
    """The scheduled label export (`force`: export below the threshold)."""
    # deferred, ADR 0104: 0.011 s that the ask path's functions, which never export, would pay
    from assist.export.labels import run_export

    log.info("export.triggered", trigger=event.source)
    return run_export(settings, force=event.force)


def sync(settings: Settings, event: BuildEvent, end: float | None = None) -> Planned | Embedded | dict[str, Any]:
    """The index build: the whole sync (a schedule's event, `sources_file` overriding SOURCES_FILE), or one step
    of the index state machine (`step`: plan, embed, commit; ADR 0120). Its report, as `build.task.run` gives it."""
    # deferred, ADR 0104: the sources' fetchers and parsers and the build, 0.16 s, used by the sync function only
    from assist.build.task import run

    log.info("sync.triggered", trigger=event.source, step=event.step)
    return run(settings, event, end)
