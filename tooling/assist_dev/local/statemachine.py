"""The ask state machine in the local stack: the file template.yaml deploys, run by moto's ASL interpreter.

`ServerlessStack` builds the five functions, serves them on the local Lambda endpoint the
interpreter calls, and creates the state machine in the moto server. moto lacks
StartSyncExecution, so an ask starts an execution (with a unique name: unnamed executions
collide in moto) and polls DescribeExecution until it ends; the states it visited come from
GetExecutionHistory and are returned as `trace.execution`.
"""

from __future__ import annotations

import contextlib
import json
import time
import urllib.request
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assist import contracts
from assist.aws.clients import client
from assist.contracts import Answer, AskRequest
from assist.logs import get_logger
from assist.serverless.execution import ExecutionFailed, answer_of, execution_input
from assist.serverless.lambda_entry import FUNCTIONS, LambdaFunction
from assist_dev.local.definition import local_definition, local_name
from assist_dev.local.lambda_endpoint import LambdaEndpoint, interpreter_calls

if TYPE_CHECKING:
    from assist.settings import Settings

log = get_logger(__name__)
INTERPRETER = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
WAIT_S = 120.0  # longer than the Answer task's timeout plus its retries
ROLE = "arn:aws:iam::123456789012:role/assist-ask-state-machine"


@dataclass
class Execution:
    arn: str
    status: str  # SUCCEEDED | FAILED | TIMED_OUT | ABORTED
    output: Any
    error: str | None
    cause: str | None
    events: list[dict[str, Any]]
    ms: float

    @property
    def states(self) -> list[str]:
        """Names of the states visited, in order (a retried task is entered once)."""
        return [e["stateEnteredEventDetails"]["name"] for e in self.events if "stateEnteredEventDetails" in e]


def enable_interpreter(moto_url: str) -> None:
    """Switch on moto's ASL interpreter; state machines created before this do not execute."""
    body = json.dumps(INTERPRETER).encode()
    req = urllib.request.Request(moto_url + "/moto-api/config", data=body, method="POST")  # noqa: S310 - our moto
    with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310
        resp.read()


class AskStateMachine:
    def __init__(self, sfn: Any, arn: str) -> None:
        self._sfn = sfn
        self.arn = arn

    @classmethod
    def create(cls, sfn: Any, definition: str, name: str = "assist-ask") -> AskStateMachine:
        resp = sfn.create_state_machine(name=name, definition=definition, roleArn=ROLE, type="EXPRESS")
        return cls(sfn, resp["stateMachineArn"])

    def run(self, payload: dict[str, Any], wait_s: float = WAIT_S) -> Execution:
        t0 = time.perf_counter()
        arn = self._sfn.start_execution(stateMachineArn=self.arn, name=uuid.uuid4().hex, input=json.dumps(payload))[
            "executionArn"
        ]
        pause, deadline = 0.002, time.monotonic() + wait_s
        while (desc := self._sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
            if time.monotonic() > deadline:
                raise ExecutionFailed(f"execution {arn} still running after {wait_s:.0f} s")
            time.sleep(pause)
            pause = min(pause * 1.5, 0.01)
        ms = round((time.perf_counter() - t0) * 1000, 2)
        pages = self._sfn.get_paginator("get_execution_history").paginate(executionArn=arn)
        events = [e for page in pages for e in page["events"]]
        output = json.loads(desc["output"]) if desc.get("output") else None
        return Execution(arn, desc["status"], output, desc.get("error"), desc.get("cause"), events, ms)

    def ask(self, req: AskRequest, owner: str = "anonymous", budget_s: float | None = None) -> Answer:
        """The execution's answer with `trace.execution` = {arn, states}; a rejected request raises InvalidRequest.
        `budget_s`: the request's deadline from now (API_DEADLINE_S), which every task spends from."""
        ex = self.run(execution_input(req, owner, time.time() + budget_s if budget_s is not None else None))
        log.info("statemachine.executed", status=ex.status, states=ex.states, ms=ex.ms)
        answer = answer_of(ex.arn, ex.status, ex.output, ex.error, ex.cause)
        answer.trace.execution = contracts.Execution(arn=ex.arn, states=ex.states)
        return answer


class ServerlessStack:
    """The five functions behind the local Lambda endpoint, and the ask state machine in the moto server."""

    def __init__(self, settings: Settings, moto_url: str, name: str = "assist-ask") -> None:
        self.settings = settings
        self.moto_url = moto_url
        self.name = name
        self.functions: dict[str, LambdaFunction] = {f: LambdaFunction(f, settings) for f in FUNCTIONS}
        self.endpoint: LambdaEndpoint | None = None
        self.machine: AskStateMachine | None = None
        self._exit = contextlib.ExitStack()

    def start(self) -> ServerlessStack:
        by_name = {local_name(f): fn for f, fn in self.functions.items()}
        self.endpoint = self._exit.enter_context(_running(LambdaEndpoint(by_name, upstream=self.moto_url)))
        self._exit.enter_context(interpreter_calls(self.endpoint))
        enable_interpreter(self.moto_url)
        sfn = client("stepfunctions", self.settings)
        self.machine = AskStateMachine.create(sfn, local_definition(self.settings.aws.region), self.name)
        log.info("local.state_machine_created", arn=self.machine.arn, lambda_endpoint=self.endpoint.url)
        return self

    @property
    def arn(self) -> str:
        assert self.machine is not None, "start() first"
        return self.machine.arn

    def warm(self) -> None:
        for fn in self.functions.values():
            fn.warm()

    def stop(self) -> None:
        self._exit.close()

    def ask(self, req: AskRequest, owner: str = "anonymous") -> Answer:
        assert self.machine is not None, "start() first"
        return self.machine.ask(req, owner, self.settings.api.deadline_s)


@contextlib.contextmanager
def _running(endpoint: LambdaEndpoint) -> Any:
    endpoint.start()
    try:
        yield endpoint
    finally:
        endpoint.stop()
