"""Every model call charged where it is made (ADR 0115).

A turn that spends a budget (a widget visitor's, on its site key's daily model calls) runs its model stages inside
`charging(charge)`; every chat client the product builds (`chat_client`: the answer slots, the LLM classifier, the
rewrite and translation through the slots) asks `charge()` just before it sends a request, so a retry, a slot
fallback and the classifier's second ask are each one call on the budget, and past it nothing is sent
(`BudgetSpent`). Outside a charged turn (the CLI, the API's own callers, warm-up) nothing is counted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from assist.logs import get_logger
from assist.ollama_client import build_client

log = get_logger(__name__)
#: one model call about to be made: True when the budget allows it (and it is counted), False when spent
Charge = Callable[[], bool]
_charge: ContextVar[_Account | None] = ContextVar("model_charge", default=None)


class BudgetSpent(RuntimeError):
    """The turn's budget refused a model call: nothing was sent."""


class _Account:
    """A context's charge, and the calls already paid for (drawn first, shared by the threads and tasks it starts)."""

    def __init__(self, charge: Charge, paid: int) -> None:
        self.charge, self.paid = charge, paid
        self._lock = threading.Lock()

    def draw(self) -> bool:
        with self._lock:
            if self.paid > 0:
                self.paid -= 1
                return True
        return self.charge()


@contextmanager
def charging(charge: Charge | None, paid: int = 0) -> Iterator[None]:
    """Model calls made in this context (and in threads or tasks started from it) are charged to `charge`; the
    first `paid` were counted already (the answer's, before its prompt was fitted to the model's window)."""
    token = _charge.set(_Account(charge, paid) if charge is not None else None)
    try:
        yield
    finally:
        _charge.reset(token)


def charge() -> None:
    """Count one model call about to be made; `BudgetSpent` (nothing counted, nothing sent) when refused."""
    account = _charge.get()
    if account is not None and not account.draw():
        log.info("llm.budget_refused")
        raise BudgetSpent("the site key's daily model budget is spent")


def chat_client(
    host: str, timeout_s: float, connect_timeout_s: float, asynchronous: bool = False, api_key: str | None = None
) -> Any:
    """An Ollama client (`build_client`) whose every `chat` is charged first: the one way the product asks a model."""
    client = build_client(host, timeout_s, connect_timeout_s, asynchronous, api_key)
    return _AsyncCharged(client) if asynchronous else _Charged(client)


class _Charged:
    def __init__(self, client: Any) -> None:
        self._client = client

    def chat(self, *args: Any, **kwargs: Any) -> Any:
        charge()
        return self._client.chat(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class _AsyncCharged(_Charged):
    async def chat(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        charge()
        return await self._client.chat(*args, **kwargs)
