"""Query analysis: which kind of search a query is, and how much each side of the hybrid should count.

Seed 002's kinds (exact quote, entity, conceptual, factual, exploratory) plus `identifier`: a code
symbol, variable or event name (`addVar`, `ERR_429`, `OLLAMA_HOST`, `classify.decided`) is matched
lexically first, because an embedding model knows nothing of a platform's own names. The kind
picks the exact strategy (phrases, symbols, or all words) and explains the search in the trace;
the fusion weights are the same for every kind (ADR 0039: per-kind weights tuned on our docs lost
on SciFact). Document identifiers (`ADR-8`, `adr 0008`) are recognised apart, as `mentions`, in the
normal form the index records them in. Pure string work, a few microseconds: no model, no I/O.

A lesson kept with a test (tests/unit/test_retrieval_analysis.py): an apostrophe is not a quote (`what's`, `engine's`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from assist.contracts import QueryKind
from assist.index.identifiers import mentions as identifier_mentions

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
    #: quoted phrases, to be matched as phrases
    phrases: tuple[str, ...] = ()
    #: code symbols and names found in the query
    identifiers: tuple[str, ...] = ()
    #: the words of the query with quotes and operators removed (what the FTS strategies search)
    words: tuple[str, ...] = field(default_factory=tuple)
    reason: str = ""
    #: document identifier keys the query mentions (`ADR-008` → `adr-8`), whether or not a document has them
    mentions: tuple[str, ...] = ()


def words(text: str) -> tuple[str, ...]:
    """Word tokens only: quotes, hyphens and operators in user text never reach the FTS parser."""
    return tuple(_WORDS.findall(text))


def analyze(query: str) -> Analysis:
    """The query's kind (`QueryKind`: an exact quote, an identifier, an entity, a factual, conceptual or
    exploratory question), with the phrases, identifiers and words the search weighs it by; no index, no model."""
    phrases = tuple(p.strip() for m in _QUOTED.finditer(query) if (p := m.group("a") or m.group("b")) and words(p))
    idents = tuple(dict.fromkeys([*(b.strip() for b in _BACKTICK.findall(query)), *_IDENT.findall(query)]))
    ws = words(query)
    ids = tuple(identifier_mentions(query))

    def result(kind: QueryKind, reason: str) -> Analysis:
        return Analysis(kind, phrases, idents, ws, reason, ids)

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
