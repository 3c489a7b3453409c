"""An ask state machine execution's result, as the API returns it: the `Answer`, decoded, a 400 for a
rejected request, or ExecutionFailed. Shared by the local stack (moto, polled) and AWS
(StartSyncExecution from the Ask function)."""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from typing import Any

import msgspec

from assist.contracts import Answer, AskRequest, Execution, InvalidRequest, Route
from assist.errors import Unavailable


class ExecutionAnswer(Answer):
    """What an execution answers: an `Answer`; in the degraded answer of a failed classify step (the state
    machine's `ClassifyFailed`) no route was decided, and the wire says `null`, as it always has (ADR 0105)."""

    route: Route | None  # type: ignore[assignment]


class ExecutionFailed(Unavailable, RuntimeError):
    """The execution ended without an answer (a state machine fault, not a degraded answer)."""

    reason = "execution_failed"


class ExecutionInput(msgspec.Struct, omit_defaults=True):
    """An ask execution's input, Classify's: the request, its caller, and the request's deadline (epoch seconds),
    which every task spends from (none: API_DEADLINE_S from when Classify starts)."""

    request: AskRequest
    owner: str = "anonymous"
    deadline: float | None = None


def answer_of(arn: str, status: str, output: Any, error: str | None, cause: str | None) -> Answer:
    """The answer the Answer task wrote, decoded (a malformed one is the execution's failure)."""
    if status == "SUCCEEDED" and isinstance(output, dict):
        try:
            return msgspec.convert(output, ExecutionAnswer)
        except msgspec.ValidationError as exc:
            raise ExecutionFailed(f"execution {arn} answered no Answer: {exc}") from exc
    if error == "InvalidRequest":
        raise InvalidRequest(error_message(cause))
    raise ExecutionFailed(f"execution {arn} ended {status}: {error}: {cause}")


def error_message(cause: str | None) -> str:
    """A Lambda error's cause is its JSON error body; the message is what the user should read."""
    with contextlib.suppress(ValueError, TypeError):
        return json.loads(cause or "")["errorMessage"]
    return cause or "invalid request"


class SyncAsk:
    """`ask_via` for the Ask function in AWS: StartSyncExecution with the caller as owner and the request's
    deadline, `budget_s` from now. `sfn` must wait longer than an execution may run and never retry: a repeated
    StartSyncExecution is a second execution, and a second stored turn (`clients.client(..., attempts=1)`)."""

    def __init__(self, sfn: Any, arn: str, budget_s: float) -> None:
        self._sfn, self._arn, self._budget_s = sfn, arn, budget_s

    def __call__(self, req: AskRequest, owner: str) -> Answer:
        payload = msgspec.json.encode(ExecutionInput(req, owner, time.time() + self._budget_s)).decode()
        r = self._sfn.start_sync_execution(stateMachineArn=self._arn, name=uuid.uuid4().hex, input=payload)
        output = json.loads(r["output"]) if r.get("output") else None
        answer = answer_of(r["executionArn"], r["status"], output, r.get("error"), r.get("cause"))
        answer.trace.execution = Execution(arn=r["executionArn"])
        return answer
