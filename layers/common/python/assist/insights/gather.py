"""What the insights page counts, read from the session store's intent history over a window of days.

One paginated read per day of the store's history by export day (`Store.history_pages`, the label
export's; on DynamoDB a Query on the `by-export-day` index), newest day first, never a Scan: the cost
follows the window's traffic, not the table's size. A turn that got feedback later sits under its
feedback's day (feedback moves its export key), so each day's query is kept to the turns created in
the window. `max_entries` bounds one request; a window with more says `truncated`.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from assist.contracts import Confidence, InvalidRequest, Layer, Scope
from assist.index.scope import key as scope_key
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.sessions.store import HistoryRecord, Store

log = get_logger(__name__)
MAX_DAYS = 90
LAYERS = ("declared", "rules", "embedding", "llm", "fallback", "default")
NOT_SEARCHED = "not searched"
#: retrieval too weak to call the docs' answer found: a documentation gap (a stored string equals its member)
WEAK = frozenset(c for c in Confidence if c.weak)
UNSCOPED = scope_key(Scope())  # a question asked without a scope: it searched the whole index


class BadWindow(InvalidRequest):
    """A window of days the page cannot show (a 400 on the route, exit 2 on the command line)."""


def check_days(days: int) -> int:
    if not 1 <= days <= MAX_DAYS:
        raise BadWindow(f"days is {days}; the window is 1 to {MAX_DAYS} days")
    return days


@dataclass
class Gathered:
    days: int
    since: str
    until: str
    entries: list[HistoryRecord] = field(default_factory=list)
    read_units: float = 0.0
    queries: int = 0
    seconds: float = 0.0
    truncated: bool = False

    # -- what the page shows ----------------------------------------------------------
    def per_day(self) -> dict[str, Counter[str]]:
        """Questions per day (UTC) by type, every day of the window present."""
        start = datetime.fromisoformat(self.since).date()
        out = {(start + timedelta(days=i)).isoformat(): Counter[str]() for i in range(self.days + 1)}
        for e in self.entries:
            out.setdefault(e.created_at[:10], Counter())[e.type] += 1
        return out

    def counts(self, field: str, missing: str = "") -> Counter[str]:
        """The entries by one of their fields (`missing` for none)."""
        return Counter(str(getattr(e, field) or missing) for e in self.entries)

    def degraded(self) -> Counter[str]:
        return Counter(reason for e in self.entries for reason in e.degraded)

    def ratings(self) -> Counter[str]:
        return Counter(e.feedback.rating for e in self.entries if e.feedback)

    def gaps(self) -> list[HistoryRecord]:
        """Questions the docs did not answer: an uncertain verdict (ADR 0055), weak retrieval, or a thumbs-down;
        newest first."""
        return [
            e
            for e in self.entries
            if e.uncertain or e.retrieval_confidence in WEAK or (e.feedback and e.feedback.rating == "down")
        ]

    def scopes(self) -> dict[str, dict[str, int]]:
        """Questions and gap questions per scope asked (ADR 0121: `cli/2`, `cli/*`; `*/*` unscoped), most first."""
        asked, gaps = Counter(map(scope_of, self.entries)), Counter(map(scope_of, self.gaps()))
        return {k: {"questions": n, "gap_questions": gaps[k]} for k, n in asked.most_common()}

    def sites(self, pages: int = 10) -> dict[str, dict[str, Any]]:
        """The widget's questions per site key, most first, each with the pages its visitors asked from (the
        `pages` most frequent)."""
        by_key: dict[str, Counter[str]] = {}
        for e in self.entries:
            if e.site_key:
                by_key.setdefault(e.site_key, Counter())[e.page or ""] += 1
        ranked = sorted(by_key.items(), key=lambda kv: -sum(kv[1].values()))
        return {
            key: {"questions": sum(c.values()), "pages": {p: n for p, n in c.most_common(pages) if p}}
            for key, c in ranked
        }

    def summary(self) -> dict[str, Any]:
        n = len(self.entries)
        layers = self.counts("layer")
        return {
            "days": self.days,
            "since": self.since,
            "until": self.until,
            "questions": n,
            "truncated": self.truncated,
            "per_day": {d: dict(c) for d, c in self.per_day().items()},
            "layers": dict(layers.most_common()),
            "llm_share": round(layers[Layer.LLM] / n, 4) if n else None,
            "retrieval_confidence": dict(self.counts("retrieval_confidence", NOT_SEARCHED).most_common()),
            "degraded": dict(self.degraded().most_common()),
            "ratings": dict(self.ratings()),
            "gap_questions": len(self.gaps()),
            # answers that said the docs do not cover the question, by reason
            "uncertain": dict(Counter(str(e.uncertain) for e in self.entries if e.uncertain).most_common()),
            # what the questions searched: the documentation set, product and version they were asked in
            "scopes": self.scopes(),
            # the widget's questions per site key, and the pages its visitors asked from (docs/widget.md)
            "sites": self.sites(),
            "read": {"queries": self.queries, "read_units": round(self.read_units, 2), "seconds": self.seconds},
        }


def scope_of(entry: HistoryRecord) -> str:
    """The scope a recorded turn searched, as the build report names it."""
    return scope_key(entry.scope or Scope())


def gather(
    settings: Any, store: Store, days: int, now: datetime | None = None, max_entries: int | None = None
) -> Gathered:
    """The window's turns from the store's history (either backend), newest day first."""
    check_days(days)
    t0 = time.perf_counter()
    now = now or datetime.now(UTC)
    since = (now - timedelta(days=days)).astimezone(UTC).isoformat(timespec="milliseconds")
    out = Gathered(days=days, since=since, until=now.astimezone(UTC).isoformat(timespec="milliseconds"))
    limit = max_entries or settings.insights.max_entries
    day = now.astimezone(UTC).date()
    while day.isoformat() >= since[:10] and not out.truncated:
        for page in store.history_pages(day.isoformat(), newest_first=True):
            out.queries += 1
            out.read_units += page.read_units
            out.entries += [e for e in page.items if e.created_at >= since]
            if len(out.entries) >= limit:
                out.truncated = page.more or day.isoformat() > since[:10]
                del out.entries[limit:]
                break
        day -= timedelta(days=1)
    out.seconds = round(time.perf_counter() - t0, 3)
    log.info("insights.gathered", days=days, entries=len(out.entries), queries=out.queries, read_units=out.read_units)
    return out
