"""Visitor tokens: a short-lived JWT, signed by the engine itself, naming a random visitor (ADR 0088).

A docs site's visitors have no account. `POST /v1/widget/session` gives the page a token (HS256 with the
deployment's token key, PyJWT) that names a visitor id made up on the spot, the site key and the origin it
was issued to. The stream, the session history and feedback accept it in place of a user's JWT: its owner is
`visitor:<id>`, and its sessions are `<id>.<anything>`, so a visitor can name no other visitor's session.

Its header says `typ: assist-visitor+jwt`: a user's token (asymmetric, from the identity provider) and a
visitor's never pass for each other, since each verifier accepts only its own algorithm family.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

TYP = "assist-visitor+jwt"
ISSUER = "assist-widget"
ALGORITHM = "HS256"
OWNER_PREFIX = "visitor:"


class BadVisitorToken(Exception):
    """The token does not verify; the message says why (expired, altered, …)."""


@dataclass(frozen=True)
class Visitor:
    id: str
    key: str
    origin: str
    expires_at: int  # epoch seconds

    @property
    def owner(self) -> str:
        return OWNER_PREFIX + self.id

    def owns(self, session_id: str) -> bool:
        """A visitor's sessions live under its id: `<visitor id>.<anything>`."""
        return session_id.startswith(self.id + ".")


def new_visitor_id() -> str:
    """96 random bits, as the session id's characters allow."""
    return "v" + secrets.token_hex(12)


def issue(signing_key: str, visitor: str, key: str, origin: str, ttl_s: int, now: float) -> tuple[str, int]:
    """The token and when it expires (epoch seconds)."""
    import jwt  # deferred, ADR 0071: PyJWT, on the first token of an app that issues them, not at import

    expires = int(now) + ttl_s
    claims = {"iss": ISSUER, "sub": visitor, "key": key, "origin": origin, "iat": int(now), "exp": expires}
    return jwt.encode(claims, signing_key, algorithm=ALGORITHM, headers={"typ": TYP}), expires


def is_visitor_token(token: str) -> bool:
    """Whether the token claims to be a visitor's (its header, unverified): which verifier it goes to."""
    import jwt  # deferred, ADR 0071: PyJWT, as above

    try:
        return jwt.get_unverified_header(token).get("typ") == TYP
    except jwt.InvalidTokenError:
        return False


def verify(signing_key: str, token: str) -> Visitor:
    import jwt  # deferred, ADR 0071: PyJWT, as above

    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            signing_key,
            algorithms=[ALGORITHM],
            issuer=ISSUER,
            options={"require": ["iss", "sub", "exp", "iat", "key", "origin"]},
        )
    except jwt.ExpiredSignatureError as exc:
        raise BadVisitorToken("visitor token expired: get a new one from POST /v1/widget/session") from exc
    except jwt.InvalidTokenError as exc:
        raise BadVisitorToken(f"invalid visitor token: {exc}") from exc
    return Visitor(str(claims["sub"]), str(claims["key"]), str(claims["origin"]), int(claims["exp"]))
