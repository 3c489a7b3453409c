"""What every store backend shares, whichever data it keeps (ADR 0061, ADR 0101): its failures become
`StoreUnavailable` with advice (`guarded`, from what the backend's `failure` recognises).

Below the sessions and the widget, so both stores' backends build on the same bases (`tables/sqlite.py`,
`tables/dynamodb.py`) without one importing the other."""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from assist.errors import AssistError, Unavailable
from assist.logs import get_logger

log = get_logger(__name__)
P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound="Backend")


class StoreUnavailable(Unavailable, RuntimeError):
    """The session store did not serve the call: DynamoDB throttled after retries, unreachable or
    misconfigured, or the session file could not be used.

    No honest answer can be given without recording the turn: callers answer 503, and since
    nothing was written, the client's retry duplicates nothing. The message says what to do:
    `transient` failures are retried; configuration ones name the variable to set."""

    reason = "sessions_unavailable"

    def __init__(self, operation: str, cause: str, advice: str | None = None) -> None:
        self.cause = cause
        self.transient = advice is None
        super().__init__(f"the session store is unavailable ({operation}: {cause}); {advice or 'retry shortly'}")


class Backend(ABC):
    """What `guarded` asks of a backend, the sessions' (`Store`) or the widget's (`WidgetStore`)."""

    @abstractmethod
    def failure(self, exc: Exception) -> tuple[str, str | None] | None:
        """A backend failure's code and advice (None: transient, retry) — or None when `exc` is not one."""


def guarded(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """A backend's own failures as StoreUnavailable (what the backend's `failure` makes of them); our
    outcomes (not found, conflicts, a busy export) pass unchanged."""

    @functools.wraps(method)
    def wrapper(store: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(store, *args, **kwargs)
        except AssistError:
            raise
        except Exception as exc:
            failure = store.failure(exc)
            if failure is None:
                raise
            code, hint = failure
            log.warning("memory.store_unavailable", operation=method.__name__, code=code, error=str(exc)[:200])
            raise StoreUnavailable(method.__name__, code, hint) from exc

    return wrapper
