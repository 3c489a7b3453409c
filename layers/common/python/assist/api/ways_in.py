"""The ways in besides /v1/ask (DESIGN.md §2b), registered on the answer app: the OpenAI-compatible
routes and the MCP server at /mcp. Imported only by the answer app, so the classify and retrieve
functions never load the MCP SDK."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from litestar import Request, asgi

from assist.api.identity import caller
from assist.api.mcp_server import OWNER_SCOPE_KEY, build_server, http_app
from assist.api.openai import chat_router

if TYPE_CHECKING:
    from assist.ask.engine import Engine
    from assist.contracts import AskRequest


def ways_in(engine: Engine, run_ask: Callable[[AskRequest, str], Any]) -> tuple[list[Any], list[Callable[..., Any]]]:
    """Route handlers and the lifespan they need. Plain completions and MCP `ask` answer through
    `run_ask`, as /v1/ask does (the state machine on the local stack and in the Ask function)."""
    settings = engine.settings
    handle, lifespan = http_app(build_server(engine, run_ask), local=settings.local_mode)

    @asgi("/mcp", copy_scope=False)
    async def mcp(scope: Any, receive: Any, send: Any) -> None:
        """MCP over streamable HTTP (stateless, JSON replies); the caller as on every other route."""
        scope[OWNER_SCOPE_KEY] = caller(Request(scope), settings)
        await handle(scope, receive, send)

    # The Ask function (behind API Gateway, which buffers) is the one with the state machine's ARN.
    streams = not settings.ask_state_machine_arn
    return [chat_router(engine, run_ask, streams=streams), mcp], [lifespan]
