"""The uncertainty verdict's rules (ADR 0055) and the fixed answer it gives, on made-up retrieval results."""

from __future__ import annotations

import msgspec
import pytest

from assist.answer.not_covered import links, not_covered
from assist.answer.phrases import PHRASES
from assist.contracts import Chunk, Confidence, RetrievalResult, UncertainReason
from assist.offline.retrieve.verdict_fit import Evidence, Targets, fit, flagged
from assist.retrieve.verdict import Weights, absence, content_words, coverage, judge, names, nearest_topics, terms

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
    linked = msgspec.structs.replace(
        chunk("a", title="Routing", heading="Layers"), url="https://docs.example/routing#layers"
    )
    near = not_covered("¿Receta de tarta?", nearest_topics([linked]), links([linked, chunk("b")]))
    assert near.endswith("- [Routing › Layers](https://docs.example/routing#layers)")  # the near miss, to follow


def test_terms_and_names_of_a_question():
    q = "How do I expose the engine's answers over a GraphQL endpoint?"
    assert terms(q) == ["expose", "engine", "answers", "graphql", "endpoint"]
    assert names(q) == {"how", "graphql"}  # "How" is no term: only names among the absent terms count
    # a capital anywhere (a claim's subject too), an acronym, a symbol; a word led by a digit is a quantity
    assert names("Tirzepatide reduces body weight by 40mg in 50s.") == {"tirzepatide"}
    assert names("Set OLLAMA_HOST and use classify.decided with eIF3") == {"set", "ollama", "host", "classify", "eif3"}


def test_absence_asks_the_vocabulary_only_for_terms_the_passages_lack():
    asked: list[list[str]] = []

    def vocabulary(ts, typos=0):
        asked.append(list(ts))
        return {t for t in ts if t in {"graphql", "endpoint"}}

    share, named, unknown = absence(
        "How do I expose answers over a GraphQL endpoint?", [chunk("answers are exposed over HTTP")], vocabulary
    )
    # "answers" is in the passage; the one name among the absent terms is asked again, a typo forgiven
    assert asked == [["expose", "graphql", "endpoint"], ["graphql"]]
    assert unknown == ("graphql", "endpoint")
    assert share == 2 / 4
    assert named == 1.0
    assert absence("lemon cake", [chunk("x")], None) == (0.0, 0.0, ())  # no vocabulary: nothing absent


def test_absent_terms_lower_the_score_only_when_weighted():
    r = result([chunk("the engine is configured with settings")], similarity=0.4, centrality=0.1)
    q = "How is the engine configured with Terraform?"
    plain = judge(q, r, WEIGHTS, vocabulary=lambda ts, typos=0: {"terraform"} & set(ts))
    assert not plain.uncertain
    assert plain.absent == 0.0  # weights off: the vocabulary is not asked
    weighted = Weights(threshold=0.65, centrality=1.0, coverage=0.3, absent=0.5, named=0.3)
    v = judge(q, r, weighted, vocabulary=lambda ts, typos=0: {"terraform"} & set(ts))
    assert v.uncertain
    assert v.unknown == ("terraform",)
    assert v.detail().unknown == ["terraform"]
    assert v.score == pytest.approx(plain.score - 0.5 * v.absent - 0.3)


def evidence(group: str, sim: float, absent: float = 0.0, named: float = 0.0, fixed: str | None = None) -> Evidence:
    return Evidence(group, "f", "id", "text", "high", fixed, None if fixed else (sim, 0.0, 1.0, absent, named))


def test_the_fit_holds_answerable_flags_under_the_margin_on_every_corpus_and_uses_the_absent_signal():
    # answerable questions score 0.4-0.8; off-topic ones 0.1-0.3; absent ones look answerable but name the unknown
    def corpus(shift: float) -> list[Evidence]:
        rows = [evidence("answerable", shift + 0.4 + i / 250) for i in range(100)]
        rows += [evidence("off-topic", shift + 0.1 + i / 100) for i in range(20)]
        rows += [evidence("absent", shift + 0.5 + i / 100, absent=0.3, named=1.0) for i in range(10)]
        return rows

    found = {"a": corpus(0.0), "b": corpus(0.1)}
    w, detail = fit(found, Targets(answerable=0.05, margin=0.5))
    assert w.named > 0 or w.absent > 0
    for rows in found.values():
        flags = flagged(rows, w)
        groups = [e.group for e in rows]
        share = {g: flags[[i for i, x in enumerate(groups) if x == g]].mean() for g in set(groups)}
        assert share["answerable"] <= 0.025
        assert share["off-topic"] == 1.0
        assert share["absent"] == 1.0
    assert detail["worst_ratio"] >= 1.0


def test_rows_decided_without_the_score_count_against_the_allowance():
    rows = [evidence("answerable", 0.9, fixed="no_relevant_passage")] * 5 + [evidence("answerable", 0.9)] * 95
    rows += [evidence("off-topic", 0.1)] * 10
    w, _ = fit({"a": rows}, Targets(answerable=0.05, margin=1.0))
    assert flagged(rows, w)[:100].sum() == 5  # the allowance is spent: no scored answerable row flagged
