"""What a widget request must pass before any work: an active site key, an origin it lists, and the limits
(ADRs 0089, 0090).

A question from a visitor is checked, in this order, each with its own 429 and Retry-After:
1. the source address (`ip_requests` per `ip_window_s`, questions and visitor tokens together);
2. the site key's rate (`key_rate_per_s` steady, `key_burst` at once; GCRA);
3. the visitor (`visitor_questions` per `visitor_window_s`).
A check that refuses leaves the later counters untouched. Then the key's daily model budget
(`daily_model_calls` per UTC day) decides whether a model may answer: past it the answer is extractive, with
`degraded: ["budget"]`, never refused. Each limit is the key's own or the deployment's default.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from assist.aws.secrets import secret_value
from assist.errors import AssistError
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.settings import Settings
    from assist.widget.store.store import SiteKey, Taken, WidgetStore

log = get_logger(__name__)
TOKEN_KEY_NAME = "visitor-token-key"  # noqa: S105 - the name of the row holding it


class WidgetRefused(AssistError):
    """The site key, its origins or a visitor token's reach do not allow this request (403, nothing done)."""

    status = 403
    code = "widget_refused"


class TooManyRequests(AssistError):
    """A limit is reached; `reason` names which, `retry_after_s` when the next request may pass."""

    status = 429
    code = "rate_limit_exceeded"

    def __init__(self, message: str, reason: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.reason = reason
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class Effective:
    """A key's limits: its own where it set them, the deployment's WIDGET_* defaults elsewhere."""

    visitor_questions: int
    visitor_window_s: int
    key_rate_per_s: float
    key_burst: int
    ip_requests: int
    ip_window_s: int
    daily_model_calls: int

    @classmethod
    def of(cls, key: SiteKey, settings: Settings) -> Effective:
        own = key.limits
        return cls(
            **{
                f.name: v if (v := getattr(own, f.name)) is not None else getattr(settings.widget, f.name)
                for f in fields(cls)
            }
        )


class KeyCache:
    """Site keys as this process last read them, each for `ttl_s`: a revoked key stops working within it."""

    def __init__(self, store: Callable[[], WidgetStore], ttl_s: float, clock: Callable[[], float] = time.monotonic):
        self._store, self._ttl, self._clock = store, ttl_s, clock
        self._seen: dict[str, tuple[float, SiteKey | None]] = {}
        self._lock = threading.Lock()

    def cached(self, key: str) -> tuple[bool, SiteKey | None]:
        """(known, key) without reading the store: `known` False when it must be read."""
        with self._lock:
            hit = self._seen.get(key)
        if hit is not None and self._clock() - hit[0] < self._ttl:
            return True, hit[1]
        return False, None

    def get(self, key: str) -> SiteKey | None:
        known, found = self.cached(key)
        if known:
            return found
        found = self._store().get_key(key)
        with self._lock:
            if len(self._seen) > 10_000:  # made-up keys must not grow it without end
                self._seen.clear()
            self._seen[key] = (self._clock(), found)
        return found


class Gate:
    def __init__(self, settings: Settings, store: Callable[[], WidgetStore], clock: Callable[[], float] = time.time):
        self.settings = settings
        self._store = store
        self._clock = clock
        self.keys = KeyCache(store, settings.widget.key_cache_s)

    # -- keys and origins ---------------------------------------------------------------
    def site(self, key: str, origin: str | None) -> SiteKey:
        """The active key `key` if `origin` is one of its origins; a 403 saying which part fails otherwise."""
        found = self.keys.get(key) if key.startswith("pk_") else None
        if found is None or not found.active:
            raise WidgetRefused(f"site key {key[:40]!r} is unknown or revoked")
        if not origin:
            raise WidgetRefused("no Origin header: the widget's requests come from a page of the key's sites")
        if origin not in found.origins:
            raise WidgetRefused(f"origin {origin[:100]!r} is not one of site key {key}'s origins")
        return found

    # -- limits ---------------------------------------------------------------------------
    def admit_token(self, site: SiteKey, ip: str) -> None:
        """A visitor token costs its address one request of its window."""
        limits = Effective.of(site, self.settings)
        self._check(
            self._store().window(f"ip#{site.key}#{ip}", limits.ip_requests, limits.ip_window_s, self._ms()),
            "ip_limit",
            f"address {ip} made {limits.ip_requests} requests in {limits.ip_window_s} s",
        )

    def admit_question(self, site: SiteKey, visitor: str, ip: str) -> bool:
        """Every limit in order (each refusal a TooManyRequests); then True when the day's model budget still
        covers this question, False when it must be answered without a model."""
        limits = Effective.of(site, self.settings)
        store, now = self._store(), self._ms()
        self._check(
            store.window(f"ip#{site.key}#{ip}", limits.ip_requests, limits.ip_window_s, now),
            "ip_limit",
            f"address {ip} made {limits.ip_requests} requests in {limits.ip_window_s} s",
        )
        self._check(
            store.rate(f"rate#{site.key}", limits.key_rate_per_s, limits.key_burst, now),
            "key_rate",
            f"site key {site.key} gets at most {limits.key_rate_per_s:g} questions per second "
            f"({limits.key_burst} at once)",
        )
        self._check(
            store.window(f"visitor#{site.key}#{visitor}", limits.visitor_questions, limits.visitor_window_s, now),
            "visitor_limit",
            f"this visitor asked {limits.visitor_questions} questions in {limits.visitor_window_s} s",
        )
        day, left_s = self._day(now)
        budget = store.window(f"budget#{site.key}#{day}", limits.daily_model_calls, left_s, now)
        if not budget.allowed:
            log.info("widget.budget_spent", key=site.key, day=day, budget=limits.daily_model_calls)
        return budget.allowed

    @staticmethod
    def _check(taken: Taken, reason: str, what: str) -> None:
        if not taken.allowed:
            log.info("widget.limited", reason=reason, retry_after_s=taken.retry_after)
            raise TooManyRequests(f"{what}: the limit; retry in {taken.retry_after} s", reason, taken.retry_after)

    def _ms(self) -> int:
        return int(self._clock() * 1000)

    @staticmethod
    def _day(now_ms: int) -> tuple[str, float]:
        """The UTC day and the seconds left in it: a budget window ends at midnight, whenever it opened."""
        now = datetime.fromtimestamp(now_ms / 1000, UTC)
        midnight = datetime(now.year, now.month, now.day, tzinfo=UTC) + timedelta(days=1)
        return now.date().isoformat(), (midnight - now).total_seconds()


def token_key(settings: Settings, store: Callable[[], WidgetStore]) -> str:
    """The key visitor tokens are signed with: WIDGET_TOKEN_KEY; else the Secrets Manager secret
    WIDGET_TOKEN_KEY_SECRET names (read at run time, cached); else one made by the first process and kept in the
    widget table, which every process sharing the table then uses."""
    if settings.widget.token_key:
        return settings.widget.token_key
    if settings.widget.token_key_secret:
        return secret_value(settings, settings.widget.token_key_secret, settings.export.hash_key_cache_s)
    return store().secret(TOKEN_KEY_NAME, secrets.token_urlsafe(32))


def client_ip(peer: str | None, forwarded_for: str | None, hops: int) -> str:
    """The source address: the socket's, or with `hops` proxies in front that each append the address they saw
    to X-Forwarded-For, the entry the outermost of them wrote (what a client writes itself comes before it)."""
    if hops > 0 and forwarded_for:
        entries = [e.strip() for e in forwarded_for.split(",") if e.strip()]
        if len(entries) >= hops:
            return entries[-hops]
    return peer or "unknown"
