"""The OpenAI Chat Completions wire format over the engine: `POST /v1/chat/completions` (plain and
streamed) and `GET /v1/models`. Translation only — the turn is `/v1/ask`'s (plain) or
`/v1/ask/stream`'s (streamed); see docs/ways-in.md and ADR 0047.

- The last message is the user's message; the session (stored by the engine) is the conversation,
  so a client resending its whole history adds one turn per request, never the history again.
- Session: the `X-Assist-Session` header, else the `user` field, else a stable hash of the caller
  and the conversation's first user message.
- Parameters that would change the reply's shape (`n` > 1, `tools`, `logprobs`, a non-text
  `response_format`) are a 400 naming the parameter; sampling knobs (`temperature`,
  `max_tokens`, `stop`, …) and unknown fields are ignored: the route's model slot decides.
- Errors use OpenAI's shape: {"error": {"message", "type", "param", "code"}}.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import TYPE_CHECKING, Annotated, Any

import anyio
import msgspec
from litestar import Request, Response, Router, get, post
from litestar.exceptions import (
    ClientException,
    HTTPException,
    NotAuthorizedException,
    SerializationException,
    ValidationException,
)
from litestar.response import ServerSentEvent

from assist.api.answers import EngineFields, cited, engine_fields, usage
from assist.api.identity import caller
from assist.contracts import Answer, AnswerEvent, AskRequest, DoneEvent, InvalidRequest, QueryType, TokenEvent, on_wire
from assist.errors import AssistError, problem
from assist.index.scope import KEYS as SCOPE_KEYS
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.api.idempotency import Idempotency
    from assist.ask.engine import Engine

log = get_logger(__name__)
MODEL = "assist"  # the one model a caller may name: the engine picks the model slot per message
SESSION_HEADER = "x-assist-session"
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    503: "service_unavailable_error",
}


class ChatMessage(msgspec.Struct):
    role: str
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None


class ChatRequest(msgspec.Struct):
    """What we read of a Chat Completions body; other fields are ignored (module docstring)."""

    model: str
    messages: Annotated[list[ChatMessage], msgspec.Meta(min_length=1)]
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    user: str | None = None
    # refused when they ask for what we cannot give
    n: int | None = None
    tools: list[Any] | None = None
    functions: list[Any] | None = None
    logprobs: bool | None = None
    response_format: dict[str, Any] | None = None
    #: OpenAI's string pairs; `product` and `version` among them scope the question (ADR 0121), others are ignored
    metadata: dict[str, str] | None = None
    # the engine's own fields (openai clients send them through `extra_body`)
    query_type: QueryType | None = None
    extra_context: str | None = None
    user_info: dict[str, Any] | None = None
    editor_content: str | None = None
    force_answer: bool | None = None


# -- what these routes write: OpenAI's bodies, field for field --------------------------------
class Usage(msgspec.Struct):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class Message(msgspec.Struct):
    role: str
    content: str


class Choice(msgspec.Struct):
    index: int
    message: Message
    finish_reason: str
    logprobs: None = None


class Completion(msgspec.Struct):
    """A `chat.completion`; `assist` holds the engine's own fields (`engine_fields`)."""

    id: str
    created: int
    choices: list[Choice]
    usage: Usage
    assist: EngineFields
    object: str = "chat.completion"
    model: str = MODEL


class Delta(msgspec.Struct, omit_defaults=True):
    role: str | None = None
    content: str | None = None


class ChunkChoice(msgspec.Struct):
    index: int
    delta: Delta
    finish_reason: str | None
    logprobs: None = None


class Chunk(msgspec.Struct, omit_defaults=True):
    """A `chat.completion.chunk`; `assist` on the first (the route) and the finishing one, `usage` on its own
    last chunk when asked."""

    id: str
    object: str  # "chat.completion.chunk" (every field without a default is written)
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: Usage | None = None
    assist: EngineFields | dict[str, Any] | None = None  # the first's: {"route": the route event as on the wire}


class ErrorDetail(msgspec.Struct):
    message: str
    type: str
    param: str | None
    code: str | None


class ErrorBody(msgspec.Struct):
    error: ErrorDetail


class OpenAIError(AssistError):
    """A request these routes refuse in OpenAI's terms: its status, the parameter at fault, its code."""

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.param, self.code = status, param, code


def chat_router(
    engine: Engine, run_ask: Callable[[AskRequest, str], Answer], keyed: Idempotency, streams: bool = True
) -> Router:
    """The two routes, with OpenAI's error shape. `run_ask` answers a plain completion (as /v1/ask does:
    the state machine on the local stack and in AWS); `keyed` honours Idempotency-Key on completions;
    `streams=False` where responses are buffered (the Ask function behind the HTTP API), so a streamed
    request is told where streaming is served."""
    settings = engine.settings

    @get("/models", summary="The models a caller may name (OpenAI wire format)")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [_model()]}

    @get("/models/{model_id:str}", summary="One model (OpenAI wire format)")
    async def model(model_id: str) -> dict[str, Any]:
        _check_model(model_id)
        return _model()

    @post("/chat/completions", status_code=200, summary="Answer the last user message (OpenAI Chat Completions)")
    async def completions(data: ChatRequest, request: Request) -> Response[Any]:
        chat, owner = data, caller(request, settings)
        ask = to_ask(chat, request.headers.get(SESSION_HEADER), owner)
        headers = {"X-Assist-Session": ask.session_id}
        body = {"chat": msgspec.to_builtins(chat), "session": ask.session_id}  # what a retry must send again
        if not chat.stream:
            answered = await anyio.to_thread.run_sync(keyed.once, request, owner, body, lambda: run_ask(ask, owner))
            return Response(completion(answered, ask.session_id), headers=headers)
        if not streams:
            raise OpenAIError(400, "stream: true is served by the stream URL (AskStreamUrl), not here", "stream")
        # Phase 1 before the response starts: bad input or a foreign session is a 4xx, not a chunk.
        events = await keyed.events(engine, request, ask, owner, body)
        first = await anext(events)
        usage = bool((chat.stream_options or {}).get("include_usage"))
        chunks = _chunks(first, events, ask.session_id, usage)
        return ServerSentEvent(chunks, headers=headers)

    return Router(
        "/v1",
        route_handlers=[models, model, completions],
        # every class the app maps too: the most specific handler wins, whatever its layer
        exception_handlers=dict.fromkeys((AssistError, ClientException, Exception), _error),
        tags=["OpenAI-compatible"],
    )


def to_ask(chat: ChatRequest, header_session: str | None, owner: str) -> AskRequest:
    """The engine's request for a chat body: the last message, the session, the engine's own fields."""
    _check_model(chat.model)
    _refuse_unsupported(chat)
    if chat.messages[-1].role != "user":
        raise OpenAIError(400, "the last message must be the user's (role: user): it is the one answered", "messages")
    last = len(chat.messages) - 1
    first = next(i for i, m in enumerate(chat.messages) if m.role == "user")
    session = header_session or chat.user or session_for(owner, _text(chat.messages[first], first))
    body = {
        "session_id": session,
        "message": _text(chat.messages[last], last),
        "query_type": chat.query_type,
        "extra_context": chat.extra_context,
        "user_info": chat.user_info,
        "editor_content": chat.editor_content,
        "force_answer": chat.force_answer,
        "scope": {k: v for k, v in (chat.metadata or {}).items() if k in SCOPE_KEYS} or None,
    }
    try:
        return msgspec.convert({k: v for k, v in body.items() if v is not None}, AskRequest)
    except msgspec.ValidationError as exc:
        where = "user" if "session_id" in str(exc) else "metadata" if "$.scope" in str(exc) else "messages"
        # the scope's fields are the caller's metadata keys: the message names them as sent
        message = _session_message(exc) if where == "user" else str(exc).replace("$.scope", "metadata")
        raise OpenAIError(400, message, where) from exc


def session_for(owner: str, first_message: str) -> str:
    """The session of a conversation that names none: the same caller and first message, the same session."""
    return "chat-" + hashlib.sha256(f"{owner}\n{first_message}".encode()).hexdigest()[:32]


def completion(answer: Answer, session_id: str) -> Completion:
    return Completion(
        id=f"chatcmpl-{answer.trace.request_id}",
        created=int(time.time()),
        choices=[Choice(0, Message("assistant", answer.answer + cited(answer.sources)), "stop")],
        usage=_usage(answer),
        assist=engine_fields(answer, session_id),
    )


async def _chunks(
    first: AnswerEvent,
    rest: AsyncGenerator[AnswerEvent, None],
    session_id: str,
    include_usage: bool,
) -> AsyncIterator[str]:
    """`chat.completion.chunk`s: the role (with the route event in `assist`), one per token, the sources
    footer, the finish (with the whole `assist` field), the usage when asked, then `[DONE]`."""
    chunk_id, now = f"chatcmpl-{session_id}-{int(time.time() * 1000)}", int(time.time())
    base = Chunk(chunk_id, "chat.completion.chunk", now, MODEL, choices=[])
    try:
        yield _sse(_chunk(base, Delta("assistant", ""), assist={"route": on_wire(first)[1]}))
        async for event in rest:
            if isinstance(event, TokenEvent):
                yield _sse(_chunk(base, Delta(content=event.text)))
            elif isinstance(event, DoneEvent):
                if footer := cited(event.answer.sources):
                    yield _sse(_chunk(base, Delta(content=footer)))
                yield _sse(_chunk(base, Delta(), "stop", engine_fields(event.answer, session_id)))
                if include_usage:
                    yield _sse(msgspec.structs.replace(base, usage=_usage(event.answer)))
    except Exception as exc:  # the status line is sent: a failure can only be an error chunk
        log.exception("openai.stream_failed", error=type(exc).__name__)
        yield _sse(_error_body(500, f"{type(exc).__name__}: the answer could not be completed"))
    finally:
        await rest.aclose()  # a client gone mid-stream: the engine closes the model stream and writes the turn
    yield "[DONE]"


def _chunk(
    base: Chunk, delta: Delta, finish: str | None = None, assist: EngineFields | dict[str, Any] | None = None
) -> Chunk:
    return msgspec.structs.replace(base, choices=[ChunkChoice(0, delta, finish)], assist=assist)


def _sse(body: Chunk | ErrorBody) -> str:
    """One `data:` line's JSON (the event stream adds `data: ` and the blank line)."""
    return msgspec.json.encode(body).decode()


def _usage(answer: Answer) -> Usage:
    """Token counts as the model reported them (zero when no model answered)."""
    reported = usage(answer)
    prompt, completion_ = int(reported.get("prompt_eval_count", 0)), int(reported.get("eval_count", 0))
    return Usage(prompt, completion_, prompt + completion_)


def _model() -> dict[str, Any]:
    return {"id": MODEL, "object": "model", "created": 0, "owned_by": "assist"}


def _check_model(name: str) -> None:
    if name != MODEL:
        message = f"The model `{name}` does not exist; GET /v1/models lists `{MODEL}`"
        raise OpenAIError(404, message, "model", "model_not_found")


def _refuse_unsupported(chat: ChatRequest) -> None:
    refused = [
        ("n", chat.n not in (None, 1), "one answer per request: n must be 1"),
        ("tools", bool(chat.tools), "tool calling is not supported: the engine answers from its docs"),
        ("functions", bool(chat.functions), "function calling is not supported: the engine answers from its docs"),
        ("logprobs", bool(chat.logprobs), "logprobs are not available"),
        (
            "response_format",
            (chat.response_format or {}).get("type", "text") != "text",
            "only text answers (response_format type text) are supported",
        ),
    ]
    for param, bad, why in refused:
        if bad:
            raise OpenAIError(400, f"unsupported parameter {param}: {why}", param, "unsupported_parameter")


def _text(message: ChatMessage, index: int) -> str:
    """A message's text: a string, or text content parts joined."""
    if isinstance(message.content, str):
        return message.content
    parts = message.content or []
    if any(p.get("type") != "text" for p in parts):
        raise OpenAIError(400, "only text content parts are supported", f"messages[{index}].content")
    return "\n".join(str(p.get("text", "")) for p in parts)


def _session_message(exc: Exception) -> str:
    return f"the session (X-Assist-Session header or `user` field) must be 1-128 of letters, digits and _ . : - ({exc})"


def _error_body(status: int, message: str, param: str | None = None, code: str | None = None) -> ErrorBody:
    kind = ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return ErrorBody(ErrorDetail(message, kind, param, code))


def _error(request: Request, exc: Exception) -> Response[ErrorBody]:
    """Every failure of these routes in OpenAI's shape, with the status the rest of the API gives it."""
    headers: dict[str, str] = {}
    if isinstance(exc, NotAuthorizedException):
        headers.update(exc.headers or {})  # the WWW-Authenticate challenge
        body = _error_body(401, str(exc.detail), code="no_caller_identity")
        return Response(body, status_code=401, headers=headers)
    if isinstance(exc, ValidationException):  # the body's shape: litestar names the field in `extra`
        problems = exc.extra if isinstance(exc.extra, list) else []
        message = "; ".join(f"{p.get('key', 'body')}: {p.get('message')}" for p in problems) or exc.detail
        return Response(_error_body(400, message, problems[0].get("key") if problems else None), status_code=400)
    if isinstance(exc, HTTPException):  # invalid JSON comes here, as a 400
        message = str(exc.detail)
        if isinstance(exc.__cause__, SerializationException):
            message = f"request body is not valid JSON: {exc.detail}"
        return Response(_error_body(exc.status_code, message), status_code=exc.status_code, headers=exc.headers)
    p = problem(exc)
    if p["status"] == 500:
        log.exception("openai.unhandled", path=request.url.path, error=type(exc).__name__)
    if p["retry_after_s"]:
        headers["Retry-After"] = str(p["retry_after_s"])
    # a request the engine refuses is about the messages, unless these routes named the parameter
    param = exc.param if isinstance(exc, OpenAIError) else "messages" if isinstance(exc, InvalidRequest) else None
    return Response(_error_body(p["status"], p["detail"], param, p["code"]), status_code=p["status"], headers=headers)
