"""The uncertainty verdict's rules (ADR 0055) and the fixed answer it gives, on made-up retrieval results."""

from __future__ import annotations

from assist.answer.not_covered import nearest_topics, not_covered
from assist.answer.phrases import PHRASES
from assist.contracts import Chunk, Confidence, RetrievalResult, UncertainReason
from assist.retrieve.verdict import Weights, content_words, coverage, judge

WEIGHTS = Weights(threshold=0.65, centrality=1.0, coverage=0.3)


def chunk(
    text: str, found_by: tuple[str, ...] = ("fts_relaxed", "vector"), title: str = "Routing", heading: str = ""
) -> Chunk:
    return Chunk(id="d#h:0", doc_id="d", title=title, heading=heading, text=text, score=1.0, found_by=list(found_by))


def result(
    chunks: list[Chunk],
    similarity: float | None = 0.5,
    centrality: float | None = 0.2,
    confidence: Confidence = Confidence.HIGH,
):
    return RetrievalResult(chunks=chunks, confidence=confidence, similarity=similarity, centrality=centrality)


def test_coverage_counts_content_words_by_their_stem():
    assert content_words("How is the engine configured?") == {"engin", "confi"}
    assert coverage("How is the engine configured?", [chunk("Configuration of the engine")]) == 1.0
    assert coverage("a good recipe for lemon cake", [chunk("the cache is good", title="")]) == 0.0
    assert coverage("what is it", [chunk("anything")]) == 1.0  # nothing to look for


def test_no_passage_and_loose_phases_are_uncertain_with_their_reason():
    assert judge("q", result([]), WEIGHTS).reason is UncertainReason.NO_RELEVANT_PASSAGE
    loose = judge("q", result([chunk("x")], confidence=Confidence.SPECULATIVE), WEIGHTS)
    assert loose.uncertain
    assert loose.reason is UncertainReason.LOW_RETRIEVAL_CONFIDENCE


def test_the_weighted_sum_decides_out_of_scope():
    words = "engine configured"
    near = judge(words, result([chunk("the engine is configured")], similarity=0.3, centrality=0.1), WEIGHTS)
    assert not near.uncertain
    assert near.score == 0.3 + 0.1 + 0.3 * 1.0
    far = judge("lemon cake recipe", result([chunk("the engine is configured")], 0.2, 0.0), WEIGHTS)
    assert far.uncertain
    assert far.reason is UncertainReason.OUT_OF_SCOPE
    assert far.coverage == 0.0
    assert far.detail().reason is UncertainReason.OUT_OF_SCOPE
    assert far.detail().score == 0.2


def test_named_documents_untranslated_questions_and_missing_vectors_are_not_called_out_of_scope():
    far = result([chunk("x", found_by=("identifier",))], 0.0, 0.0)
    assert not judge("lemon cake", far, WEIGHTS).uncertain
    assert not judge("tarta de limón", result([chunk("x")], 0.0, 0.0), WEIGHTS, readable=False).uncertain
    assert not judge("lemon cake", result([chunk("x")], None, None), WEIGHTS).uncertain  # embedder timed out


def test_not_covered_speaks_the_question_language_and_lists_the_nearest_topics():
    topics = nearest_topics(
        [chunk("a", title="Routing", heading="Layers"), chunk("b", title="Routing", heading="Layers"), chunk("c")],
        ["FAQ"],
    )
    assert topics == ["Routing › Layers", "Routing", "FAQ"]
    en = not_covered("What is a good recipe for lemon cake?", topics)
    assert en.startswith(PHRASES["en"]["not_covered"])
    assert "- Routing › Layers" in en
    es = not_covered("¿Cuál es una buena receta de tarta de limón?", topics)
    assert es.startswith(PHRASES["es"]["not_covered"])
    assert PHRASES["es"]["nearest"] in es
    assert not_covered("What is a good recipe for lemon cake?", []).endswith(PHRASES["en"]["none"])
