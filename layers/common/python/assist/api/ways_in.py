"""The ways in besides /v1/ask (docs/ways-in.md, ADR 0047), registered on the answer app: the OpenAI-compatible
routes and the MCP server at /mcp. Imported only by the answer app, so the classify and retrieve
functions never see them; the MCP SDK (2–4 s of imports here) is loaded by the first /mcp call, not
by the answer function's cold start (ADR 0047)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
from litestar import Request, asgi
from litestar.exceptions import MethodNotAllowedException, NotFoundException

from assist.api.identity import OWNER_SCOPE_KEY, caller
from assist.api.openai import chat_router

if TYPE_CHECKING:
    from anyio.abc import TaskGroup, TaskStatus

    from assist.api.idempotency import Idempotency
    from assist.ask.engine import Engine
    from assist.contracts import Answer, AskRequest


def ways_in(
    engine: Engine, run_ask: Callable[[AskRequest, str], Answer], keyed: Idempotency
) -> tuple[list[Any], list[Callable[..., Any]]]:
    """Route handlers and the lifespan they need. Plain completions and MCP `ask` answer through
    `run_ask`, as /v1/ask does (the state machine on the local stack and in the Ask function);
    completions honour Idempotency-Key through `keyed`, as /v1/ask does."""
    settings = engine.settings
    server = LazyMCP(lambda: _mcp_handler(engine, run_ask, settings.api.local_mode))

    @asgi("/mcp", copy_scope=False)
    async def mcp(scope: Any, receive: Any, send: Any) -> None:
        """MCP over streamable HTTP (stateless, JSON replies); the caller as on every other route."""
        scope[OWNER_SCOPE_KEY] = caller(Request(scope), settings)
        await server(scope, receive, send)

    # The Ask function (behind API Gateway, which buffers) is the one with the state machine's ARN.
    streams = not settings.api.ask_state_machine_arn
    return [chat_router(engine, run_ask, keyed, streams=streams), mcp], [server.lifespan]


def _mcp_handler(engine: Engine, run_ask: Callable[[AskRequest, str], Answer], local: bool) -> Any:
    # deferred, ADR 0104: the MCP SDK, 0.50 s, on the first request to /mcp
    from assist.api.mcp_server import build_server, session_manager

    return session_manager(build_server(engine, run_ask), local)


class LazyMCP:
    """The MCP transport, built and started by its first request inside the app's lifespan (where its
    session manager must run), so an app that never serves /mcp never imports the SDK."""

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build = build
        self._handle: Callable[..., Any] | None = None
        self._lock = anyio.Lock()
        self._tasks: TaskGroup | None = None

    @asynccontextmanager
    async def lifespan(self, _app: Any) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                yield
            finally:
                self._tasks = None
                tasks.cancel_scope.cancel()  # ends the session manager's run, if one started

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("method") == "GET":  # stateless: no server-initiated stream, so no GET held open forever
            raise MethodNotAllowedException(
                "POST JSON-RPC messages to /mcp (streamable HTTP, stateless): no GET stream"
            )
        if self._handle is None:
            async with self._lock:
                if self._handle is None:
                    if self._tasks is None:  # no lifespan: mangum behind API Gateway, which does not route /mcp
                        raise NotFoundException("MCP is served by the answer container and the local stack at /mcp")
                    manager = await anyio.to_thread.run_sync(self._build)  # the SDK's imports, off the event loop
                    await self._tasks.start(self._run, manager)
                    self._handle = manager.handle_request
        await self._handle(scope, receive, send)

    @staticmethod
    async def _run(manager: Any, *, task_status: TaskStatus[None]) -> None:
        async with manager.run():
            task_status.started()
            await anyio.sleep_forever()
