"""The fixed answer to a question the documentation does not cover (ADR 0055): said plainly, in the
question's language, with the nearest topics the documentation does cover. No model writes it."""

from __future__ import annotations

from collections.abc import Sequence

from assist.answer.phrases import language, phrase
from assist.contracts import Chunk

TOPICS = 3


def nearest_topics(chunks: Sequence[Chunk], suggestions: Sequence[str] = (), limit: int = TOPICS) -> list[str]:
    """The retrieved passages' sections (`title › heading`), distinct, best first; the suggested titles
    when nothing was retrieved."""
    topics = [f"{c.title} › {c.heading}" if c.heading and c.heading != c.title else c.title for c in chunks]
    return list(dict.fromkeys([*topics, *suggestions]))[:limit]


def not_covered(question: str, topics: Sequence[str]) -> str:
    lang = language(question)  # the fixed sentences' table (answer/phrases.py), in the question's language
    if not topics:
        return f"{phrase('not_covered', lang)} {phrase('none', lang)}"
    return phrase("not_covered", lang) + "\n\n" + phrase("nearest", lang) + "\n" + "\n".join(f"- {t}" for t in topics)
