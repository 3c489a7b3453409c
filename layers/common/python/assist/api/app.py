"""The HTTP API (litestar). Handlers parse, call the engine, shape the reply; nothing else."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
from litestar import Litestar, Request, Response, get, post
from litestar.exceptions import ClientException, HTTPException, SerializationException, ValidationException
from litestar.openapi import OpenAPIConfig
from litestar.params import Parameter
from litestar.response import ServerSentEvent, ServerSentEventMessage
from litestar.status_codes import HTTP_400_BAD_REQUEST, HTTP_500_INTERNAL_SERVER_ERROR, HTTP_503_SERVICE_UNAVAILABLE

from assist.api.admin import require_admin
from assist.api.body_limits import BodyLimits
from assist.api.feedback import feedback_routes
from assist.api.idempotency import Idempotency
from assist.api.identity import VISITOR_SCOPE_KEY, caller, token_guard
from assist.api.insights import insights_routes
from assist.api.schema import WireSchema
from assist.api.ways_in import ways_in
from assist.contracts import (
    SESSION_ID_PATTERN,
    Answer,
    AnswerEvent,
    AskRequest,
    ErrorEvent,
    Event,
    InvalidRequest,
    Transcript,
    check_ask,
    on_wire,
)
from assist.errors import AssistError, problem
from assist.logs import get_logger
from assist.tables.base import StoreUnavailable

if TYPE_CHECKING:
    from assist.api.widget import Widget
    from assist.ask.engine import Engine
    from assist.doctor import Report
    from assist.settings import Settings

log = get_logger(__name__)


def create_app(engine: Engine, ask_via: Callable[[AskRequest, str], Answer] | None = None) -> Litestar:
    """`ask_via(request, owner)` answers /v1/ask another way than `engine.ask` (the local stack: through
    the state machine)."""
    settings = engine.settings
    answer = ask_via or (lambda data, owner: engine.ask(data, owner=owner))
    keyed = Idempotency(settings)  # Idempotency-Key on the routes that store a turn

    def run_ask(data: AskRequest, owner: str) -> Answer:
        check_ask(data, settings)  # here, not in the first task: a state machine never starts on a request it refuses
        return answer(data, owner)

    @post("/v1/ask", sync_to_thread=True, status_code=200, summary="Answer one message of a session")
    def ask(data: AskRequest, request: Request) -> Answer:
        owner = caller(request, settings)
        return keyed.once(request, owner, msgspec.to_builtins(data), lambda: run_ask(data, owner))

    @post(
        "/v1/ask/stream",
        status_code=200,
        opt={"visitor": True},
        summary="Answer as Server-Sent Events: route, token…, done (or error)",
    )
    async def ask_stream(data: AskRequest, request: Request) -> ServerSentEvent:
        # Phase 1 runs before the stream opens: bad input or a foreign session is a 4xx, not an event.
        owner = caller(request, settings)
        site = None
        if VISITOR_SCOPE_KEY in request.scope:  # a widget visitor: its limits before any work (docs/widget.md)
            check_ask(data, settings)  # bad input costs no question of the visitor's
            site = await widget.admit(request, data)
        events = await keyed.events(engine, request, data, owner, msgspec.to_builtins(data), site=site)
        # Phase 2 runs to its route event here, so the model's request is on its way while the
        # response starts (ADR 0037).
        return ServerSentEvent(_events(await anext(events), events, widget.visible if site is not None else None))

    @get(
        "/v1/sessions/{session_id:str}",
        sync_to_thread=True,
        opt={"visitor": True},
        summary="A session's turns and intents, for its owner",
    )
    def session(session_id: str, request: Request) -> Transcript:
        if not re.match(SESSION_ID_PATTERN, session_id):
            raise InvalidRequest("session_id must be 1-128 of letters, digits and _ . : -")
        return engine.transcript(session_id, caller(request, settings))

    # deferred, ADR 0104: the answer app's alone; the classify and retrieve apps, which share `service`, never load
    # the chat page and the widget's rules (0.045 s; tests/integration/test_web_page.py)
    from assist.api.web import chat_routes
    from assist.api.widget import Widget

    # visitor tokens, CORS for site keys' origins, limits (docs/widget.md), through the gate the engine meters
    # visitors' model calls with
    widget = Widget(settings, engine.gate())
    extra, lifespan = ways_in(engine, run_ask, keyed)
    routes = [ask, ask_stream, session, *feedback_routes(engine), *insights_routes(engine), *extra]
    routes += [*chat_routes(settings.widget.stream_url), *widget.routes()]
    return service(routes, settings, lifespan=lifespan, deep=lambda: _doctor(engine), widget=widget)


def _doctor(engine: Engine) -> Report:
    """What /healthz?deep=1 reports (`assist doctor`'s checks)."""
    # deferred, ADR 0104: 0.07 s here, and the doctor loads lancedb and httpx to look at the index and the hosts; only
    # /healthz?deep=1 needs them (the Ask function, answering through the state machine, never opens the index)
    from assist.doctor import doctor

    return doctor(engine.settings, engine.embedder)


def service(
    route_handlers: list[Any],
    settings: Settings,
    title: str = "Assistance engine",
    lifespan: list[Callable[..., Any]] | None = None,
    deep: Callable[[], Report] | None = None,
    widget: Widget | None = None,
) -> Litestar:
    """A litestar app with the given routes plus /healthz, the API's error replies, its OpenAPI schema and
    the body limits every route shares. `deep`: what `/healthz?deep=1` reports to an admin (`assist doctor`);
    `widget`: its CORS and its guard of visitor tokens (first)."""
    guards: list[Any] = [widget.guard] if widget is not None else []
    if settings.jwt.jwks_url:
        guards.append(token_guard(settings))  # verified identity (ADR 0050)

    @get(
        "/healthz",
        summary="Liveness and readiness; ?deep=1: the model hosts, embedder and index (admin)",
        opt={"public": True},
    )
    async def healthz(request: Request, deep_check: bool = Parameter(query="deep", default=False)) -> dict[str, Any]:
        if not deep_check:
            return {"status": "ok"}
        if deep is None:
            raise ClientException("deep checks are served by the answer app")
        require_admin(request, settings)  # the report names hosts and models: for operators only
        result = await anyio.to_thread.run_sync(deep)
        return {"status": "ok" if result.ok else "degraded", **msgspec.to_builtins(result)}

    return Litestar(
        route_handlers=[*route_handlers, healthz],
        exception_handlers={
            AssistError: _unexpected,
            ValidationException: _validation,
            ClientException: _client_error,
            Exception: _unexpected,
        },
        middleware=[*([widget.cors()] if widget is not None else []), BodyLimits(settings.api.max_body_bytes)],
        guards=guards,
        openapi_config=OpenAPIConfig(title=title, version="1.0.0", path="/schema"),  # the token guard leaves it open
        plugins=[WireSchema()],
        lifespan=lifespan or [],
        debug=False,
    )


async def _events(
    first: AnswerEvent,
    rest: AsyncGenerator[AnswerEvent, None],
    seen_as: Callable[[AnswerEvent], Event | None] | None = None,
) -> AsyncIterator[ServerSentEventMessage]:
    """The stream's messages; through `seen_as` when the caller sees less (a widget visitor: without the trace's
    internals, widget/events.py)."""

    def shown(event: AnswerEvent) -> ServerSentEventMessage | None:
        seen = seen_as(event) if seen_as is not None else event
        return None if seen is None else _message(seen)

    try:
        if (message := shown(first)) is not None:
            yield message
        async for event in rest:
            if (message := shown(event)) is not None:
                yield message
    except Exception as exc:  # the status line is already sent: a failure can only be an event
        log.exception("api.stream_failed", error=type(exc).__name__)
        yield _message(ErrorEvent(_safe_detail(exc, anonymous=seen_as is not None)))
    finally:
        await rest.aclose()  # a client gone mid-stream: phase 2 closes the model stream and writes the turn


def _message(event: Event) -> ServerSentEventMessage:
    name, payload = on_wire(event)
    return ServerSentEventMessage(event=name, data=msgspec.json.encode(payload).decode())


def _safe_detail(exc: Exception, anonymous: bool) -> str:
    if isinstance(exc, InvalidRequest) or (isinstance(exc, StoreUnavailable) and not anonymous):
        return str(exc)
    if anonymous:
        return _withheld(exc, str(exc))
    return f"{type(exc).__name__}: the answer could not be completed"


def _anonymous(request: Request) -> bool:
    """A caller nobody identified: a widget visitor, or the public session route's (a failure's details, which
    can name an endpoint or a table, are not for them)."""
    return request.scope.get(VISITOR_SCOPE_KEY) is not None or bool(request.route_handler.opt.get("public"))


def _withheld(exc: BaseException, detail: str) -> str:
    """What an anonymous caller is told of a failure: that it happened, and the request id the log keeps its
    details under."""
    request_id = uuid.uuid4().hex
    log.warning("api.failure_withheld", request_id=request_id, error=type(exc).__name__, detail=detail[:500])
    return f"the service is unavailable; retry shortly (request {request_id})"


def _validation(request: Request, exc: ValidationException) -> Response[dict[str, Any]]:
    return Response({"status_code": 400, "detail": exc.detail, "extra": exc.extra}, status_code=HTTP_400_BAD_REQUEST)


def _client_error(request: Request, exc: ClientException) -> Response[dict[str, Any]]:
    detail = exc.detail
    if isinstance(exc.__cause__, SerializationException):
        detail = f"request body is not valid JSON: {exc.detail}"
    body = {"status_code": exc.status_code, "detail": detail}
    return Response(body, status_code=exc.status_code, headers=exc.headers)  # a 401's WWW-Authenticate


def _unexpected(request: Request, exc: Exception) -> Response[dict[str, Any]]:
    """Our own errors (`problem`: the status, reason and retry time they carry) and anything unforeseen (a 500)."""
    if isinstance(exc, HTTPException):
        return Response(
            {"status_code": exc.status_code, "detail": exc.detail}, status_code=exc.status_code, headers=exc.headers
        )
    p = problem(exc)
    if p["status"] == HTTP_500_INTERNAL_SERVER_ERROR:
        log.exception("api.unhandled", path=request.url.path, error=type(exc).__name__)
    if p["status"] == HTTP_503_SERVICE_UNAVAILABLE and _anonymous(request):
        p["detail"] = _withheld(exc, p["detail"])
    body = {"status_code": p["status"], "detail": p["detail"]} | ({"reason": p["reason"]} if p["reason"] else {})
    headers = {"Retry-After": str(p["retry_after_s"])} if p["retry_after_s"] else {}
    return Response(body, status_code=p["status"], headers=headers)
