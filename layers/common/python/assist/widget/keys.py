"""Creating, listing and revoking site keys, and denying one visitor: one set of rules for `assist keys …` on the
store and for the admin routes (`/v1/admin/keys`, `/v1/admin/denied-visitors`) the command calls when ASSIST_URL
names a running engine."""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from assist.contracts import InvalidRequest, Scope
from assist.errors import AssistError
from assist.widget.gate import effective_limits
from assist.widget.origins import normalize
from assist.widget.store.store import Limits, SiteKey

if TYPE_CHECKING:
    from assist.settings import Settings
    from assist.widget.store.store import WidgetStore

MAX_ORIGINS = 20
KEY_PATTERN = r"^pk_[A-Za-z0-9_-]{8,64}$"
VISITOR_ID = re.compile(r"^v[0-9a-f]{24}$")  # tokens.new_visitor_id's


class KeyNotFound(AssistError):
    status = 404
    code = "key_not_found"


class NewKey(msgspec.Struct, forbid_unknown_fields=True):
    """`POST /v1/admin/keys`: the origins that may use the key, a name for people, limits of its own."""

    origins: list[str]
    name: str = ""
    limits: Limits = msgspec.field(default_factory=Limits)
    scope: Scope | None = None  # fixed: its visitors search only there (ADR 0121)


def create(store: WidgetStore, request: NewKey) -> SiteKey:
    if not 1 <= len(request.origins) <= MAX_ORIGINS:
        raise InvalidRequest(f"a site key names 1 to {MAX_ORIGINS} origins, not {len(request.origins)}")
    if len(request.name) > 100:
        raise InvalidRequest("name is longer than 100 characters")
    for field in msgspec.structs.fields(Limits):
        value = getattr(request.limits, field.name)
        if value is not None and (value < 0 or value > 10**9 or (field.name.endswith("window_s") and value < 1)):
            raise InvalidRequest(f"limits.{field.name} is {value}: use 0 to 10^9 (a window at least 1 s)")
    key = SiteKey(
        key="pk_" + secrets.token_urlsafe(18),
        origins=list(dict.fromkeys(normalize(o) for o in request.origins)),
        created_at=_now(),
        name=request.name,
        limits=request.limits,
        scope=request.scope or None,
    )
    store.put_key(key)
    return key


def revoke(store: WidgetStore, key: str) -> SiteKey:
    revoked = store.revoke_key(key, _now())
    if revoked is None:
        raise KeyNotFound(f"no site key {key!r}")
    return revoked


class DeniedVisitor(msgspec.Struct, forbid_unknown_fields=True):
    """`POST /v1/admin/denied-visitors`: the visitor id (`v…`, as its token and its session ids show it)."""

    visitor: str


def deny(store: WidgetStore, request: DeniedVisitor) -> dict[str, str]:
    """Refuse one visitor id whatever its token says, within WIDGET_KEY_CACHE_S on every process."""
    if not VISITOR_ID.match(request.visitor):
        raise InvalidRequest(f"{request.visitor[:64]!r} is not a visitor id: v and 24 hex digits")
    return {"visitor": request.visitor, "denied_at": store.deny_visitor(request.visitor, _now())}


def view(key: SiteKey, settings: Settings) -> dict[str, Any]:
    """The key as the command and the admin routes show it: its own limits and the ones in force."""
    return {
        **msgspec.to_builtins(key),
        "active": key.active,
        "effective_limits": msgspec.structs.asdict(effective_limits(key, settings)),
    }


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
