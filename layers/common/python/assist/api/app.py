"""The HTTP API (litestar). Handlers parse, call the engine, shape the reply; nothing else."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from litestar import Litestar, Request, Response, get, post
from litestar.exceptions import ClientException, HTTPException, SerializationException, ValidationException
from litestar.openapi import OpenAPIConfig
from litestar.status_codes import HTTP_400_BAD_REQUEST, HTTP_500_INTERNAL_SERVER_ERROR

from assist.contracts import Answer, AskRequest, InvalidRequest
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.ask.engine import Engine

log = get_logger(__name__)


def create_app(engine: Engine, ask_via: Callable[[AskRequest], Any] | None = None) -> Litestar:
    """`ask_via` answers /v1/ask another way than `engine.ask` (the local stack: through the state machine)."""
    run_ask = ask_via or engine.ask

    @post("/v1/ask", sync_to_thread=True, status_code=200, summary="Answer one message of a session")
    def ask(data: AskRequest) -> Answer:
        return run_ask(data)

    return service([ask])


def service(route_handlers: list[Any], title: str = "Assistance engine") -> Litestar:
    """A litestar app with the given routes plus /healthz, the API's error replies and its OpenAPI schema."""

    @get("/healthz", summary="Liveness and readiness")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return Litestar(
        route_handlers=[*route_handlers, healthz],
        exception_handlers={
            InvalidRequest: _bad_request,
            ValidationException: _validation,
            ClientException: _client_error,
            Exception: _unexpected,
        },
        openapi_config=OpenAPIConfig(title=title, version="1.0.0"),
        debug=False,
    )


def _bad_request(request: Request, exc: InvalidRequest) -> Response[dict[str, Any]]:
    return Response({"status_code": 400, "detail": str(exc)}, status_code=HTTP_400_BAD_REQUEST)


def _validation(request: Request, exc: ValidationException) -> Response[dict[str, Any]]:
    return Response({"status_code": 400, "detail": exc.detail, "extra": exc.extra}, status_code=HTTP_400_BAD_REQUEST)


def _client_error(request: Request, exc: ClientException) -> Response[dict[str, Any]]:
    detail = exc.detail
    if isinstance(exc.__cause__, SerializationException):
        detail = f"request body is not valid JSON: {exc.detail}"
    return Response({"status_code": exc.status_code, "detail": detail}, status_code=exc.status_code)


def _unexpected(request: Request, exc: Exception) -> Response[dict[str, Any]]:
    if isinstance(exc, HTTPException):
        return Response(
            {"status_code": exc.status_code, "detail": exc.detail}, status_code=exc.status_code, headers=exc.headers
        )
    log.exception("api.unhandled", path=request.url.path, error=type(exc).__name__)
    return Response(
        {"status_code": 500, "detail": "internal error; see the server log"}, status_code=HTTP_500_INTERNAL_SERVER_ERROR
    )
