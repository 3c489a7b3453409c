"""The widget's table: site keys and the abuse counters, in the store the deployment has (ADR 0089).

One interface, two backends, as for sessions (ADR 0061): `DynamoDBWidgetStore` (widget/store/dynamodb.py, the
template's WidgetTable: conditional updates, items expiring by TTL) and `SQLiteWidgetStore`
(widget/store/sqlite.py, a table of the embedded store's file: one write transaction per step). Every process
that shares the table shares the counters, so four containers hold one limit.

Three kinds of counter, each one atomic step (no read-then-write a second writer could interleave):
- `window`: at most `limit` hits in a window that starts at its first hit and lasts `window_s`
  (a visitor's questions, an address's requests, a key's questions of one UTC day);
- `rate`: a steady rate with a burst, by the generic cell rate algorithm (GCRA): one timestamp, the
  theoretical arrival time, moved forward by one interval per hit (a site key's requests);
The decisions are the pure functions `window_step` and `rate_step`: the SQLite backend runs them inside its
transaction, the DynamoDB one encodes the same conditions in its conditional updates; tests hold both to them.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass

import msgspec

from assist.contracts import Scope
from assist.settings import VisitorLimits
from assist.tables.base import Backend

#: the partition that lists the site keys (one Query reads them all; a counter's partition is its own name)
KEYS_PARTITION = "site-keys"
COUNTER = "-"  # a counter's sort key: one item per counter name, its partition
GRACE_S = 60  # a counter item outlives its window a little, so a late reader still sees its end
DENIED_PARTITION = "denied-visitors"  # visitor ids refused whatever their token (`assist keys deny-visitor`)


#: a key's own limits, `VisitorLimits`' fields each unset (None) where the key did not choose: such a field takes
#: the deployment's default (WIDGET_* settings), so changing a default changes every key that did not choose
Limits = msgspec.defstruct(
    "Limits",
    [(f.name, f.type | None, None) for f in msgspec.structs.fields(VisitorLimits)],
    omit_defaults=True,
    forbid_unknown_fields=True,
    module=__name__,
)


class SiteKey(msgspec.Struct, omit_defaults=True):
    """A public site key (`pk_…`): in the page, never secret; its origins and limits are what protect it."""

    key: str
    origins: list[str]
    created_at: str
    name: str = ""
    limits: Limits = msgspec.field(default_factory=Limits)
    revoked_at: str | None = None
    #: what its visitors may search (ADR 0121): a question asking another scope is refused; None: everything
    scope: Scope | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


@dataclass(frozen=True)
class Taken:
    """One counter step: whether the hit was allowed, the count it left, and when to retry if not."""

    allowed: bool
    count: int
    retry_after_s: float = 0.0

    @property
    def retry_after(self) -> int:
        """Whole seconds for a Retry-After header: at least 1."""
        return max(1, math.ceil(self.retry_after_s))


def window_step(
    count: int, window_end_ms: int | None, now_ms: int, limit: int, window_s: float
) -> tuple[Taken, int, int]:
    """A window counter's next state `(taken, count, window_end_ms)`: a new window when there is none or it
    ended; else one more hit if under the limit, or a refusal until the window ends."""
    if window_end_ms is None or window_end_ms <= now_ms:
        if limit < 1:
            return Taken(False, 0, window_s), 0, now_ms
        return Taken(True, 1), 1, now_ms + int(window_s * 1000)
    if count < limit:
        return Taken(True, count + 1), count + 1, window_end_ms
    return Taken(False, count, (window_end_ms - now_ms) / 1000), count, window_end_ms


def rate_step(tat_ms: int | None, now_ms: int, rate_per_s: float, burst: int) -> tuple[Taken, int | None]:
    """GCRA: each hit moves the theoretical arrival time (TAT) one interval on from max(TAT, now); a hit is
    allowed while TAT stays within burst − 1 intervals of now. The new TAT (None: unchanged)."""
    interval = interval_ms(rate_per_s)
    tolerance = (max(burst, 1) - 1) * interval
    if tat_ms is None or tat_ms <= now_ms:
        return Taken(True, 1), now_ms + interval
    if tat_ms <= now_ms + tolerance:
        return Taken(True, round((tat_ms - now_ms) / interval) + 1), tat_ms + interval
    return Taken(False, burst, (tat_ms - tolerance - now_ms) / 1000), None


def interval_ms(rate_per_s: float) -> int:
    """The rate counter's emission interval (GCRA), at least 1 ms; a rate of 0 or less: one no window reaches."""
    return max(1, round(1000 / rate_per_s)) if rate_per_s > 0 else 10**12


class WidgetStore(Backend):
    """Site keys and counters; the backends keep them (each failure of theirs `guarded`, as the sessions'), the
    rules are in `assist.widget`."""

    @abstractmethod
    def put_key(self, key: SiteKey) -> None:
        """Store a new key (its name never taken before)."""

    @abstractmethod
    def get_key(self, key: str) -> SiteKey | None:
        """The key, revoked or not; None when it never existed."""

    @abstractmethod
    def all_keys(self) -> list[SiteKey]:
        """Every key, oldest first."""

    @abstractmethod
    def revoke_key(self, key: str, at: str) -> SiteKey | None:
        """Mark the key revoked (once: a second revocation keeps the first time); None when it never existed."""

    @abstractmethod
    def window(self, name: str, limit: int, window_s: float, now_ms: int) -> Taken:
        """One hit on the window counter `name` (`window_step`), atomically."""

    @abstractmethod
    def rate(self, name: str, rate_per_s: float, burst: int, now_ms: int) -> Taken:
        """One hit on the rate counter `name` (`rate_step`), atomically."""

    @abstractmethod
    def count(self, name: str, now_ms: int) -> int:
        """A window counter's current count (0 when its window ended or it never started): for audits."""

    @abstractmethod
    def deny_visitor(self, visitor: str, at: str) -> str:
        """Refuse the visitor id from now on (once: denying it again keeps the first time); when it was denied."""

    @abstractmethod
    def denied(self, visitor: str) -> str | None:
        """When the visitor id was denied; None when it is not."""
