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
    """No model slot could produce an answer; `reason` is the degraded reason to report."""

    def __init__(self, message: str, timed_out: bool = False) -> None:
        super().__init__(message)
        self.reason = "llm_timeout" if timed_out else "llm_unavailable"


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
        timeouts = (settings.ollama_timeout_s, settings.ollama_connect_timeout_s)
        hosts = {"main": settings.ollama_host, "light": settings.light_host}
        models = {"main": settings.ollama_model_name, "light": settings.light_model}
        clients = {h: build_client(h, *timeouts) for h in set(hosts.values())}
        aclients = {h: build_client(h, *timeouts, asynchronous=True) for h in set(hosts.values())}
        self._slots = {s: (clients[hosts[s]], aclients[hosts[s]], models[s]) for s in ("main", "light")}

    def model(self, slot: str) -> str:
        return self._slots[slot][2]

    @staticmethod
    def order(slot: str) -> list[str]:
        return [slot] if slot == "main" else [slot, "main"]

    def chat(self, slot: str, messages: list[dict[str, str]], **options: Any) -> Generation:
        failures: list[str] = []
        for i, name in enumerate(self.order(slot)):
            client, _, model = self._slots[name]
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

    async def stream(self, slot: str, messages: list[dict[str, str]]) -> AsyncIterator[str | Generation]:
        """Yields text deltas, then one final `Generation` (whole text, usage, degraded).

        A slot is abandoned for the next only if it fails before its first token; a failure
        mid-stream is raised (the caller has already shown tokens and cannot switch models).
        """
        failures: list[str] = []
        for i, name in enumerate(self.order(slot)):
            _, aclient, model = self._slots[name]
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
            client, _, model = self._slots[name]
            if model in ready:
                continue
            try:
                client.chat(model=model, messages=[], keep_alive="10m")
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
