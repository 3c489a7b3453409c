"""What a widget request must pass before any work: an active site key, an origin it lists, and the limits
(ADRs 0089, 0090, 0092).

The limits run cheapest-to-forge last, each with its own 429 (`reason`) and Retry-After; a check that refuses
leaves the later counters untouched:
1. the source address (`ip_requests` per `ip_window_s`): every request a visitor's page makes counts, before
   anything else is looked at and whether it is then refused or not: tokens, questions, session history,
   feedback, preflights, a wrong origin, an invalid body, lookups of keys that do not exist (`enter`);
2. for a new visitor id, the address's new ids (`new_visitors` per `ip_window_s`); for a question, the visitor
   (`visitor_questions` per `visitor_window_s`);
3. for a question, the site key's shared rate (`key_rate_per_s` steady, `key_burst` at once; GCRA), last, so a
   visitor over its own limit costs the key's other visitors nothing.
Then the key's daily model budget (`daily_model_calls` per UTC day) counts model calls, whichever stage makes one
(classifier, rewrite, translation, answer): past it a turn asks no model, its answer extractive with
`degraded: ["budget"]`, never refused. Each limit is the key's own or the deployment's default.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import msgspec

from assist.errors import AssistError
from assist.logs import get_logger
from assist.settings import VisitorLimits

if TYPE_CHECKING:
    from assist.settings import Settings
    from assist.widget.store.store import SiteKey, Taken, WidgetStore

log = get_logger(__name__)


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


def effective_limits(key: SiteKey, settings: Settings) -> VisitorLimits:
    """A key's limits: its own where it set them, the deployment's WIDGET_* defaults elsewhere."""
    own = msgspec.structs.asdict(key.limits)
    defaults = settings.widget
    return VisitorLimits(
        **{f: v if (v := own[f]) is not None else getattr(defaults, f) for f in VisitorLimits.__struct_fields__}
    )


class KeyCache:
    """Every site key as this process last read them all (one read), so looking a key up, known or made up, reads
    no store: the whole set is read again every `ttl_s` (a revoked key stops working within it), and at most once
    per `MISS_REREAD_S` when a key is not in it (a key created elsewhere works within that)."""

    MISS_REREAD_S = 1.0

    def __init__(self, store: Callable[[], WidgetStore], ttl_s: float, clock: Callable[[], float] = time.monotonic):
        self._store, self._ttl, self._clock = store, ttl_s, clock
        self._keys: dict[str, SiteKey] | None = None
        self._read_at = 0.0
        self._lock = threading.Lock()  # one read at a time: requests arriving together wait for it, not repeat it

    def get(self, key: str) -> SiteKey | None:
        with self._lock:
            age = self._clock() - self._read_at
            if self._keys is None or age >= self._ttl or (key not in self._keys and age >= self.MISS_REREAD_S):
                self._keys = {k.key: k for k in self._store().all_keys()}
                self._read_at = self._clock()
            return self._keys.get(key)

    def put(self, key: SiteKey) -> None:
        """A key this process created or revoked: known here at once."""
        with self._lock:
            if self._keys is not None:
                self._keys[key.key] = key


class Gate:
    def __init__(self, settings: Settings, store: Callable[[], WidgetStore], clock: Callable[[], float] = time.time):
        self.settings = settings
        self.store = store  # the widget store, opened on first call (the widget's routes share it)
        self._clock = clock
        self.keys = KeyCache(store, settings.widget.key_cache_s)

    # -- the address, then keys and origins --------------------------------------------------
    def enter(self, key: str | None, ip: str) -> SiteKey | None:
        """One request of `ip`, counted before anything else is looked at, refused or not (ADR 0118): on the active
        key's address counter at its limit; with no key, a made-up or a revoked one, on the deployment's. The
        active key, or None."""
        if (found := self.active(key)) is not None:
            limits = effective_limits(found, self.settings)
            self._address(f"ip#{found.key}#{ip}", ip, limits.ip_requests, limits.ip_window_s, self._ms())
            return found
        w = self.settings.widget
        self._address(f"ip#{ip}", ip, w.ip_requests, w.ip_window_s, self._ms())
        return None

    def active(self, key: str | None) -> SiteKey | None:
        """The active site key `key`, None for no key, a made-up or a revoked one (nothing counted)."""
        found = self.keys.get(key) if key and key.startswith("pk_") else None
        return found if found is not None and found.active else None

    @staticmethod
    def allowed(found: SiteKey | None, key: str, origin: str | None) -> SiteKey:
        """`found` (the active key `key`) if `origin` is one of its origins; a 403 saying which part fails."""
        if found is None:
            raise WidgetRefused(f"site key {key[:40]!r} is unknown or revoked")
        if not origin:
            raise WidgetRefused("no Origin header: the widget's requests come from a page of the key's sites")
        if origin not in found.origins:
            raise WidgetRefused(f"origin {origin[:100]!r} is not one of site key {key}'s origins")
        return found

    def site(self, key: str, origin: str | None, ip: str) -> SiteKey:
        """The request counted on the address (`enter`), then the key and its origins checked (`allowed`)."""
        return self.allowed(self.enter(key, ip), key, origin)

    # -- limits after the address ------------------------------------------------------------
    def admit_token(self, site: SiteKey, ip: str, new_visitor: bool) -> None:
        """A new visitor id: one of the address's new ids (the request itself was counted on entry)."""
        if not new_visitor:
            return
        limits = effective_limits(site, self.settings)
        self._check(
            self.store().window(f"new#{site.key}#{ip}", limits.new_visitors, limits.ip_window_s, self._ms()),
            "new_visitor_limit",
            f"address {ip} got {limits.new_visitors} new visitor ids in {limits.ip_window_s} s",
        )

    def admit_question(self, site: SiteKey, visitor: str) -> None:
        """The limits of a question after its address (counted on entry), in order: visitor, key."""
        limits = effective_limits(site, self.settings)
        store, now = self.store(), self._ms()
        self._check(
            store.window(f"visitor#{site.key}#{visitor}", limits.visitor_questions, limits.visitor_window_s, now),
            "visitor_limit",
            f"this visitor asked {limits.visitor_questions} questions in {limits.visitor_window_s} s",
        )
        self._check(
            store.rate(f"rate#{site.key}", limits.key_rate_per_s, limits.key_burst, now),
            "key_rate",
            f"site key {site.key} gets at most {limits.key_rate_per_s:g} questions per second "
            f"({limits.key_burst} at once)",
        )

    def spend(self, key: str) -> bool:
        """One model call of a visitor's turn on its key's daily budget: False (nothing counted) when it is spent
        (or the key is gone), and the turn then asks no model anything more."""
        site = self.keys.get(key)
        if site is None:
            return False
        limits, now = effective_limits(site, self.settings), self._ms()
        day, left_s = self._day(now)
        budget = self.store().window(budget_counter(key, day), limits.daily_model_calls, left_s, now)
        if not budget.allowed:
            log.info("widget.budget_spent", key=key, day=day, budget=limits.daily_model_calls)
        return budget.allowed

    def _address(self, counter: str, ip: str, limit: int, window_s: int, now: int) -> None:
        self._check(
            self.store().window(counter, limit, window_s, now),
            "ip_limit",
            f"address {ip} made {limit} requests in {window_s} s",
        )

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


def budget_counter(key: str, day: str) -> str:
    """The counter of a key's model calls on a UTC day (`YYYY-MM-DD`)."""
    return f"budget#{key}#{day}"
