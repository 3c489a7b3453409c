"""Ollama model slots: `main` for documentation and code, `light` for conversation and account data.

A slot that cannot answer falls back to main (`slot_fallback`); when no slot can, the caller
gets `LLMUnavailable` and answers without a model. Streaming uses the async client, so a
client that disconnects cancels the model's stream (the connection to Ollama is closed).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assist.deadline import model_budget
from assist.logs import get_logger
from assist.ollama_client import build_client, call_errors

if TYPE_CHECKING:
    from assist.settings import Settings

log = get_logger(__name__)
USAGE_FIELDS = (
    "prompt_eval_count",
    "eval_count",
    "total_duration",
    "load_duration",
    "prompt_eval_duration",
    "eval_duration",
)


class LLMUnavailable(RuntimeError):
    """No model slot could produce an answer; `reason` is the degraded reason to report (`deadline` when the
    request's budget had no room left for a call)."""

    def __init__(self, message: str, timed_out: bool = False, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or ("llm_timeout" if timed_out else "llm_unavailable")


@dataclass
class Generation:
    text: str
    model: str
    slot: str
    usage: dict[str, Any] = field(default_factory=dict)
    degraded: list[str] = field(default_factory=list)
    model_ms: float = 0.0  # wall time spent waiting on the model (what "our overhead" excludes)


def usage_of(reply: Any) -> dict[str, Any]:
    return {k: v for k in USAGE_FIELDS if (v := getattr(reply, k, None)) is not None}


class ModelSlots:
    def __init__(self, settings: Settings) -> None:
        self.errors = call_errors()
        self._timeout_s, self._connect_s = settings.ollama.timeout_s, settings.ollama.connect_timeout_s
        self._api_key = settings.ollama.api_key
        hosts = {"main": settings.ollama.host, "light": settings.ollama.light_host}
        models = {"main": settings.ollama.model_name, "light": settings.ollama.light_model}
        self._slots = {s: (hosts[s], models[s]) for s in ("main", "light")}
        self._clients: dict[tuple[str, float, bool], Any] = {}

    def model(self, slot: str) -> str:
        return self._slots[slot][1]

    def _client(self, host: str, timeout_s: float, asynchronous: bool = False) -> Any:
        """A client whose every wait ends within `timeout_s` (rounded down to 0.5 s, so a few are kept per host)."""
        key = (host, max(0.5, int(timeout_s * 2) / 2), asynchronous)
        if key not in self._clients:
            self._clients[key] = build_client(host, key[1], self._connect_s, asynchronous, self._api_key)
        return self._clients[key]

    def _budget(self, deadline: float | None, failures: list[str], name: str, model: str) -> float | None:
        """This call's timeout: the slot's own, cut to what the request has left; None when too little is left."""
        budget = model_budget(deadline, self._timeout_s)
        if budget is None:
            failures.append(f"{name}({model}): no time left before the request's deadline")
            log.warning("llm.no_time_left", slot=name, model=model)
        return budget

    @staticmethod
    def order(slot: str) -> list[str]:
        return [slot] if slot == "main" else [slot, "main"]

    def chat(
        self, slot: str, messages: list[dict[str, str]], deadline: float | None = None, **options: Any
    ) -> Generation:
        """`deadline` (epoch seconds): each call, the fallback's included, gets only the time left before it."""
        failures: list[str] = []
        for i, name in enumerate(self.order(slot)):
            host, model = self._slots[name]
            if (budget := self._budget(deadline, failures, name, model)) is None:
                raise LLMUnavailable("; ".join(failures), reason="deadline")
            client = self._client(host, budget)
            t0 = time.perf_counter()
            try:
                reply = client.chat(model=model, messages=messages, stream=False, **options)
            except self.errors as exc:
                self._failed(failures, name, model, exc)
                continue
            return Generation(
                text=reply.message.content or "",
                model=model,
                slot=name,
                usage=usage_of(reply),
                degraded=["slot_fallback"] if i else [],
                model_ms=(time.perf_counter() - t0) * 1000,
            )
        log.warning("llm.unavailable", failures=failures)
        raise LLMUnavailable("; ".join(failures), timed_out=all("Timeout" in f for f in failures))

    async def stream(
        self, slot: str, messages: list[dict[str, str]], deadline: float | None = None
    ) -> AsyncIterator[str | Generation]:
        """Yields text deltas, then one final `Generation` (whole text, usage, degraded).

        A slot is abandoned for the next only if it fails before its first token; a failure
        mid-stream is raised (the caller has already shown tokens and cannot switch models).
        """
        failures: list[str] = []
        for i, name in enumerate(self.order(slot)):
            host, model = self._slots[name]
            if (budget := self._budget(deadline, failures, name, model)) is None:
                raise LLMUnavailable("; ".join(failures), reason="deadline")
            aclient = self._client(host, budget, asynchronous=True)
            t0 = time.perf_counter()
            parts: list[str] = []
            try:
                chunks = await aclient.chat(model=model, messages=messages, stream=True)
                last = None
                async for last in chunks:
                    if delta := last.message.content:
                        parts.append(delta)
                        yield delta
            except self.errors as exc:
                if parts:
                    raise
                self._failed(failures, name, model, exc)
                continue
            yield Generation(
                text="".join(parts),
                model=model,
                slot=name,
                usage=usage_of(last),
                degraded=["slot_fallback"] if i else [],
                model_ms=(time.perf_counter() - t0) * 1000,
            )
            return
        log.warning("llm.unavailable", failures=failures)
        raise LLMUnavailable("; ".join(failures), timed_out=all("Timeout" in f for f in failures))

    def warm_up(self) -> dict[str, bool]:
        """Load each distinct slot model now (an empty chat), so the first user does not pay for it."""
        ready: dict[str, bool] = {}
        for name in ("main", "light"):
            host, model = self._slots[name]
            if model in ready:
                continue
            try:
                self._client(host, self._timeout_s).chat(model=model, messages=[], keep_alive="10m")
                ready[model] = True
            except self.errors as exc:
                log.warning("llm.warm_up_failed", slot=name, model=model, error=str(exc)[:200])
                ready[model] = False
        log.info("llm.warmed_up", models=ready)
        return ready

    @staticmethod
    def _failed(failures: list[str], name: str, model: str, exc: BaseException) -> None:
        failures.append(f"{name}({model}): {type(exc).__name__}: {exc}")
        log.warning("llm.slot_failed", slot=name, model=model, error=str(exc)[:200])
