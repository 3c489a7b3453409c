"""The fixed answer to a question the documentation does not cover (ADR 0055): said plainly, in the
question's language, with the nearest topics the documentation does cover. No model writes it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from assist.answer.phrases import language, phrase
from assist.contracts import Chunk

TOPICS = 3


def topic(c: Chunk) -> str:
    return f"{c.title} › {c.heading}" if c.heading and c.heading != c.title else c.title


def nearest_topics(chunks: Sequence[Chunk], suggestions: Sequence[str] = (), limit: int = TOPICS) -> list[str]:
    """The retrieved passages' sections (`title › heading`), distinct, best first; the suggested titles
    when nothing was retrieved."""
    return list(dict.fromkeys([*(topic(c) for c in chunks), *suggestions]))[:limit]


def links(chunks: Sequence[Chunk]) -> dict[str, str]:
    """Each retrieved section's page (ADR 0059), by its topic: the near misses a reader can follow."""
    out: dict[str, str] = {}
    for c in chunks:
        if c.url:
            out.setdefault(topic(c), c.url)
    return out


def not_covered(question: str, topics: Sequence[str], urls: Mapping[str, str] | None = None) -> str:
    lang = language(question)  # the fixed sentences' table (answer/phrases.py), in the question's language
    if not topics:
        return f"{phrase('not_covered', lang)} {phrase('none', lang)}"
    urls = urls or {}
    lines = [f"- [{t}]({urls[t]})" if t in urls else f"- {t}" for t in topics]  # a Markdown link: every way in
    return phrase("not_covered", lang) + "\n\n" + phrase("nearest", lang) + "\n" + "\n".join(lines)
