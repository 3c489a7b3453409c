"""One deadline per request, shared by every stage (ADR 0051).

API Gateway closes at 30 s. The request's deadline is set once where it arrives (`API_DEADLINE_S`
after the HTTP app or the Ask function received it) and travels with the turn, across processes,
as epoch seconds; a Lambda task also ends where its context's remaining time ends. Every stage
spends from what is left: a model call is given only that, and a slot fallback happens only when
there is time for it.
"""

from __future__ import annotations

import math
import time

#: kept for writing the turn after the model (the persist stage's DynamoDB transaction)
PERSIST_RESERVE_S = 1.0
#: a model call with less than this left would end in a timeout: the answer is extractive instead
MIN_MODEL_S = 1.0
#: a Lambda task stops its own work this long before its context's end, to reply in time
TASK_RESERVE_S = 0.3


def after(seconds: float) -> float:
    return time.time() + seconds


def left(deadline: float | None) -> float:
    """Seconds until `deadline` (epoch seconds); unbounded without one."""
    return math.inf if deadline is None else deadline - time.time()


def sooner(a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return a if b is None else b
    return min(a, b)


def model_budget(deadline: float | None, cap: float, reserve: float = PERSIST_RESERVE_S) -> float | None:
    """The timeout for one model call: at most `cap`, and what is left before the deadline less `reserve`;
    None when that is too little to be worth a call."""
    room = left(deadline) - reserve
    return min(cap, room) if room >= min(cap, MIN_MODEL_S) else None  # a small `cap` is the operator's choice
