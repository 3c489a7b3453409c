"""The state machines in the local stack: the files template.yaml deploys (the ask chain, the index build), run by
moto's ASL interpreter.

`ServerlessStack` builds the five functions, serves them on the local Lambda endpoint the
interpreter calls, and creates the state machines in the moto server. The index build's Distributed Map runs
in moto as a Map of child executions, MaxConcurrency at a time, its items read from S3 by the ItemReader. moto lacks
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

import msgspec

from assist import contracts
from assist.aws.clients import client
from assist.contracts import Answer, AskRequest
from assist.logs import get_logger
from assist.serverless.execution import ExecutionFailed, ExecutionInput, answer_of
from assist.serverless.lambda_entry import FUNCTIONS, LambdaFunction
from assist_dev.local.definition import INDEX_ASL, local_definition, local_name
from assist_dev.local.lambda_endpoint import LambdaEndpoint, interpreter_calls

if TYPE_CHECKING:
    from assist.settings import Settings

log = get_logger(__name__)
INTERPRETER = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
WAIT_S = 120.0  # longer than the Answer task's timeout plus its retries
BUILD_WAIT_S = 3600.0  # an index build: its shards' embedding, at a few chunks a second per worker
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


class StateMachine:
    """A state machine in the moto server: start an execution, poll it to its end."""

    def __init__(self, sfn: Any, arn: str) -> None:
        self._sfn = sfn
        self.arn = arn

    def run(self, payload: dict[str, Any], wait_s: float = WAIT_S, pause_cap: float = 0.01) -> Execution:
        t0 = time.perf_counter()
        arn = self._sfn.start_execution(stateMachineArn=self.arn, name=uuid.uuid4().hex, input=json.dumps(payload))[
            "executionArn"
        ]
        pause, deadline = 0.002, time.monotonic() + wait_s
        while (desc := self._sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
            if time.monotonic() > deadline:
                raise ExecutionFailed(f"execution {arn} still running after {wait_s:.0f} s")
            time.sleep(pause)
            pause = min(pause * 1.5, pause_cap)
        ms = round((time.perf_counter() - t0) * 1000, 2)
        pages = self._sfn.get_paginator("get_execution_history").paginate(executionArn=arn)
        events = [e for page in pages for e in page["events"]]
        output = json.loads(desc["output"]) if desc.get("output") else None
        return Execution(arn, desc["status"], output, desc.get("error"), desc.get("cause"), events, ms)


class AskStateMachine(StateMachine):
    @classmethod
    def create(cls, sfn: Any, definition: str, name: str = "assist-ask") -> AskStateMachine:
        resp = sfn.create_state_machine(name=name, definition=definition, roleArn=ROLE, type="EXPRESS")
        return cls(sfn, resp["stateMachineArn"])

    def ask(self, req: AskRequest, owner: str = "anonymous", budget_s: float | None = None) -> Answer:
        """The execution's answer with `trace.execution` = {arn, states}; a rejected request raises InvalidRequest.
        `budget_s`: the request's deadline from now (API_DEADLINE_S), which every task spends from."""
        deadline = time.time() + budget_s if budget_s is not None else None
        ex = self.run(msgspec.to_builtins(ExecutionInput(req, owner, deadline)))
        log.info("statemachine.executed", status=ex.status, states=ex.states, ms=ex.ms)
        answer = answer_of(ex.arn, ex.status, ex.output, ex.error, ex.cause)
        answer.trace.execution = contracts.Execution(arn=ex.arn, states=ex.states)
        return answer


class IndexStateMachine(StateMachine):
    """The index build: Plan, the Distributed Map of embed workers, Commit (ADR 0120)."""

    @classmethod
    def create(cls, sfn: Any, definition: str, name: str = "assist-index-build") -> IndexStateMachine:
        resp = sfn.create_state_machine(name=name, definition=definition, roleArn=ROLE, type="STANDARD")
        return cls(sfn, resp["stateMachineArn"])

    def build(self, sources_file: str = "") -> dict[str, Any]:
        """Run one build of the sources file (default: SOURCES_FILE); the commit's report, or ExecutionFailed."""
        ex = self.run({"sources_file": sources_file} if sources_file else {}, BUILD_WAIT_S, pause_cap=0.5)
        log.info("statemachine.index_built", status=ex.status, states=ex.states, ms=ex.ms)
        if ex.status != "SUCCEEDED":
            raise ExecutionFailed(f"index build {ex.arn}: {ex.status} {ex.error}: {(ex.cause or '')[:500]}")
        return {**ex.output, "execution": {"arn": ex.arn, "states": ex.states}}


class ServerlessStack:
    """The five functions behind the local Lambda endpoint, and the state machines in the moto server."""

    def __init__(self, settings: Settings, moto_url: str, name: str = "assist-ask") -> None:
        self.settings = settings
        self.moto_url = moto_url
        self.name = name
        self.functions: dict[str, LambdaFunction] = {f: LambdaFunction(f, settings) for f in FUNCTIONS}
        self.endpoint: LambdaEndpoint | None = None
        self.machine: AskStateMachine | None = None
        self.index_machine: IndexStateMachine | None = None
        self._exit = contextlib.ExitStack()

    def start(self) -> ServerlessStack:
        by_name = {local_name(f): fn for f, fn in self.functions.items()}
        self.endpoint = self._exit.enter_context(_running(LambdaEndpoint(by_name, upstream=self.moto_url)))
        self._exit.enter_context(interpreter_calls(self.endpoint))
        enable_interpreter(self.moto_url)
        sfn = client("stepfunctions", self.settings)
        self.machine = AskStateMachine.create(sfn, local_definition(self.settings.aws.region), self.name)
        definition = local_definition(self.settings.aws.region, INDEX_ASL)
        self.index_machine = IndexStateMachine.create(sfn, definition, f"{self.name}-index-build")
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

    def build_index(self, sources_file: str) -> dict[str, Any]:
        """The index `settings.index.uri` built from the sources file by the index state machine."""
        assert self.index_machine is not None, "start() first"
        return self.index_machine.build(sources_file)

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
