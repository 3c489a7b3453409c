"""The fixed answer to a question the documentation does not cover (ADR 0055): said plainly, in the
question's language, with the nearest topics the documentation does cover. No model writes it."""

from __future__ import annotations

from collections.abc import Sequence

from assist.contracts import Chunk
from assist.retrieve.language import detect

TOPICS = 3
#: by language (ISO 639-1); a question in another language gets English
PHRASES = {
    "en": {
        "not_covered": "The documentation does not cover this question, so I will not guess an answer.",
        "nearest": "The nearest topics it does cover:",
        "none": "Try other words, or ask about a topic the documentation covers.",
    },
    "es": {
        "not_covered": "La documentación no cubre esta pregunta, así que no voy a inventar una respuesta.",
        "nearest": "Los temas más cercanos que sí cubre:",
        "none": "Pruebe con otras palabras, o pregunte por un tema que la documentación cubra.",
    },
}


def nearest_topics(chunks: Sequence[Chunk], suggestions: Sequence[str] = (), limit: int = TOPICS) -> list[str]:
    """The retrieved passages' sections (`title › heading`), distinct, best first; the suggested titles
    when nothing was retrieved."""
    topics = [f"{c.title} › {c.heading}" if c.heading and c.heading != c.title else c.title for c in chunks]
    return list(dict.fromkeys([*topics, *suggestions]))[:limit]


def not_covered(question: str, topics: Sequence[str]) -> str:
    words = PHRASES.get(detect(question) or "en", PHRASES["en"])
    if not topics:
        return f"{words['not_covered']} {words['none']}"
    return words["not_covered"] + "\n\n" + words["nearest"] + "\n" + "\n".join(f"- {t}" for t in topics)
