"""Ollama clients, the errors that mean "this host cannot answer now", and what a host says of its models,
shared by every model caller.

The answer slots, the LLM classifier and the search-query calls build their clients, catch failures and read
a model's facts (`/api/show`: capabilities, trained context) the same way; `ollama` and `httpx` are imported
only when a client is first built (cold start).
"""

from __future__ import annotations

import ssl
import threading
import time
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING

from assist.logs import get_logger

if TYPE_CHECKING:
    import ollama

log = get_logger(__name__)


def build_client(
    host: str, timeout_s: float, connect_timeout_s: float, asynchronous: bool = False, api_key: str | None = None
) -> ollama.Client | ollama.AsyncClient:
    """The async client streams answers (a closed stream closes the connection to Ollama). `host` may be
    `https://…`; `api_key` (OLLAMA_API_KEY) goes as a bearer token to a proxy in front of Ollama (ADR 0066)."""
    httpx, ollama = _libraries()
    cls = ollama.AsyncClient if asynchronous else ollama.Client
    timeout = httpx.Timeout(timeout_s, connect=min(connect_timeout_s, timeout_s))
    return cls(host=host, timeout=timeout, headers=bearer(api_key), verify=_tls())


@cache
def _libraries() -> tuple[ModuleType, ModuleType]:
    """httpx and ollama, imported by the first client or error check of the process, not at import."""
    # deferred, ADR 0104: 0.25 s together (httpx 0.06, ollama 0.19), paid by the functions that call a model only
    import httpx
    import ollama

    return httpx, ollama


@cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every client: each would load the CA bundle again (17 ms each, ADR 0104)."""
    return _libraries()[0].create_ssl_context()


def bearer(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def call_errors() -> tuple[type[BaseException], ...]:
    """What a failed call raises: an HTTP error status, a refused or dropped connection, a timeout."""
    httpx, ollama = _libraries()
    return (ollama.ResponseError, ConnectionError, httpx.HTTPError, OSError)


# ------------------------------------------------------------------------------------------------ model facts
#: a facts read that failed is tried again after this long (an unreachable host is not asked on every call)
FACTS_RETRY_S = 60.0
#: the longest a facts read may take, whatever the deadline leaves
FACTS_TIMEOUT_S = 2.0
#: families whose models reason in `<think>` tags; without the `thinking` capability (an old template) the
#: reply may start inside the thinking and show only its `</think>` (ADR 0078)
REASONING_FAMILIES = ("qwen3", "deepseek", "qwq")


@dataclass(frozen=True)
class ModelFacts:
    """What `/api/show` says of one model on one host (ADR 0077); `present` None: the host could not be asked."""

    host: str
    model: str
    present: bool | None
    capabilities: tuple[str, ...] = ()
    context_length: int | None = None
    family: str = ""
    error: str | None = None

    @property
    def known(self) -> bool:
        return self.present is True

    @property
    def thinking(self) -> bool:
        return "thinking" in self.capabilities

    @property
    def stray_think(self) -> bool:
        """Thinking may reach `content` without its opening tag: a reasoning model Ollama does not parse."""
        reasoning = any(f in f"{self.family} {self.model}".lower() for f in REASONING_FAMILIES)
        return not self.known or (reasoning and not self.thinking)

    def think(self, wanted: str) -> bool | str | None:
        """The `think` to send for the setting `wanted` (false|true|low|medium|high): never thinking to a model
        without the capability; `false` where the model thinks unless told not to, or where that is unknown;
        nothing to a model that cannot think (nothing to turn off)."""
        if self.known and not self.thinking:
            return None
        if wanted == "false":
            return False
        if not self.thinking:
            return None
        return True if wanted == "true" else wanted

    def soft_switch(self, wanted: str, messages: list[dict[str, str]]) -> list[dict[str, str]]:
        """`messages` with qwen3's `/no_think` ending the last user message where thinking is not wanted, `think`
        cannot say so, and the model would think anyway (a reasoning model on a template without the capability):
        its thinking block then comes back empty instead of eating the output limit and the time (ADR 0078)."""
        if wanted != "false" or not self.known or not self.stray_think or not messages:
            return messages
        last = messages[-1]
        if last.get("role") != "user" or last.get("content", "").rstrip().endswith("/no_think"):
            return messages
        return [*messages[:-1], {**last, "content": f"{last.get('content', '')} /no_think"}]

    def window(self, num_ctx: int) -> int:
        """The window to ask for: the setting, never above the model's trained length."""
        return min(num_ctx, self.context_length) if self.context_length else num_ctx


_facts: dict[tuple[str, str], tuple[float, ModelFacts]] = {}
_facts_lock = threading.Lock()


def model_facts(
    host: str, model: str, budget_s: float | None, connect_timeout_s: float, api_key: str | None = None
) -> ModelFacts:
    """The model's facts, read once per host and model for the process's life; a failed read (unreachable,
    404, too slow for `budget_s`) is what the settings say until it is tried again, FACTS_RETRY_S later."""
    key = (host.rstrip("/"), model)
    with _facts_lock:
        cached = _facts.get(key)
    if cached and (cached[1].known or time.monotonic() - cached[0] < FACTS_RETRY_S):
        return cached[1]
    facts = _read_facts(host, model, min(FACTS_TIMEOUT_S, budget_s or FACTS_TIMEOUT_S), connect_timeout_s, api_key)
    with _facts_lock:
        _facts[key] = (time.monotonic(), facts)
    log.info(
        "llm.model_facts",
        host=host,
        model=model,
        present=facts.present,
        capabilities=list(facts.capabilities),
        context_length=facts.context_length,
        error=facts.error,
    )
    return facts


def forget_facts() -> None:
    """Drop every cached fact (a test that changes a host's models, `assist doctor` reading afresh)."""
    with _facts_lock:
        _facts.clear()


def _read_facts(host: str, model: str, timeout_s: float, connect_timeout_s: float, api_key: str | None) -> ModelFacts:
    _, ollama = _libraries()
    client = build_client(host, max(timeout_s, 0.1), connect_timeout_s, api_key=api_key)
    try:
        shown = client.show(model)
    except ollama.ResponseError as exc:
        present = False if exc.status_code == 404 else None
        return ModelFacts(host, model, present, error=f"{exc.status_code}: {exc.error}"[:200])
    except call_errors() as exc:
        return ModelFacts(host, model, None, error=f"{type(exc).__name__}: {exc}"[:200])
    info = dict(shown.modelinfo or {})
    family = str(info.get("general.architecture") or (shown.details.family if shown.details else "") or "")
    length = info.get(f"{family}.context_length")
    return ModelFacts(
        host,
        model,
        True,
        tuple(shown.capabilities or ()),
        int(length) if isinstance(length, int | float) and length > 0 else None,
        family,
    )
