"""The widget's side of the answer app (docs/widget.md): visitor tokens, CORS for the site keys' origins, the
limits before any work, and the admin routes of site keys.

- `POST /v1/widget/session {"key"}` from a page of one of the key's origins gives a visitor token (ADR 0088);
  any other origin, an unknown or revoked key: 403, nothing signed.
- The guard of every route (before the body is read): a request carrying a visitor token is let through only
  to `/v1/ask/stream`, `/v1/sessions/{id}` and its feedback, from the origin the token was issued to, while its
  key is active, on a session of its own visitor; its caller is then `visitor:<id>`.
- Every widget request counts against its address before anything else is looked at, whether it is then refused
  or not (ADR 0118): in the guard (a visitor token's key; for the session route, the `?key=` the widget sends),
  and for a preflight in the CORS middleware. A wrong origin, an invalid body, another visitor's session, a token
  on a route that is not the widget's: each is one request of the address.
- The address is the platform's record of it (widget/address.py, ADR 0092), never a header the client wrote.
- CORS: a preflight names its key in the query (`?key=pk_…`, as the widget sends every request); it is granted
  only to that key's origins. An answer carries `Access-Control-Allow-Origin` only when the request's origin
  passed the key's check.
- Before a visitor's question is classified: the limits (widget/gate.py); each model call of its turn then
  counts on the key's daily model budget (`Gate.spend`, through the engine's gate, `Engine.gate`).
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import anyio
import msgspec
from litestar import Request, delete, get, post
from litestar.enums import ScopeType
from litestar.exceptions import NotAuthorizedException
from litestar.middleware import ASGIMiddleware

from assist.api.admin import require_admin
from assist.api.identity import VISITOR_SCOPE_KEY, caller
from assist.contracts import AnswerEvent, Event, InvalidRequest, Site
from assist.index.scope import narrowed
from assist.logs import get_logger
from assist.widget import keys
from assist.widget.address import Addresses
from assist.widget.denied import DeniedVisitors
from assist.widget.events import for_visitor
from assist.widget.gate import Gate, TooManyRequests, WidgetRefused
from assist.widget.signing import SigningKeys
from assist.widget.tokens import (
    BadVisitorToken,
    Visitor,
    is_visitor_token,
    issue,
    new_visitor_id,
    token_kid,
    verify,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from litestar.connection import ASGIConnection
    from litestar.handlers import BaseRouteHandler
    from litestar.types import ASGIApp, Receive, Scope, Send

    from assist.contracts import AskRequest
    from assist.settings import Settings
    from assist.widget.store.store import SiteKey, WidgetStore

log = get_logger(__name__)
CORS_SCOPE_KEY = "assist.cors_origin"  # the origin a widget request was checked for: its answer may be read there
COUNTED_SCOPE_KEY = "assist.counted_key"  # the site key a request was counted on, on its address: once a request
#: the paths a widget's page calls; a preflight to any of them is answered here
WIDGET_PATHS = re.compile(r"^/v1/(widget/session|ask/stream|sessions/[^/]+(/turns/[^/]+/feedback)?)$")
ALLOW_HEADERS = "authorization, content-type, idempotency-key, x-assist-page"
MAX_PAGE_CHARS = 2048
#: what a visitor may not send: the platform's own fields (account data, a declared type, editor content)
PLATFORM_FIELDS = ("query_type", "extra_context", "user_info", "editor_content")


class SessionRequest(msgspec.Struct, forbid_unknown_fields=True):
    key: str


class Widget:
    def __init__(self, settings: Settings, gate: Gate) -> None:
        self.settings = settings
        self.gate = gate  # the engine's (`Engine.gate`): the one its meter spends on
        self.store: Callable[[], WidgetStore] = gate.store
        self.addresses = Addresses(settings.widget)
        self.signing = SigningKeys(settings)
        self.denied = DeniedVisitors(self.store, settings.widget.key_cache_s)

    @staticmethod
    def visible(event: AnswerEvent) -> Event | None:
        """A stream event as a visitor receives it, None when it receives none of it (ADR 0093)."""
        return for_visitor(event)

    # -- the guard: visitor tokens ------------------------------------------------------
    async def guard(self, connection: ASGIConnection, handler: BaseRouteHandler) -> None:
        scheme, _, token = connection.headers.get("authorization", "").partition(" ")
        token, ip = token.strip(), self.addresses.of(connection.scope)
        origin = connection.headers.get("origin")
        if scheme.lower() != "bearer" or not is_visitor_token(token):
            if handler.opt.get("public") and handler.opt.get("visitor"):  # the session route, before its body
                key = _query_key(connection.scope)
                self._readable(connection.scope, key, origin)
                await anyio.to_thread.run_sync(self.gate.enter, key, ip)
                connection.scope[COUNTED_SCOPE_KEY] = key  # type: ignore[literal-required]
            return  # not a visitor: the app's other checks decide
        if not handler.opt.get("visitor"):
            await anyio.to_thread.run_sync(self.gate.enter, None, ip)
            raise WidgetRefused(
                "a visitor token is accepted only by the widget's routes: /v1/ask/stream, "
                "/v1/sessions/{id} and its feedback, /v1/widget/session"
            )
        self._readable(connection.scope, _query_key(connection.scope), origin)  # a 401 too: the widget renews on it
        visitor = await anyio.to_thread.run_sync(self._verified, token, ip)
        if origin == visitor.origin:
            self._readable(connection.scope, visitor.key, origin)
        await anyio.to_thread.run_sync(self._admitted, visitor, origin, ip)
        connection.scope[COUNTED_SCOPE_KEY] = visitor.key  # type: ignore[literal-required]
        session = connection.path_params.get("session_id")
        if session is not None and not visitor.owns(session):
            raise WidgetRefused(f"session {session[:128]!r} is not this visitor's")
        connection.scope[VISITOR_SCOPE_KEY] = visitor  # type: ignore[literal-required]

    def _verified(self, token: str, ip: str) -> Visitor:
        try:
            ring = self.signing.ring(token_kid(token))  # a key another process read first is read here too
            return verify(ring, token, self.settings.widget.token_ttl_s, _clock())
        except BadVisitorToken as exc:
            self.gate.enter(None, ip)  # a token this engine did not sign names no key to count on
            raise NotAuthorizedException(
                str(exc), headers={"WWW-Authenticate": 'Bearer error="invalid_token"'}
            ) from exc

    def _admitted(self, visitor: Visitor, origin: str | None, ip: str) -> None:
        """The visitor's request counted on its address, then its key, origin and standing checked."""
        site = self.gate.enter(visitor.key, ip)
        if visitor.id in self.denied:
            log.info("widget.visitor_denied", visitor=visitor.id, key=visitor.key)
            raise WidgetRefused("this visitor is denied on this engine")
        self.gate.allowed(site, visitor.key, origin)  # still active, origin still listed
        if origin != visitor.origin:
            raise WidgetRefused("this visitor token was issued to a page of another origin")

    def _readable(self, scope: Scope, key: str, origin: str | None) -> None:
        """The answer (a 429 of the address's too) readable by `origin` when it is one of the active key's."""
        site = self.gate.active(key)
        if origin and site is not None and origin in site.origins:
            scope[CORS_SCOPE_KEY] = origin  # type: ignore[literal-required]

    def _site(self, scope: Scope, key: str, origin: str | None, ip: str) -> SiteKey:
        """The key's site for `origin`. The guard counted the request on the key the query named (or on the
        deployment's counter): a body naming another active key counts on that key's counter too."""
        self._readable(scope, key, origin)
        found = self.gate.active(key)
        if found is not None and scope.get(COUNTED_SCOPE_KEY) != key:  # type: ignore[comparison-overlap]
            found = self.gate.enter(key, ip)
        return self.gate.allowed(found, key, origin)

    # -- a visitor's question ---------------------------------------------------------------
    async def admit(self, request: Request, data: AskRequest) -> Site:
        """Checks a visitor's question before any work (its request counted on the address by the guard): its
        session, its fields, then the limits. The site it comes from, the page (X-Assist-Page, when on the
        visitor's origin) and whether a model may answer."""
        visitor: Visitor = request.scope[VISITOR_SCOPE_KEY]  # type: ignore[literal-required]
        if not visitor.owns(data.session_id):
            raise WidgetRefused(f"session {data.session_id!r} is not this visitor's: use {visitor.id}.<anything>")
        if sent := [f for f in PLATFORM_FIELDS if getattr(data, f) is not None]:
            raise InvalidRequest(f"a visitor sends a message only; {', '.join(sent)} come from the platform")
        page = _page(request.headers.get("x-assist-page"), visitor.origin)

        def check() -> SiteKey:
            site = self.gate.allowed(self.gate.active(visitor.key), visitor.key, visitor.origin)
            scope = narrowed(site.scope, data.scope)
            if site.scope and scope is None:  # before the question is counted: a refused one costs nothing
                raise WidgetRefused(f"this site key searches {site.scope.label()} only, not {data.scope.label()}")
            self.gate.admit_question(site, visitor.id)
            return site

        site = await anyio.to_thread.run_sync(check)
        return Site(key=visitor.key, page=page, scope=narrowed(site.scope, data.scope))

    # -- routes -------------------------------------------------------------------------
    def routes(self) -> list[Any]:
        settings = self.settings

        @post(
            "/v1/widget/session",
            status_code=200,
            opt={"public": True, "visitor": True},
            summary="A visitor token for a page of one of the site key's origins (the widget's first call)",
        )
        async def widget_session(data: SessionRequest, request: Request) -> dict[str, Any]:
            origin, ip = request.headers.get("origin"), self.addresses.of(request.scope)
            site = await anyio.to_thread.run_sync(self._site, request.scope, data.key, origin, ip)
            known: Visitor | None = request.scope.get(VISITOR_SCOPE_KEY)  # type: ignore[call-overload]
            renewed = known is not None and known.key == site.key
            await anyio.to_thread.run_sync(self.gate.admit_token, site, ip, not renewed)
            visitor = known.id if known is not None and renewed else new_visitor_id()
            ring = await anyio.to_thread.run_sync(self.signing.ring)  # a read of the secret once per interval
            token, expires = issue(ring, visitor, site.key, str(origin), settings.widget.token_ttl_s, _clock())
            log.info("widget.session", key=site.key, visitor=visitor, renewed=known is not None)
            return {
                "token": token,
                "visitor": visitor,
                "expires_at": _iso(expires),
                "expires_in": expires - int(_clock()),
            }

        @post("/v1/admin/keys", status_code=201, sync_to_thread=True, summary="Create a site key for the widget")
        def create_key(data: keys.NewKey, request: Request) -> dict[str, Any]:
            self._admin(request)
            key = keys.create(self.store(), data)
            self.gate.keys.put(key)
            return keys.view(key, settings)

        @get("/v1/admin/keys", sync_to_thread=True, summary="Every site key, with the limits in force")
        def list_keys(request: Request) -> dict[str, Any]:
            self._admin(request)
            return {"keys": [keys.view(k, settings) for k in self.store().all_keys()]}

        @delete("/v1/admin/keys/{key:str}", status_code=200, sync_to_thread=True, summary="Revoke a site key")
        def revoke_key(key: str, request: Request) -> dict[str, Any]:
            self._admin(request)
            revoked = keys.revoke(self.store(), key)
            self.gate.keys.put(revoked)
            return keys.view(revoked, settings)

        @post(
            "/v1/admin/denied-visitors",
            status_code=201,
            sync_to_thread=True,
            summary="Deny one visitor id: its tokens are refused within WIDGET_KEY_CACHE_S",
        )
        def deny_visitor(data: keys.DeniedVisitor, request: Request) -> dict[str, str]:
            self._admin(request)
            return keys.deny(self.store(), data)

        return [widget_session, create_key, list_keys, revoke_key, deny_visitor]

    def _admin(self, request: Request) -> None:
        caller(request, self.settings)  # someone identified, as on every route
        require_admin(request, self.settings)  # and an admin: keys decide who may spend the model host

    # -- CORS -----------------------------------------------------------------------------
    def cors(self) -> WidgetCORS:
        return WidgetCORS(self)


class WidgetCORS(ASGIMiddleware):
    """Preflights of the widget's paths answered for the origins of the key they name; answers granted to the
    origin the guard or the session route checked."""

    scopes = (ScopeType.HTTP,)

    def __init__(self, widget: Widget) -> None:
        self.widget = widget

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        origin = headers.get("origin")
        if origin is None or not WIDGET_PATHS.match(scope["path"]):
            await next_app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS" and "access-control-request-method" in headers:
            await self._preflight(scope, origin, send)
            return

        async def granted(message: Any) -> None:
            if message["type"] == "http.response.start" and scope.get(CORS_SCOPE_KEY) == origin:
                message = {**message, "headers": [*message.get("headers", []), *_grant(origin)]}
            await send(message)

        await next_app(scope, receive, granted)

    async def _preflight(self, scope: Scope, origin: str, send: Send) -> None:
        key, ip = _query_key(scope), self.widget.addresses.of(scope)
        try:
            await anyio.to_thread.run_sync(self.widget.gate.site, key, origin, ip)
        except WidgetRefused as exc:
            body = msgspec.json.encode({"status_code": 403, "detail": str(exc)})
            await _reply(send, 403, [(b"content-type", b"application/json")], body)
            return
        except TooManyRequests as exc:
            body = msgspec.json.encode({"status_code": 429, "detail": str(exc), "reason": exc.reason})
            headers = [(b"content-type", b"application/json"), (b"retry-after", str(exc.retry_after_s).encode())]
            await _reply(send, 429, headers, body)
            return
        allow = [
            (b"access-control-allow-methods", b"GET, POST"),
            (b"access-control-allow-headers", ALLOW_HEADERS.encode()),
            (b"access-control-max-age", b"600"),
        ]
        await _reply(send, 204, [*_grant(origin), *allow], b"")


def _query_key(scope: Scope) -> str:
    """The site key the widget names in every request's query (`?key=pk_…`); "" without one."""
    return (parse_qs(scope.get("query_string", b"").decode("latin-1")).get("key") or [""])[0]


def _grant(origin: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-expose-headers", b"retry-after"),
        (b"vary", b"Origin"),
    ]


async def _reply(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _page(page: str | None, origin: str) -> str | None:
    """The page a question was asked from, kept only when it is an address on the visitor's own site, and only
    its path: a query string may carry what a visitor typed elsewhere (a search, an e-mail address)."""
    if not page or len(page) > MAX_PAGE_CHARS:
        return None
    parts = urlsplit(page)
    if f"{parts.scheme}://{parts.netloc}".lower() != origin.lower():
        return None
    return f"{origin}{parts.path or '/'}"


def _clock() -> float:
    return time.time()


def _iso(epoch_s: int) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
