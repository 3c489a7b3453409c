"""Who is calling. In AWS the HTTP API's JWT authorizer has verified a token and hands us its
claims (mangum exposes the Lambda event as scope["aws.event"]); on the local stack a
developer names a user in the `X-Assist-User` header, accepted only in local mode; a
container behind an authenticating proxy may trust one configured header."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from litestar.exceptions import NotAuthorizedException, ValidationException

if TYPE_CHECKING:
    from litestar import Request

    from assist.settings import Settings

LOCAL_HEADER = "x-assist-user"
_USER = re.compile(r"^[A-Za-z0-9_.@:+-]{1,128}$")


def caller(request: Request, settings: Settings) -> str:
    claims = _claims(request.scope.get("aws.event"))
    if sub := claims.get("sub"):
        return f"jwt:{sub}"
    header = LOCAL_HEADER if settings.local_mode else settings.trusted_identity_header
    if header:
        user = request.headers.get(header) or ("local" if settings.local_mode else "")
        if _USER.match(user):
            return f"{'local' if settings.local_mode else 'proxy'}:{user}"
        if user:
            raise ValidationException(f"{header} must be 1-128 of letters, digits and _ . @ : + -")
    raise NotAuthorizedException(
        "no caller identity: call through the API's JWT authorizer" + (f" or set the {header} header" if header else "")
    )


def _claims(event: Any) -> dict[str, Any]:
    if not isinstance(event, dict):
        return {}
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    return (authorizer.get("jwt") or {}).get("claims") or {}
