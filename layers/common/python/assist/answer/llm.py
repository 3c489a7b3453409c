"""Ollama model slots: `main` for documentation and code, `light` for conversation and account data.

A slot that cannot answer falls back to main (`slot_fallback`); when no slot can, the caller
gets `LLMUnavailable` and answers without a model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.settings import Settings

log = get_logger(__name__)


class LLMUnavailable(RuntimeError):
    """No model slot could produce an answer."""


@dataclass
class Generation:
    text: str
    model: str
    slot: str
    usage: dict[str, Any] = field(default_factory=dict)
    degraded: list[str] = field(default_factory=list)


class ModelSlots:
    def __init__(self, settings: Settings) -> None:
        from assist.ollama_client import build_client, call_errors

        self._errors = call_errors()
        timeouts = (settings.ollama_timeout_s, settings.ollama_connect_timeout_s)
        main = build_client(settings.ollama_host, *timeouts)
        light = main if settings.light_host == settings.ollama_host else build_client(settings.light_host, *timeouts)
        self._slots = {"main": (main, settings.ollama_model_name), "light": (light, settings.light_model)}

    def model(self, slot: str) -> str:
        return self._slots[slot][1]

    def chat(self, slot: str, messages: list[dict[str, str]]) -> Generation:
        order = [slot] if slot == "main" else [slot, "main"]
        failures: list[str] = []
        for i, name in enumerate(order):
            client, model = self._slots[name]
            try:
                reply = client.chat(model=model, messages=messages, stream=False)
            except self._errors as exc:
                failures.append(f"{name}({model}): {type(exc).__name__}: {exc}")
                log.warning("llm.slot_failed", slot=name, model=model, error=str(exc)[:200])
                continue
            usage = {
                k: getattr(reply, k, None)
                for k in ("prompt_eval_count", "eval_count", "total_duration", "prompt_eval_duration", "eval_duration")
            }
            return Generation(
                text=reply.message.content or "",
                model=model,
                slot=name,
                usage=usage,
                degraded=["slot_fallback"] if i else [],
            )
        log.warning("llm.unavailable", failures=failures)
        raise LLMUnavailable("; ".join(failures))
