"""Admin-only routes (`GET /insights`: every user's redacted questions): the caller's token must carry the
scope `INSIGHTS_SCOPE` (ADR 0066). In AWS the HTTP API's authorizer already requires it on the route; the
app checks it again, so the function URL and a container behind a proxy hold the same line.

Scopes come from a verified bearer token (JWT_* set: its `scope` claim, space-separated as OAuth 2.0 and
Cognito write it, or `scp`, a list, as Okta and Entra do) or from the claims API Gateway's JWT authorizer
hands over. On the local stack without JWT_* the developer at the keyboard is the admin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from litestar.exceptions import PermissionDeniedException

from assist.api.identity import authorizer_claims, verified_claims

if TYPE_CHECKING:
    from litestar import Request

    from assist.settings import Settings


def require_admin(request: Request, settings: Settings) -> None:
    """Nothing when the caller holds the admin scope; a 403 naming it otherwise (a 401 without a token)."""
    if settings.jwt.jwks_url:
        claims = verified_claims(request, settings)
    else:
        event = request.scope.get("aws.event")
        claims = authorizer_claims(event)
        if not claims and settings.api.local_mode:
            return
        authorizer = ((event or {}).get("requestContext") or {}).get("authorizer") or {}
        granted = (authorizer.get("jwt") or {}).get("scopes") or []  # the route's scopes the authorizer matched
        claims = {**claims, "scp": [*scopes_of(claims), *granted]}
    if settings.insights.scope not in scopes_of(claims):
        raise PermissionDeniedException(
            f"{request.url.path} is for admins: the token needs the scope {settings.insights.scope!r}"
        )


def scopes_of(claims: dict[str, Any]) -> set[str]:
    scope, scp = claims.get("scope"), claims.get("scp")
    out = set(scope.split()) if isinstance(scope, str) else set()
    if isinstance(scp, str):
        out |= set(scp.split())
    elif isinstance(scp, list):
        out |= {s for s in scp if isinstance(s, str)}
    return out
