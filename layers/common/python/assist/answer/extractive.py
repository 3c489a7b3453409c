"""Answers without a model: the best passages, cited, or the account facts given; their fixed sentences in
the question's language (`answer/phrases.py`)."""

from __future__ import annotations

import re

from assist.answer.phrases import DEFAULT, phrase
from assist.contracts import Chunk, Degraded, Exchange

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
#: a fenced code block, to its closing fence or, cut off in the passage, to the passage's end
_CODE_BLOCK = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.S | re.M)
#: the sentence naming why the index could not be searched
_INDEX_DOWN = {
    Degraded.INDEX_LOADING: "loading_index",
    Degraded.INDEX_TIMEOUT: "slow_index",
    Degraded.INDEX_UNAVAILABLE: "failed_index",
}


def first_sentences(text: str, n: int = 2, max_chars: int = 400) -> str:
    """Up to `n` whole sentences of `text`'s prose, within `max_chars` (the first one whole, whatever its length).
    A code block is taken whole or not at all: the prose around it is the excerpt, and a passage that is only a
    code block gives that block, fenced, on lines of its own (an excerpt never leaves a fence open)."""
    blocks = [m.group(0).strip() for m in _CODE_BLOCK.finditer(text)]
    prose = _CODE_BLOCK.sub("\n", text)
    flat = " ".join(line.strip() for line in prose.splitlines() if line.strip() and not line.lstrip().startswith("|"))
    if not flat and blocks:
        block, fence = blocks[0], blocks[0][:3]
        closed = block.count(fence) >= 2  # a block the passage cut off gets its closing fence
        return "\n" + (block if closed else block + "\n" + fence) + "\n"
    sentences = _SENTENCE.split(flat)
    out = sentences[0]
    for sentence in sentences[1:n]:
        if len(out) + 1 + len(sentence) > max_chars:
            break
        out += " " + sentence
    return out


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
