"""One Lambda entry point per function, shared by all five.

`handler(event, context)` sends API Gateway (and function URL) events through mangum to the
function's litestar app, EventBridge schedules and Step Functions task payloads (plain JSON)
to the function's task. The same object serves the app to uvicorn as `app`, so a function
runs unchanged as a Lambda, as a state machine task, or as a plain HTTP container.

Heavy parts (DynamoDB client, LanceDB table, embedder, model clients, the web framework)
are built on first use and kept for the life of the container — not at import, so an
invocation pays only for what it touches, and not in lifespan hooks, which mangum runs on
every invocation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
from mangum import Mangum

from assist.aws.clients import client
from assist.build.event import BuildEvent
from assist.contracts import InvalidRequest, TurnState
from assist.deadline import TASK_RESERVE_S
from assist.lazy import Lazy
from assist.logs import bound, configure, get_logger
from assist.serverless import tasks
from assist.serverless.execution import SyncAsk
from assist.settings import Settings

if TYPE_CHECKING:
    from assist.ask.engine import Engine

log = get_logger(__name__)
FUNCTIONS = ("classify", "retrieve", "answer", "export", "sync")
ASGIApp = Callable[..., Any]


@dataclass(frozen=True)
class Task:
    """A function's task: its input decoded from the payload, and what it runs (function, input, end); `end` is
    when the invocation's context runs out (epoch seconds)."""

    decode: Callable[[Any], Any]
    run: Callable[[LambdaFunction, Any, float | None], Any]


def _input(kind: type[Any]) -> Callable[[Any], Any]:
    return lambda payload: tasks.decode(payload, kind)


TASKS = {
    "classify": Task(tasks.execution, lambda fn, given, end: tasks.classify(fn.engine.get(), given, end)),
    "retrieve": Task(_input(TurnState), lambda fn, state, end: tasks.retrieve(fn.engine.get(), state, end)),
    "answer": Task(_input(tasks.CaughtTurn), lambda fn, turn, end: tasks.answer(fn.engine.get(), turn, end)),
    "export": Task(_input(tasks.ExportEvent), lambda fn, event, end: tasks.export(fn.settings, event)),
    "sync": Task(_input(BuildEvent), lambda fn, event, end: tasks.sync(fn.settings, event, end)),
}


def _http_app(fn: LambdaFunction) -> ASGIApp:
    # deferred, ADR 0104: the web framework and the routes, 0.14 s, which a function invoked by the state machine
    # or a schedule never uses
    from assist.serverless import routes

    apps: dict[str, Callable[[], ASGIApp]] = {
        "classify": lambda: routes.classify_app(fn.engine.get()),
        "retrieve": lambda: routes.retrieve_app(fn.engine.get()),
        "answer": lambda: routes.answer_app(fn.engine.get(), _sync_ask(fn.settings)),
        "export": lambda: routes.export_app(fn.settings),
        "sync": lambda: routes.sync_app(fn.settings),
    }
    return apps[fn.name]()


def _sync_ask(settings: Settings) -> Callable[[Any, str], Any] | None:
    """The Ask function (the answer image with ASK_STATE_MACHINE_ARN) runs /v1/ask through the state machine."""
    if not settings.api.ask_state_machine_arn:
        return None
    # read timeout past the state machine's own TimeoutSeconds; one attempt: a retry would start a second execution
    sfn = client("stepfunctions", settings, read_timeout=settings.api.deadline_s + 5, attempts=1)
    return SyncAsk(sfn, settings.api.ask_state_machine_arn, settings.api.deadline_s)


def is_http_event(event: Any) -> bool:
    """API Gateway REST/HTTP API and function URL events carry a requestContext; task payloads never do."""
    return isinstance(event, dict) and "requestContext" in event


class LazyASGI:
    """An ASGI app built on its first event (a request, or uvicorn's lifespan start)."""

    def __init__(self, build: Callable[[], ASGIApp]) -> None:
        self._app = Lazy(build)

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        await self._app.get()(scope, receive, send)


class LambdaFunction:
    def __init__(self, name: str, settings: Settings) -> None:
        if name not in FUNCTIONS:
            raise ValueError(f"unknown function {name!r}; expected one of {', '.join(FUNCTIONS)}")
        self.name = name
        self.settings = settings
        self.engine: Lazy[Engine] = Lazy(self._build_engine)
        self.app = LazyASGI(lambda: _http_app(self))
        self._mangum = Lazy(self._build_mangum)

    @classmethod
    def from_env(cls, name: str) -> LambdaFunction:
        settings = Settings.from_env()
        configure(settings)
        return cls(name, settings)

    def handler(self, event: Any, context: Any = None) -> Any:
        if is_http_event(event):
            return self._mangum.get()(event, context)
        if not isinstance(event, dict):
            raise InvalidRequest(f"a task payload is a JSON object, not {type(event).__name__}")
        return self.task(event, context)

    def task(self, payload: dict[str, Any], context: Any = None) -> dict[str, Any]:
        """Run this function's state machine task on a JSON payload; errors keep their class name. With a Lambda
        context, the task's stages also end where its remaining time does (`assist.deadline`)."""
        start = time.perf_counter()
        end = None
        if remaining := getattr(context, "get_remaining_time_in_millis", None):
            end = time.time() + remaining() / 1000 - TASK_RESERVE_S
        task = TASKS[self.name]
        with bound(function=self.name, request_id=payload.get("request_id")):
            try:
                out = msgspec.to_builtins(task.run(self, task.decode(payload), end))
            except Exception as exc:
                log.warning("task.failed", error=type(exc).__name__, detail=str(exc)[:300])
                if tasks.is_transient(exc):
                    raise tasks.TransientError(f"{type(exc).__name__}: {exc}") from exc
                raise
            log.info("task.completed", ms=round((time.perf_counter() - start) * 1000, 2))
        return out

    def warm(self) -> None:
        """Build what the first task would (the local stack calls it before it says it is ready)."""
        if self.name == "retrieve":
            self.engine.get().warm()

    def _build_engine(self) -> Engine:
        # deferred, ADR 0104: the engine and its parts' modules, 0.04 s, which the export and sync functions never
        # use; DynamoDB's client (boto3) comes with the first store call
        from assist.ask.build import build_engine

        return build_engine(self.settings)

    def _build_mangum(self) -> Any:
        return Mangum(self.app, lifespan="off")
