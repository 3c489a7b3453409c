"""Ollama model slots: `main` for documentation and code, `light` for conversation and account data.

A slot that cannot answer falls back to main (`slot_fallback`); when no slot can, the caller
gets `LLMUnavailable` and answers without a model. Streaming uses the async client, so a
client that disconnects cancels the model's stream (the connection to Ollama is closed).

Every call says what it asks of the model (ADRs 0077–0079): `think` as configured, and only to a model with the
capability; `options.num_ctx`, the slot's window (never above the model's trained length, the same for every
call to one model on one host, which Ollama would otherwise reload); `options.num_predict`, the output limit.
Thinking never reaches the answer: `message.thinking` is read apart, and thinking an old template leaves in
`content` is stripped. A reply cut at `num_predict` says `answer_truncated`; a prompt the host had to cut,
`context_overflow`; a model the host does not have, `model_missing`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assist.contracts import Asked, Degraded, Slot
from assist.deadline import model_budget
from assist.llm.charge import BudgetSpent, chat_client
from assist.llm.window import Window
from assist.logs import get_logger
from assist.ollama_client import ModelFacts, call_errors, model_facts
from assist.thinking import ThinkFilter, strip_thinking

if TYPE_CHECKING:
    from assist.settings import Settings

log = get_logger(__name__)
#: what a call to a host nobody runs raises (the ollama client's own error, httpx's under a stream)
NO_HOST = ("ConnectionError", "ConnectError")
USAGE_FIELDS = (
    "prompt_eval_count",
    "eval_count",
    "total_duration",
    "load_duration",
    "prompt_eval_duration",
    "eval_duration",
    "done_reason",
)


class LLMUnavailable(RuntimeError):
    """No model slot could produce an answer; `reason` is the degraded reason to report (`deadline` when the
    request's budget had no room left for a call); `missing`, the models a host said it does not have."""

    def __init__(
        self, message: str, timed_out: bool = False, reason: Degraded | None = None, missing: list[str] | None = None
    ) -> None:
        super().__init__(message)
        self.reason = reason or (Degraded.LLM_TIMEOUT if timed_out else Degraded.LLM_UNAVAILABLE)
        self.missing = missing or []


@dataclass
class Generation:
    text: str
    model: str
    slot: Slot
    usage: dict[str, int | str] = field(default_factory=dict)
    degraded: list[Degraded] = field(default_factory=list)
    model_ms: float = 0.0  # wall time spent waiting on the model (what "our overhead" excludes)
    missing: list[str] = field(default_factory=list)  # models a host did not have before this one answered
    request: Asked | None = None  # what was asked: think, num_ctx, num_predict

    @property
    def truncated(self) -> bool:
        return self.usage.get("done_reason") == "length"


@dataclass(frozen=True)
class Thought:
    """A streamed piece of the model's thinking: shown apart (the `thinking` event) when thinking is on."""

    text: str


def usage_of(reply: Any) -> dict[str, int | str]:
    return {k: v for k in USAGE_FIELDS if (v := getattr(reply, k, None)) is not None}


def outcome(usage: dict[str, int | str], num_ctx: int) -> list[Degraded]:
    """What the reply's own figures say went wrong: cut at `num_predict`, or a prompt the host cut."""
    out = [Degraded.ANSWER_TRUNCATED] if usage.get("done_reason") == "length" else []
    if int(usage.get("prompt_eval_count") or 0) >= num_ctx:
        out.append(Degraded.CONTEXT_OVERFLOW)
    return out


class ModelSlots:
    def __init__(self, settings: Settings) -> None:
        self.errors = call_errors()
        self._ollama = o = settings.ollama
        self._timeout_s, self._connect_s, self._api_key = o.timeout_s, o.connect_timeout_s, o.api_key
        self._slots = {Slot.MAIN: (o.host, o.model_name), Slot.LIGHT: (o.light_host, o.light_model)}
        self._think = {Slot.MAIN: o.think, Slot.LIGHT: o.think_conversational}
        self.rewrite_think = o.rewrite_think  # the search-query calls (rewrite, translate)
        self._num_predict = {Slot.MAIN: o.num_predict, Slot.LIGHT: o.num_predict_conversational}
        self._clients: dict[tuple[str, float, bool], Any] = {}

    def model(self, slot: Slot) -> str:
        return self._slots[slot][1]

    def thinks(self, slot: Slot) -> bool:
        """Whether answers of this slot may think (its setting; the model's capability decides per call)."""
        return self._think[slot] != "false"

    def facts(self, host: str, model: str, deadline: float | None = None) -> ModelFacts:
        return model_facts(host, model, model_budget(deadline, self._timeout_s), self._connect_s, self._api_key)

    def window(self, slot: Slot, deadline: float | None = None) -> Window:
        """The window a prompt for `slot` must fit: the smallest of the slots it may be answered by."""
        windows = []
        for name in slot.order:
            host, model = self._slots[name]
            num_ctx = self.facts(host, model, deadline).window(self._ollama.num_ctx_for(host, model))
            windows.append(Window(num_ctx, self._num_predict[name]))
        return min(windows, key=Window.limit)

    def request(
        self,
        host: str,
        model: str,
        think: str,
        num_predict: int,
        deadline: float | None = None,
        **options: Any,
    ) -> tuple[ModelFacts, dict[str, Any]]:
        """The model's facts and the keywords of a chat call to it: `think` only where it means something,
        the window and the output limit in `options`."""
        facts = self.facts(host, model, deadline)
        sent = facts.think(think)
        num_ctx = facts.window(self._ollama.num_ctx_for(host, model))
        kwargs: dict[str, Any] = {"options": {**options, "num_ctx": num_ctx, "num_predict": num_predict}}
        if sent is not None:
            kwargs["think"] = sent
        return facts, kwargs

    def _client(self, host: str, timeout_s: float, asynchronous: bool = False) -> Any:
        """A client whose every wait ends within `timeout_s` (rounded down to 0.5 s, so a few are kept per host)."""
        key = (host, max(0.5, int(timeout_s * 2) / 2), asynchronous)
        if key not in self._clients:
            self._clients[key] = chat_client(host, key[1], self._connect_s, asynchronous, self._api_key)
        return self._clients[key]

    def _budget(self, deadline: float | None, failures: list[str], name: str, model: str) -> float | None:
        """This call's timeout: the slot's own, cut to what the request has left; None when too little is left."""
        budget = model_budget(deadline, self._timeout_s)
        if budget is None:
            failures.append(f"{name}({model}): no time left before the request's deadline")
            log.warning("llm.no_time_left", slot=name, model=model)
        return budget

    def chat(
        self,
        slot: Slot,
        messages: list[dict[str, str]],
        deadline: float | None = None,
        think: str | None = None,
        num_predict: int | None = None,
    ) -> Generation:
        """`deadline` (epoch seconds): each call, the fallback's included, gets only the time left before it.
        `think` and `num_predict` replace the slot's own (the search-query calls ask for a line, unthought)."""
        failures: list[str] = []
        missing: list[str] = []
        for i, name in enumerate(slot.order):
            host, model = self._slots[name]
            if (budget := self._budget(deadline, failures, name, model)) is None:
                raise LLMUnavailable("; ".join(failures), reason=Degraded.DEADLINE, missing=missing)
            wanted = think or self._think[name]
            facts, kwargs = self.request(host, model, wanted, num_predict or self._num_predict[name], deadline)
            sent = facts.soft_switch(wanted, messages)
            t0 = time.perf_counter()
            try:
                reply = self._client(host, budget).chat(model=model, messages=sent, stream=False, **kwargs)
            except BudgetSpent as exc:
                raise _spent(exc, missing) from None
            except self.errors as exc:
                self._failed(failures, missing, name, model, exc)
                continue
            text = strip_thinking(reply.message.content or "", stray=facts.stray_think)
            return _generation(text, model, name, i > 0, usage_of(reply), kwargs, t0, missing)
        raise _unavailable(failures, missing)

    async def stream(
        self, slot: Slot, messages: list[dict[str, str]], deadline: float | None = None
    ) -> AsyncIterator[str | Thought | Generation]:
        """Yields text deltas (and, when the slot thinks, `Thought`s), then one final `Generation`.

        A slot is abandoned for the next only if it fails before its first token; a failure
        mid-stream is raised (the caller has already shown tokens and cannot switch models).
        """
        failures: list[str] = []
        missing: list[str] = []
        for i, name in enumerate(slot.order):
            host, model = self._slots[name]
            if (budget := self._budget(deadline, failures, name, model)) is None:
                raise LLMUnavailable("; ".join(failures), reason=Degraded.DEADLINE, missing=missing)
            facts, kwargs = self.request(host, model, self._think[name], self._num_predict[name], deadline)
            sent = facts.soft_switch(self._think[name], messages)
            aclient = self._client(host, budget, asynchronous=True)
            t0 = time.perf_counter()
            parts: list[str] = []
            started = False
            strip = ThinkFilter(stray=facts.stray_think)
            try:
                chunks = await aclient.chat(model=model, messages=sent, stream=True, **kwargs)
                last = None
                async for last in chunks:
                    started = True
                    if (thinking := last.message.thinking) and kwargs.get("think"):
                        yield Thought(thinking)
                    thought, delta = strip.feed(last.message.content or "")
                    if thought and kwargs.get("think"):
                        yield Thought(thought)
                    if delta:
                        parts.append(delta)
                        yield delta
                if tail := strip.finish()[1]:
                    parts.append(tail)
                    yield tail
            except BudgetSpent as exc:
                raise _spent(exc, missing) from None
            except self.errors as exc:
                if started:
                    raise
                self._failed(failures, missing, name, model, exc)
                continue
            yield _generation("".join(parts), model, name, i > 0, usage_of(last), kwargs, t0, missing)
            return
        raise _unavailable(failures, missing)

    def warm_up(self) -> dict[str, bool]:
        """Load each distinct slot model now (a chat with no messages), with the window its calls will ask for
        (another one would make Ollama load it again at the first question)."""
        ready: dict[str, bool] = {}
        for name in Slot:
            host, model = self._slots[name]
            if model in ready:
                continue
            try:
                _, kwargs = self.request(host, model, "false", self._num_predict[name])
                kwargs["options"].pop("num_predict")
                self._client(host, self._timeout_s).chat(model=model, messages=[], keep_alive="10m", **kwargs)
                ready[model] = True
            except self.errors as exc:
                log.warning("llm.warm_up_failed", slot=name, model=model, error=str(exc)[:200])
                ready[model] = False
        log.info("llm.warmed_up", models=ready)
        return ready

    @staticmethod
    def _failed(failures: list[str], missing: list[str], name: str, model: str, exc: BaseException) -> None:
        failures.append(f"{name}({model}): {type(exc).__name__}: {exc}")
        if getattr(exc, "status_code", None) == 404:  # ollama.ResponseError: the host does not have the model
            missing.append(model)
        # no host listening is how the engine runs without Ollama (README): the answer's `degraded` list and its
        # metric say so; a warning on every question would only bury the answer at a terminal
        noted = log.info if type(exc).__name__ in NO_HOST else log.warning
        noted("llm.slot_failed", slot=name, model=model, error=str(exc)[:200])


def _asked(kwargs: dict[str, Any]) -> Asked:
    options = kwargs["options"]
    return Asked(kwargs.get("think"), options["num_ctx"], options["num_predict"])


def _generation(
    text: str,
    model: str,
    slot: Slot,
    fell_back: bool,
    usage: Any,
    kwargs: dict[str, Any],
    t0: float,
    missing: list[str],
) -> Generation:
    """What one model call gave, the same for a whole reply and a stream's end."""
    return Generation(
        text=text,
        model=model,
        slot=slot,
        usage=usage,
        degraded=([Degraded.SLOT_FALLBACK] if fell_back else []) + outcome(usage, kwargs["options"]["num_ctx"]),
        model_ms=(time.perf_counter() - t0) * 1000,
        missing=missing,
        request=_asked(kwargs),
    )


def _spent(exc: BudgetSpent, missing: list[str]) -> LLMUnavailable:
    """A call the turn's budget refused (a fallback's too): no slot is tried after it."""
    return LLMUnavailable(str(exc), reason=Degraded.BUDGET, missing=missing)


def _unavailable(failures: list[str], missing: list[str]) -> LLMUnavailable:
    no_host = all(f.split(": ")[1] in NO_HOST for f in failures)  # as in `_failed`: no Ollama running
    (log.info if no_host else log.warning)("llm.unavailable", failures=failures)
    return LLMUnavailable("; ".join(failures), timed_out=all("Timeout" in f for f in failures), missing=missing)
