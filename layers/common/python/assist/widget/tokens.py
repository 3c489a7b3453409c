"""Visitor tokens: a short-lived JWT, signed by the engine itself, naming a random visitor (ADR 0088).

A docs site's visitors have no account. `POST /v1/widget/session` gives the page a token (HS256 with the
deployment's token key, PyJWT) that names a visitor id made up on the spot, the site key and the origin it
was issued to. The stream, the session history and feedback accept it in place of a user's JWT: its owner is
`visitor:<id>`, and its sessions are `<id>.<anything>`, so a visitor can name no other visitor's session.

Its header says `typ: assist-visitor+jwt`: a user's token (asymmetric, from the identity provider) and a
visitor's never pass for each other, since each verifier accepts only its own algorithm family.

Its header also names the key that signed it (`kid`, a fingerprint of the key: ADR 0093). A `KeyRing` holds the
current key, which signs, and the previous one, which still verifies what it signed up to one token lifetime
after the rotation (ADR 0119): a warm process that has not read the rotated secret yet still signs with it, and
its tokens must pass everywhere. Never a token that lives longer than the engine gives.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

import jwt

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


def key_id(key: str) -> str:
    """A key's id: a fingerprint that names it in a token's header and reveals nothing usable about a key of
    MIN_KEY_BYTES random bytes."""
    return hashlib.sha256(b"assist-visitor-kid\0" + key.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class KeyRing:
    """The key that signs (`current`) and the one it replaced (`previous`), replaced at `rotated_at` (epoch s)."""

    current: str
    previous: str | None = None
    rotated_at: float = 0.0

    @property
    def kid(self) -> str:
        return key_id(self.current)

    def holds(self, kid: str | None) -> bool:
        """Whether the key a token's `kid` names is in this ring."""
        return kid == self.kid or (self.previous is not None and kid == key_id(self.previous))


def issue(ring: KeyRing, visitor: str, key: str, origin: str, ttl_s: int, now: float) -> tuple[str, int]:
    """The token and when it expires (epoch seconds)."""
    expires = int(now) + ttl_s
    claims = {"iss": ISSUER, "sub": visitor, "key": key, "origin": origin, "iat": int(now), "exp": expires}
    headers = {"typ": TYP, "kid": ring.kid}
    return jwt.encode(claims, ring.current, algorithm=ALGORITHM, headers=headers), expires


def is_visitor_token(token: str) -> bool:
    """Whether the token claims to be a visitor's (its header, unverified): which verifier it goes to."""
    try:
        return jwt.get_unverified_header(token).get("typ") == TYP
    except jwt.InvalidTokenError:
        return False


def token_kid(token: str) -> str | None:
    """The key id a token's header names (unverified): which key verifies it."""
    try:
        kid = jwt.get_unverified_header(token).get("kid")
    except jwt.InvalidTokenError as exc:
        raise BadVisitorToken(f"invalid visitor token: {exc}") from exc
    return kid if isinstance(kid, str) else None


def verify(ring: KeyRing, token: str, ttl_s: int, now: float) -> Visitor:
    """The visitor a token names, if the key its `kid` names signed it, it has not expired and it claims no
    longer life than `ttl_s`; a token of the previous key only if it was issued within one token lifetime after
    the rotation (a process still signing with it until it reads the rotated secret)."""
    kid = token_kid(token)
    if kid == ring.kid:
        key, retired = ring.current, False
    elif ring.previous is not None and kid == key_id(ring.previous):
        key, retired = ring.previous, True
    else:
        raise BadVisitorToken("visitor token signed with a key this engine does not hold: get a new one")
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=[ALGORITHM],
            issuer=ISSUER,
            # the times are checked below against `now`, the caller's clock, as the rotation's time is
            options={"require": ["iss", "sub", "exp", "iat", "key", "origin"], "verify_exp": False},
        )
        issued, expires = int(claims["iat"]), int(claims["exp"])
    except (jwt.InvalidTokenError, TypeError, ValueError) as exc:
        raise BadVisitorToken(f"invalid visitor token: {exc}") from exc
    if expires <= now:
        raise BadVisitorToken("visitor token expired: get a new one from POST /v1/widget/session")
    if expires - issued > ttl_s or issued > now + 60:
        raise BadVisitorToken("invalid visitor token: it claims a longer life than this engine gives")
    if retired and issued > ring.rotated_at + ttl_s:
        raise BadVisitorToken("visitor token signed with a retired key after its rotation: get a new one")
    return Visitor(str(claims["sub"]), str(claims["key"]), str(claims["origin"]), expires)
