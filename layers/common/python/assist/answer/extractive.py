"""Answers without a model: the best passages, cited, or the account facts given; their fixed sentences in
the question's language (`answer/phrases.py`)."""

from __future__ import annotations

import re

from assist.answer.phrases import DEFAULT, phrase
from assist.contracts import Chunk, Degraded, Exchange

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
#: the sentence naming why the index could not be searched
_INDEX_DOWN = {
    Degraded.INDEX_LOADING: "loading_index",
    Degraded.INDEX_TIMEOUT: "slow_index",
    Degraded.INDEX_UNAVAILABLE: "failed_index",
}


def first_sentences(text: str, n: int = 2, max_chars: int = 400) -> str:
    flat = " ".join(line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("|"))
    out = " ".join(_SENTENCE.split(flat)[:n])
    return out if len(out) <= max_chars else out[: max_chars - 1].rsplit(" ", 1)[0] + "…"


def cited_as(c: Chunk) -> str:
    """'Title — heading', the heading left out when it only repeats the title."""
    return f"{c.title} — {c.heading}" if c.heading and c.heading.strip() != c.title.strip() else c.title


def extractive_answer(
    chunks: list[Chunk], limit: int = 3, index_down: Degraded | None = None, lang: str = DEFAULT
) -> str:
    """`index_down`: why the index could not be searched (loading, a timeout, a failure), named in the answer."""
    if not chunks:
        return phrase(_INDEX_DOWN[index_down] if index_down else "no_passage", lang)
    lines = [f"[{i}] {cited_as(c)}: {first_sentences(c.text)}" for i, c in enumerate(chunks[:limit], 1)]
    return phrase("passages", lang) + "\n\n" + "\n".join(lines)


def platform_facts(extra_context: str | None, lang: str = DEFAULT) -> str:
    if not extra_context or not extra_context.strip():
        return phrase("no_account_data", lang)
    return phrase("account_data", lang) + "\n" + extra_context.strip()


def conversation_recap(items: list[Exchange], lang: str = DEFAULT) -> str:
    """Without a model nothing can be rephrased; the honest help is the session itself, verbatim."""
    if not items:
        return phrase("no_earlier", lang)
    asked = "\n".join(f"{i}. {it.message}" for i, it in enumerate(items, 1))
    last = first_sentences(items[-1].answer, n=4, max_chars=800)
    return f"{phrase('recap', lang)}\n{asked}\n\n{phrase('last_answer', lang)}\n{last}"
