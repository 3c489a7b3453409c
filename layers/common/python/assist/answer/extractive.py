"""Answers without a model: the best passages, cited, or the account facts given."""

from __future__ import annotations

import re

from assist.contracts import Chunk, Exchange

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
NOTE = "The language model is unavailable, so these are the most relevant passages from the documentation:"


def first_sentences(text: str, n: int = 2, max_chars: int = 400) -> str:
    flat = " ".join(line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("|"))
    out = " ".join(_SENTENCE.split(flat)[:n])
    return out if len(out) <= max_chars else out[: max_chars - 1].rsplit(" ", 1)[0] + "…"


def extractive_answer(chunks: list[Chunk], limit: int = 3, index_down: bool = False) -> str:
    if not chunks:
        if index_down:
            return (
                "The language model and the documentation index are both unavailable right now; please retry shortly."
            )
        return "The language model is unavailable and no documentation passage matched this question."
    lines = [
        f"[{i}] {c.title} — {c.heading or c.title}: {first_sentences(c.text)}" for i, c in enumerate(chunks[:limit], 1)
    ]
    return NOTE + "\n\n" + "\n".join(lines)


def platform_facts(extra_context: str | None) -> str:
    if not extra_context or not extra_context.strip():
        return "The language model is unavailable and no account data was provided with this request."
    return (
        "The language model is unavailable. The account data provided with this request says:\n" + extra_context.strip()
    )


def conversation_recap(items: list[Exchange]) -> str:
    """Without a model nothing can be rephrased; the honest help is the session itself, verbatim."""
    if not items:
        return "The language model is unavailable and this session has no earlier messages."
    asked = "\n".join(f"{i}. {it.message}" for i, it in enumerate(items, 1))
    return (
        "The language model is unavailable, so I cannot rephrase. Your questions in this session so far:\n"
        f"{asked}\n\nThe last answer was:\n{first_sentences(items[-1].answer, n=4, max_chars=800)}"
    )
