"""Who is calling. With JWT_JWKS_URL, JWT_ISSUER and JWT_AUDIENCE set, the caller is the `sub` of the
request's `Authorization: Bearer` token, verified here against the identity provider's keys (ADR 0050):
anything else is a 401, and `X-Assist-User` is ignored. Otherwise: in AWS the HTTP API's JWT authorizer
has verified a token and hands us its claims (mangum exposes the Lambda event as scope["aws.event"]); on
the local stack a developer names a user in the `X-Assist-User` header, accepted only in local mode; a
container behind an authenticating proxy may trust one configured header."""

from __future__ import annotations

import functools
import re
from types import ModuleType
from typing import TYPE_CHECKING, Any

from litestar.exceptions import NotAuthorizedException, ServiceUnavailableException, ValidationException

if TYPE_CHECKING:
    from collections.abc import Callable

    from jwt import PyJWKClient
    from litestar import Request
    from litestar.connection import ASGIConnection
    from litestar.handlers import BaseRouteHandler

    from assist.settings import Settings

LOCAL_HEADER = "x-assist-user"
VERIFIED_SCOPE_KEY = "assist.verified_caller"  # the token guard's verdict, read by `caller`
OWNER_SCOPE_KEY = "assist.owner"  # the HTTP caller, handed to the MCP tools in the request scope
VISITOR_SCOPE_KEY = "assist.visitor"  # a widget visitor whose token the widget's guard verified (api/widget.py)
_USER = re.compile(r"^[A-Za-z0-9_.@:+-]{1,128}$")
#: signature algorithms a key may name: asymmetric only, so a public key can never serve as an HMAC secret
ASYMMETRIC = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"})
JWKS_TIMEOUT_S = 5  # the keys are fetched once and cached; a provider slower than this is a 503, not a hang
JWKS_LIFESPAN_S = 300  # the key set is read again after this (and at once for a token with an unknown kid)


def caller(request: Request, settings: Settings) -> str:
    if visitor := request.scope.get(VISITOR_SCOPE_KEY):  # type: ignore[call-overload]
        return str(visitor.owner)
    if settings.jwt.jwks_url:
        return request.scope.get(VERIFIED_SCOPE_KEY) or f"jwt:{verified_subject(request, settings)}"
    claims = authorizer_claims(request.scope.get("aws.event"))
    if sub := claims.get("sub"):
        return f"jwt:{sub}"
    header = LOCAL_HEADER if settings.api.local_mode else settings.api.trusted_identity_header
    if header:
        user = request.headers.get(header) or ("local" if settings.api.local_mode else "")
        if _USER.match(user):
            return f"{'local' if settings.api.local_mode else 'proxy'}:{user}"
        if user:
            raise ValidationException(f"{header} must be 1-128 of letters, digits and _ . @ : + -")
    detail = "no caller identity: call through the API's JWT authorizer"
    raise NotAuthorizedException(
        detail + (f" or set the {header} header" if header else ""), headers={"WWW-Authenticate": "Bearer"}
    )


def token_guard(settings: Settings) -> Callable[[ASGIConnection, BaseRouteHandler], None]:
    """The guard of every route of an app whose settings name JWT_*: runs before the body is read, so an
    unidentified request is a 401 whatever it sends. Open: /healthz, the chat page and its assets
    (handlers with opt `public`) and the OpenAPI schema; a visitor's request the widget's guard let through
    (it runs first) is not a user's."""

    def guard(connection: ASGIConnection, handler: BaseRouteHandler) -> None:
        schema = (connection.app.openapi_config and connection.app.openapi_config.path) or None
        path = connection.scope["path"]
        if handler.opt.get("public") or (schema and (path == schema or path.startswith(schema + "/"))):
            return
        if VISITOR_SCOPE_KEY in connection.scope:  # the widget's guard verified a visitor token
            return
        connection.scope[VERIFIED_SCOPE_KEY] = f"jwt:{verified_subject(connection, settings)}"  # type: ignore[literal-required]

    return guard


def verified_subject(request: ASGIConnection, settings: Settings) -> str:
    """The `sub` of the request's bearer token once its signature (a key of the JWKS, an asymmetric
    algorithm), expiry, issuer and audience check out; a 401 saying what is wrong otherwise."""
    sub = verified_claims(request, settings)["sub"]
    if not isinstance(sub, str) or not _USER.match(sub):
        raise _unauthorized("token sub must be 1-128 of letters, digits and _ . @ : + -")
    return sub


def verified_claims(request: ASGIConnection, settings: Settings) -> dict[str, Any]:
    """The claims of the request's bearer token, verified as `verified_subject` says."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthorized("missing bearer token: send Authorization: Bearer <JWT>", error=None)
    jwt = _jwt()
    try:
        key = _jwks(str(settings.jwt.jwks_url)).get_signing_key_from_jwt(token.strip())
        if key.algorithm_name not in ASYMMETRIC:
            raise _unauthorized(f"token key algorithm {key.algorithm_name} is not accepted")
        claims = jwt.decode(
            token.strip(),
            key.key,
            algorithms=[key.algorithm_name],
            audience=settings.jwt.audience,
            issuer=settings.jwt.issuer,
            options={"require": ["exp", "iss", "aud", "sub"]},
        )
    except jwt.PyJWKClientConnectionError as exc:  # the provider's keys cannot be read: our fault, not the caller's
        detail = f"the identity provider's keys ({settings.jwt.jwks_url}) are unreachable; retry shortly"
        raise ServiceUnavailableException(detail, headers={"Retry-After": "2"}) from exc
    except jwt.ExpiredSignatureError as exc:
        raise _unauthorized("token expired") from exc
    except jwt.InvalidAudienceError as exc:
        raise _unauthorized(f"token audience is not {settings.jwt.audience}") from exc
    except jwt.InvalidIssuerError as exc:
        raise _unauthorized(f"token issuer is not {settings.jwt.issuer}") from exc
    except jwt.InvalidSignatureError as exc:
        raise _unauthorized("token signature does not verify against the identity provider's keys") from exc
    except jwt.PyJWKClientError as exc:  # no key of the set matches the token's kid
        raise _unauthorized(f"token is not signed by a key of the identity provider: {exc}") from exc
    except jwt.InvalidTokenError as exc:  # malformed, missing claims, not yet valid, …
        raise _unauthorized(f"invalid token: {exc}") from exc
    return claims


@functools.lru_cache(maxsize=4)
def _jwks(url: str) -> PyJWKClient:
    """One key-set client per URL for the process: its cache is what keeps verification local."""
    return _jwt().PyJWKClient(url, cache_jwk_set=True, lifespan=JWKS_LIFESPAN_S, timeout=JWKS_TIMEOUT_S)


@functools.cache
def _jwt() -> ModuleType:
    """PyJWT, for an app that verifies tokens (JWT_JWKS_URL set)."""
    # deferred, ADR 0104: PyJWT, 0.03 s, in the answer extra only; the classify and retrieve apps import this module
    import jwt

    return jwt


def _unauthorized(detail: str, error: str | None = "invalid_token") -> NotAuthorizedException:
    """A 401 with the RFC 6750 challenge: no error code when no token came, `invalid_token` otherwise."""
    # a quoted-string in a header: ASCII, no quotes, backslashes or line breaks
    said = re.sub(r'["\\\r\n]', "'", detail).encode("ascii", "replace").decode()
    challenge = "Bearer" if error is None else f'Bearer error="{error}", error_description="{said}"'
    return NotAuthorizedException(detail, headers={"WWW-Authenticate": challenge})


def authorizer_claims(event: Any) -> dict[str, Any]:
    """The claims API Gateway's JWT authorizer verified, from the Lambda event (empty without one)."""
    if not isinstance(event, dict):
        return {}
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    return (authorizer.get("jwt") or {}).get("claims") or {}
