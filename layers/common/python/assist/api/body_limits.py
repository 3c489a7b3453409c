"""Every request body is bounded before anything decodes it: its size in bytes, its encoding, its JSON nesting.

One middleware on every app (`service`), so each route — and any ASGI app mounted under one —
gets the same limits without a check of its own (ADR 0043). The JSON decoder recurses once
per level, so a body of a few thousand nested arrays would otherwise end in RecursionError,
a 500, wherever it sits, even in a field the route rejects as unknown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from litestar.enums import ScopeType
from litestar.exceptions.http_exceptions import RequestEntityTooLarge
from litestar.middleware import ASGIMiddleware

from assist.contracts import InvalidRequest

if TYPE_CHECKING:
    from litestar.types import ASGIApp, Receive, Scope, Send

#: deep enough for any request of ours (an OpenAI chat body, an MCP call, a user_info object), far
#: below the decoder's recursion limit; not a setting, so clients can rely on it
MAX_JSON_DEPTH = 32
_NOT_BRACKET = bytes(c for c in range(256) if c not in b"[]{}")
_ONE_KIND = bytes.maketrans(b"{}", b"[]")  # a pass removes one level only if every pair looks alike


def nesting_exceeds(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when the JSON text nests arrays/objects more than `limit` deep (brackets inside strings don't count).

    Only bytes methods, no loop per byte: escapes are dropped (an escaped backslash first), so every quote
    left opens or closes a string and every other piece of the split lies outside one. Each pass then
    removes the innermost pairs, one level; what is left are brackets never closed, each a level around
    what follows. A mebibyte of brackets takes tens of milliseconds, less than decoding it (ADR 0043)."""
    if body.count(b"[") + body.count(b"{") <= limit:  # most bodies: no scan at all
        return False
    outside = b"".join(body.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')[::2])
    brackets = outside.translate(_ONE_KIND, _NOT_BRACKET)
    if 2 * brackets.count(b"[") - len(brackets) > limit:  # that many are never closed: no need to pair the rest
        return True
    levels = 0
    while levels <= limit:
        inner = brackets.replace(b"[]", b"")
        if len(inner) == len(brackets):
            break
        brackets, levels = inner, levels + 1
    return levels + brackets.count(b"[") > limit


def check_body(body: bytes) -> None:
    """JSON is UTF-8 (RFC 8259), and the decoder fails on anything else with an error of its own; then depth."""
    try:
        body.decode()
    except UnicodeDecodeError as exc:
        raise InvalidRequest(
            f"request body is not UTF-8: byte {body[exc.start]:#04x} at position {exc.start}"
        ) from None
    if nesting_exceeds(body):
        raise InvalidRequest(f"JSON nesting deeper than {MAX_JSON_DEPTH} levels")


def _too_large(size: int, limit: int, whole: bool = True) -> RequestEntityTooLarge:
    return RequestEntityTooLarge(
        detail=f"request body is {'' if whole else 'more than '}{size} bytes; the limit is {limit}"
    )


class BodyLimits(ASGIMiddleware):
    """Reads the body (refusing it once past `max_bytes`), checks it, and hands it on unchanged."""

    scopes = (ScopeType.HTTP,)

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        announced = dict(scope["headers"]).get(b"content-length", b"")
        if announced.isdigit() and int(announced) > self.max_bytes:  # refused before a byte is read
            raise _too_large(int(announced), self.max_bytes)
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client left: nothing to answer
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
            if size > self.max_bytes:
                raise _too_large(size, self.max_bytes, whole=not more)
        body = b"".join(chunks)
        check_body(body)
        await next_app(scope, _replay(body, receive), send)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body as one message, then the connection's own messages (a stream waits on its disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Any:
        return pending.pop() if pending else await receive()

    return replay
