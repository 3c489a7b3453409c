"""Query analysis (docs/retrieval.md's kinds plus code symbols), including the apostrophe case found in review."""

from __future__ import annotations

import pytest

from assist.contracts import QueryKind
from assist.retrieve.analysis import analyze, words


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ('where is "the light slot" configured', QueryKind.EXACT_QUOTE),
        ("“answered from memory” in the docs", QueryKind.EXACT_QUOTE),
        ("busca «sin búsqueda» en la documentación", QueryKind.EXACT_QUOTE),
        ("the phrase 'weighted fusion' please", QueryKind.EXACT_QUOTE),
        ("how do I call addVar from a script", QueryKind.IDENTIFIER),
        ("what does ERR_429 mean", QueryKind.IDENTIFIER),
        ("OLLAMA_MODEL_NAME_CONVERSATIONAL", QueryKind.IDENTIFIER),
        ("when is classify.decided logged", QueryKind.IDENTIFIER),
        ("what is `slot_fallback`", QueryKind.IDENTIFIER),
        ("how does the index work on LanceDB", QueryKind.ENTITY),
        ("where do DynamoDB turns go", QueryKind.ENTITY),
        ("what is the default confidence threshold", QueryKind.FACTUAL),
        ("how many turns does the memory keep", QueryKind.FACTUAL),
        ("¿cuál es el límite por defecto del mensaje?", QueryKind.FACTUAL),
        ("how does routing decide the type of a message", QueryKind.CONCEPTUAL),
        ("explain two-phase streaming", QueryKind.CONCEPTUAL),
        ("¿cómo funciona la memoria conversacional?", QueryKind.CONCEPTUAL),
        ("streaming", QueryKind.EXPLORATORY),
        ("data privacy", QueryKind.EXPLORATORY),
    ],
)
def test_kinds(query, kind):
    assert analyze(query).kind is kind, analyze(query).reason


@pytest.mark.parametrize(
    "query",
    ["what's the engine's default model", "the engine's memory", "don't retry, won't it?", "LanceDB's commit store"],
)
def test_an_apostrophe_is_not_a_quote(query):
    a = analyze(query)
    assert a.kind is not QueryKind.EXACT_QUOTE
    assert a.phrases == ()


def test_document_identifiers_are_recognised_in_every_spelling():
    """`ADR-8`, `adr 0008`, `ADR.0008` are one key; a sentence around it changes nothing."""
    keys = {analyze(q).mentions for q in ("ADR-8", "adr 0008", "ADR.0008", "What does ADR-008 decide?")}
    assert keys == {("adr-8",)}
    assert analyze("how does routing decide the type").mentions == ()


def test_words_strip_operators_and_punctuation():
    assert words('"unbalanced - AND (x) *** a:b') == ("unbalanced", "AND", "x", "a", "b")
    assert words("-") == ()
