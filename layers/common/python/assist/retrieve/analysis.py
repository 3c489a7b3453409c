"""Query analysis: which kind of search a query is, and how much each side of the hybrid should count.

Seed 002's kinds (exact quote, entity, conceptual, factual, exploratory) plus `identifier`: a code
symbol, variable or event name (`addVar`, `ERR_429`, `OLLAMA_HOST`, `classify.decided`) is matched
lexically first, because an embedding model knows nothing of a platform's own names. Pure
string work, a few microseconds: no model, no I/O.

Lessons from a peer's audit of this design, each with a test: an apostrophe is not a quote
(`what's`, `engine's`), and the weights chosen here are the ones the fusion uses (they travel
in `Analysis`, nothing downstream has a default that could overwrite them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum


class QueryKind(StrEnum):
    EXACT_QUOTE = "exact_quote"
    IDENTIFIER = "identifier"
    ENTITY = "entity"
    FACTUAL = "factual"
    CONCEPTUAL = "conceptual"
    EXPLORATORY = "exploratory"


#: semantic / lexical weight per kind (docs/retrieval.md has the table and the measurement behind it)
WEIGHTS: dict[QueryKind, tuple[float, float]] = {
    QueryKind.EXACT_QUOTE: (0.1, 0.9),
    QueryKind.IDENTIFIER: (0.2, 0.8),
    QueryKind.ENTITY: (0.4, 0.6),
    QueryKind.FACTUAL: (0.5, 0.5),
    QueryKind.CONCEPTUAL: (0.65, 0.35),
    QueryKind.EXPLORATORY: (0.6, 0.4),
}

# Double quotes of every common style; a single quote counts only as a pair that opens after a
# space (or the start) and closes before a space, punctuation or the end — never inside a word.
_QUOTED = re.compile(
    r"[\"“”«»„](?P<a>[^\"“”«»„]{2,}?)[\"“”«»„]|(?:^|(?<=\s))['‘’](?P<b>[^'‘’]{2,}?)['‘’](?=$|[\s?!.,;:])"
)
_BACKTICK = re.compile(r"`([^`]+)`")
_IDENT = re.compile(
    r"(?<![\w.-])("
    r"[a-z]+[A-Z][A-Za-z0-9]*"  # camelCase: addVar, getUsage
    r"|[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+"  # snake / SCREAMING: ERR_429, OLLAMA_HOST
    r"|[a-z][a-z0-9]*(?:\.[a-z][a-z0-9_]*)+(?:\(\))?"  # dotted: classify.decided, store.items()
    r"|[A-Za-z]+\d+[A-Za-z0-9]*|\d+[A-Za-z]+\w*"  # letters and digits: v1, http2, 429s
    r"|[a-z]+\(\)"  # call: optimize()
    r"|--[a-z][a-z-]+"  # a flag: --index
    r")(?![\w])"
)
_ENTITY = re.compile(r"\b([A-Z][a-z]+[A-Z]\w*|[A-Z]{2,}[a-z]*\w*|[A-Z][a-z]{2,})\b")
_QUESTION = re.compile(
    r"^\s*(how|why|what|when|where|who|which|can|could|should|does|do|is|are|explain|describe|"
    r"c[oó]mo|por\s*qu[eé]|qu[eé]|cu[aá]l|cu[aá]ndo|d[oó]nde|explica)\b|"
    r"\b(explain|describe|understand|concept|difference|differ|compare|versus|vs\.?|why|"
    r"diferencia|explica|funciona)\b",
    re.IGNORECASE,
)
_FACTUAL = re.compile(
    r"\d|\b(default|defaults|limit|limits|maximum|minimum|max|min|how\s+many|how\s+much|how\s+long|timeout|"
    r"version|size|number|count|price|cost|ttl|port|threshold|budget|"
    r"por\s+defecto|l[ií]mite|cu[aá]nt[oa]s?|tama[nñ]o|versi[oó]n|n[uú]mero)\b",
    re.IGNORECASE,
)
_WORDS = re.compile(r"\w+", re.UNICODE)
# Sentence-initial capitals and question words are not names.
_NOT_ENTITY = set(
    [
        "how",
        "why",
        "what",
        "when",
        "where",
        "who",
        "which",
        "can",
        "could",
        "should",
        "does",
        "do",
        "is",
        "are",
        "the",
        "explain",
        "describe",
        "list",
        "show",
        "tell",
        "give",
        "find",
        "and",
        "or",
        "in",
        "on",
        "for",
        "with",
        "cómo",
        "como",
        "qué",
        "que",
        "cuál",
        "cual",
        "cuándo",
        "dónde",
        "por",
        "explica",
        "dime",
        "hay",
        "los",
        "las",
        "el",
        "la",
        "en",
        "con",
        "para",
        "if",
        "my",
        "our",
        "your",
        "a",
        "an",
        "it",
    ]
)


@dataclass(frozen=True)
class Analysis:
    kind: QueryKind
    semantic: float
    lexical: float
    #: quoted phrases, to be matched as phrases
    phrases: tuple[str, ...] = ()
    #: code symbols and names found in the query
    identifiers: tuple[str, ...] = ()
    #: the words of the query with quotes and operators removed (what the FTS strategies search)
    words: tuple[str, ...] = field(default_factory=tuple)
    reason: str = ""

    @property
    def weights(self) -> dict[str, float]:
        return {"semantic": self.semantic, "lexical": self.lexical}


def words(text: str) -> tuple[str, ...]:
    """Word tokens only: quotes, hyphens and operators in user text never reach the FTS parser."""
    return tuple(_WORDS.findall(text))


def analyze(query: str, weights: dict[QueryKind, tuple[float, float]] | None = None) -> Analysis:
    table = weights or WEIGHTS
    phrases = tuple(p.strip() for m in _QUOTED.finditer(query) if (p := m.group("a") or m.group("b")) and words(p))
    idents = tuple(dict.fromkeys([*(b.strip() for b in _BACKTICK.findall(query)), *_IDENT.findall(query)]))
    ws = words(query)

    def result(kind: QueryKind, reason: str) -> Analysis:
        sem, lex = table[kind]
        return Analysis(kind, sem, lex, phrases, idents, ws, reason)

    if phrases:
        return result(QueryKind.EXACT_QUOTE, f"quoted phrase {phrases[0]!r}")
    if idents:
        return result(QueryKind.IDENTIFIER, f"code symbol {idents[0]!r}")
    names = [n for n in _entities(query) if n.lower() not in _NOT_ENTITY]
    if names:
        return result(QueryKind.ENTITY, f"proper name {names[0]!r}")
    if _FACTUAL.search(query):
        return result(QueryKind.FACTUAL, "asks for a specific value")
    if _QUESTION.search(query):
        return result(QueryKind.CONCEPTUAL, "a question about how or why")
    return result(QueryKind.EXPLORATORY, "a broad topic")


def _entities(query: str) -> list[str]:
    """Capitalised words that are not the first word of a sentence (which every sentence has)."""
    out = []
    for m in _ENTITY.finditer(query):
        before = query[: m.start()].rstrip()
        sentence_start = not before or before[-1] in ".?!¿¡:\n"
        is_camel = any(c.isupper() for c in m.group(1)[1:])
        if not sentence_start or is_camel:
            out.append(m.group(1))
    return out
