"""The LLM layer: an Ollama model shown the intent history — never raw messages — and the two rules of
docs/routing.md.

The reply must be exactly one of the four labels (surrounding whitespace, quotes, a final period
and a `<think>` block are tolerated, nothing else). An invalid reply gets one retry that repeats
the instruction; the whole layer, retry included, has one time budget. Any failure raises
`LLMClassifierFailed`, and the cascade's fallback decides.

A label needs no reasoning: the call sends `think: false` (CLASSIFIER_LLM_THINK) to a thinking model, which would
otherwise think first and miss the budget (Ollama ≥ 0.12.4), asks for a few tokens (`num_predict`) and the window
its model is loaded with (`num_ctx`: another would reload it; ADRs 0077–0079).
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assist.contracts import QueryType
from assist.llm.charge import BudgetSpent, chat_client
from assist.logs import get_logger
from assist.ollama_client import call_errors, model_facts
from assist.thinking import strip_thinking

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from assist.contracts import IntentEntry
    from assist.ollama_client import ModelFacts
    from assist.settings import Settings

log = get_logger(__name__)
HISTORY_WINDOW = 6
TOPIC_CHARS = 60
LABELS = tuple(t.value for t in QueryType)
#: a label is a few tokens; with thinking switched on, the thinking counts too
NUM_PREDICT = 16
NUM_PREDICT_THINKING = 1024

SYSTEM = """You route the messages sent to the assistant of a developer platform. Decide what kind of help the \
new message wants and reply with exactly one label, nothing else:
RETRIEVAL: to understand documented behaviour or concepts of the platform, its scripting language or SDKs, \
including how plans, quotas, rate limits and billing work in general.
CODE_GENERATION: code written, fixed, refactored, converted, tested or explained.
CONVERSATIONAL: acts on the conversation itself: shorten, summarise, translate, reformat, repeat or continue \
the previous answer, recall what was said; greetings and thanks.
PLATFORM: facts about the user's own account: their usage, quota left, invoices, charges, plan, payments, keys, \
project metrics.

<history_rule>
The intent history lists the earlier turns of this session, oldest first, as [TYPE] "first 60 characters". Use \
it only to resolve references in the new message ("this", "that", "it", "esto", "eso", "lo anterior", "and in \
Java?"): a message that only makes sense through an earlier turn asks about that turn's subject. Never use the \
history to predict the label: how often a type appears in it says nothing about the new message, and a \
self-contained message is classified on its own content.
</history_rule>

<platform_priority_rule>
If the message contains usage percentages, account metrics, quota data or billing information of the user's own \
account, the label is PLATFORM, whatever the history.
</platform_priority_rule>"""

RETRY = "Reply with exactly one of: " + ", ".join(LABELS) + "."


class LLMClassifierFailed(RuntimeError):
    """The LLM layer could not decide: unreachable, over its time budget, or no valid label."""


@dataclass(frozen=True)
class LLMDecision:
    type: QueryType
    attempts: int
    model: str


def history_lines(history: Sequence[IntentEntry]) -> str:
    """The last six turns as `[TYPE] "topic"` lines; topics are cut again here, whatever the store holds."""
    lines = []
    for h in list(history)[-HISTORY_WINDOW:]:
        topic = " ".join(h.topic.split())[:TOPIC_CHARS].replace('"', "'")
        lines.append(f'[{h.type.value}] "{topic}"')
    return "\n".join(lines) or "(no earlier turns)"


def build_messages(message: str, history: Sequence[IntentEntry]) -> list[dict[str, str]]:
    user = (
        f"<intent_history>\n{history_lines(history)}\n</intent_history>\n\n<message>\n{message}\n</message>\n\nLabel:"
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def parse_label(reply: str) -> QueryType | None:
    text = strip_thinking(reply).strip(" \t\n`'\".").upper()
    return QueryType(text) if text in LABELS else None


@dataclass(frozen=True)
class Asking:
    """What the classifier asks of its model, beside the messages: `think`, the window, the facts' source."""

    think: str = "false"
    num_ctx: int = 8192
    facts: Callable[[float], ModelFacts] | None = None  # the model's facts, within a budget (None: not known)


class LLMClassifier:
    def __init__(
        self,
        client: Any,
        model: str,
        budget_s: float,
        errors: tuple[type[BaseException], ...],
        asking: Asking | None = None,
    ) -> None:
        self._client = client
        self.model = model
        self.budget_s = budget_s
        self._errors = errors
        self._asking = asking or Asking()
        # A call over budget is abandoned, not awaited: it ends on its own at the client's timeout.
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="llm-classify")

    @classmethod
    def from_settings(cls, settings: Settings) -> LLMClassifier:
        o = settings.ollama
        budget = settings.classifier.llm_timeout_s
        host, model = o.host, o.classifier_model
        # The deadline is enforced by `classify`; the client's own timeout is a second later, only so an
        # abandoned call cannot live on, and never races the deadline.
        client = chat_client(host, budget + 1.0, o.connect_timeout_s, api_key=o.api_key)

        def facts(within_s: float) -> ModelFacts:
            return model_facts(host, model, within_s, o.connect_timeout_s, o.api_key)

        asking = Asking(settings.classifier.llm_think, o.num_ctx_for(host, model), facts)
        return cls(client, model, budget, call_errors(), asking)

    def classify(self, message: str, history: Sequence[IntentEntry]) -> LLMDecision:
        """The model's label for the message, within `budget_s` for both attempts together (a reply it cannot
        parse is asked once more); LLMClassifierFailed when it gives none in time."""
        deadline = time.monotonic() + self.budget_s
        messages = build_messages(message, history)
        for attempt in (1, 2):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LLMClassifierFailed(f"llm over its {self.budget_s:g} s budget")
            # the call is charged to the turn that asks (each ask, the second one too: ADR 0115)
            future = self._pool.submit(contextvars.copy_context().run, self._chat, messages, remaining)
            try:
                reply = future.result(timeout=remaining)
            except concurrent.futures.TimeoutError:
                raise LLMClassifierFailed(f"llm over its {self.budget_s:g} s budget") from None
            except self._errors as exc:
                raise LLMClassifierFailed(f"llm unavailable ({type(exc).__name__})") from exc
            except BudgetSpent:
                raise LLMClassifierFailed("llm off (the site key's model budget is spent)") from None
            label = parse_label(reply)
            if label is not None:
                return LLMDecision(type=label, attempts=attempt, model=self.model)
            log.warning("classify.llm_invalid_reply", attempt=attempt, model=self.model, reply=reply[:80])
            messages = [*messages, {"role": "assistant", "content": reply[:200]}, {"role": "user", "content": RETRY}]
        raise LLMClassifierFailed("llm gave no valid label in 2 replies")

    def _chat(self, messages: list[dict[str, str]], within_s: float) -> str:
        asking = self._asking
        facts = asking.facts(within_s / 2) if asking.facts else None
        think = facts.think(asking.think) if facts else (False if asking.think == "false" else None)
        num_ctx = facts.window(asking.num_ctx) if facts else asking.num_ctx
        options = {
            "temperature": 0,
            "num_ctx": num_ctx,
            "num_predict": NUM_PREDICT if not think else NUM_PREDICT_THINKING,
        }
        extra = {} if think is None else {"think": think}
        messages = facts.soft_switch(asking.think, messages) if facts else messages
        reply = self._client.chat(model=self.model, messages=messages, stream=False, options=options, **extra)
        return strip_thinking(reply.message.content or "", stray=facts.stray_think if facts else True)
