"""What each side of a search reads for a question translated into the index's language (ADR 0038). The full
text reads the translation. The vector side reads the translation with the English-only local embedder, and the
question as asked with a multilingual one. test_cross_lingual.py runs the first case through the real index."""

from __future__ import annotations

from typing import Any

import pytest

from assist.retrieve.analysis import Analysis, analyze
from assist.retrieve.search import Retriever, SearchOptions
from assist.settings import Settings

QUESTION = "¿Qué variable define el modelo de la ranura ligera?"
TRANSLATION = "Which variable sets the light slot model?"


def asked(options: SearchOptions, translated: str | None) -> tuple[str, Analysis | None]:
    """The query and the analysis `Retriever.search` hands to the search proper (which needs an index)."""
    seen: dict[str, Any] = {}

    def search(query: str, k: int, vector: Any, analysis: Analysis | None, **_: Any) -> tuple[None, dict]:
        seen.update(query=query, analysis=analysis)
        return None, {}

    retriever = Retriever(table=None, embedder=None, options=options)  # type: ignore[arg-type]
    retriever._search = search  # type: ignore[method-assign]
    retriever.search(QUESTION, k=5, translated=translated)
    return seen["query"], seen["analysis"]


@pytest.mark.parametrize(("embedder", "vector_reads"), [("minilm", TRANSLATION), ("ollama:bge-m3", QUESTION)])
def test_a_translated_question_is_read_in_full_text_as_translated_and_by_vector_as_the_embedder_reads(
    embedder: str, vector_reads: str
) -> None:
    options = SearchOptions.from_settings(Settings().with_(embed={"embedder": embedder}))
    query, analysis = asked(options, TRANSLATION)
    assert query == vector_reads
    assert analysis == analyze(TRANSLATION)


def test_a_question_without_a_translation_is_searched_as_asked() -> None:
    assert asked(SearchOptions(), None) == (QUESTION, None)
