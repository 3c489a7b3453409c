"""Corpus questions recognised against a manifest (pure: entries made from parsed documents, no index)."""

from pathlib import Path

import pytest

from assist.answer.corpus import extractive, section
from assist.answer.phrases import language
from assist.index.chunking import iter_documents, parse_document
from assist.index.manifest import Entry, entry_for, line, name
from assist.retrieve.corpus import Corpus, recognize
from tests.support import adr_corpus

BUDGET = 12_000


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Corpus:
    root = adr_corpus.write(tmp_path_factory.mktemp("adr"))
    docs = [parse_document(d, p.read_text(), str(p)) for d, p in iter_documents(root)]
    return Corpus(None, [entry_for(doc, str(root)) for doc in docs])


def ask(corpus: Corpus, question: str):
    return recognize(question, lambda: corpus, BUDGET)


def titles(corpus: Corpus, ids: list[str]) -> set[str]:
    return {corpus.by_id[i].title for i in ids}


def test_entries_carry_front_matter_fields_and_identifiers(corpus):
    e = corpus.by_id["decisions/0012-use-sign-convention-for-current"]
    assert e.title == "Use sign convention for current"
    assert e.label == "ADR.12"
    assert e.fields == {"status": "accepted", "date": "2025-06-13"}
    assert e.type == "decisions"
    assert "adr-12" in e.identifiers
    assert e.path == "decisions/0012-use-sign-convention-for-current.md"
    assert "Consequences" in e.headings


@pytest.mark.parametrize(
    ("question", "kind", "subject", "n"),
    [
        ("How many ADRs are there?", "count", "adr", 18),
        ("How many decisions are there?", "count", "decision", 18),
        ("List all architecture principles", "enumerate", "principle", 31),
        ("Which principles are there?", "enumerate", "principle", 31),
        ("¿Cuántos principios hay?", "count", "principle", 31),
        ("Lista todas las decisiones", "enumerate", "decision", 18),
        ("How many documents are there?", "count", "", 18 * 2 + 31 + 1),
        ("Is there a principle about privacy?", "existence", "principle", 31),
    ],
)
def test_count_list_and_existence_questions_get_every_matching_entry(corpus, question, kind, subject, n):
    m = ask(corpus, question)
    assert (m.kind, m.subject, m.matched) == (kind, subject, n)
    assert len(m.entries) == n  # all fit the budget
    if subject in ("adr", "decision"):  # the decisions, not their approval records nor the registry page
        given = titles(corpus, m.entries)  # one is titled by its heading, `ADR-0027: Use …`
        assert all(any(adr_corpus.adr_title(k) in t for t in given) for k in adr_corpus.ADR_NUMBERS)
        assert all(not corpus.by_id[i].label.endswith("D") for i in m.entries)
        assert "decisions/index" not in m.entries


def test_a_missing_id_is_an_existence_question_that_says_so(corpus):
    m = ask(corpus, "Does ADR.0050 exist?")
    assert (m.kind, m.missing, m.documents) == ("existence", ["adr-50"], [])
    text = section(m, corpus.by_id)
    assert "No document has the identifier ADR-50." in text
    assert all(adr_corpus.adr_title(k) in text for k in adr_corpus.ADR_NUMBERS)
    assert "No document with the identifier ADR-50 exists" in extractive(m, corpus.by_id)
    assert ask(corpus, "Tell me about ADR.0050").missing == ["adr-50"]


@pytest.mark.parametrize(
    ("question", "doc"),
    [
        ("What is the status of ADR.0027 about TLS security?", "decisions/0027-use-tls-13-for-all-traffic"),
        ("What does ADR-002 decide?", "decisions/ADR-002-use-event-sourcing-for-meter-data"),
        ("tell me about adr 10", "decisions/0010-use-cim-as-domain-language"),
        ("Háblame del PCP.17", "principles/0017-data-is-versioned-by-design"),
        ("Tell me about Use kafka for grid events", "decisions/0011-use-kafka-for-grid-events"),
    ],
)
def test_a_named_document_is_found_by_any_spelling_of_its_id_or_its_title(corpus, question, doc):
    m = ask(corpus, question)
    assert m.kind == "document"
    assert m.documents[0] == doc


def test_who_approved_brings_the_approval_record_after_the_decision(corpus):
    m = ask(corpus, "Who approved ADR.12?")
    assert m.documents == [
        "decisions/0012-use-sign-convention-for-current",
        "decisions/0012D-use-sign-convention-for-current",
    ]
    assert m.found_by == "identifier"


@pytest.mark.parametrize(
    "question",
    [
        "how many retries are there?",
        "What is http2?",
        "How does the engine route a question?",
        "list the options",
        # content questions (ADR 0042): they name a type but ask about content, not what exists
        "Which ADR chose the authentication standard? Answer with the ADR id only.",
        "What principle addresses data reliability?",
        "How do the architecture decisions support governance?",
    ],
)
def test_ordinary_questions_are_not_corpus_questions(corpus, question):
    assert ask(corpus, question) is None


def test_the_manifest_is_not_read_for_an_ordinary_question():
    def never():
        raise AssertionError("read the manifest")

    assert recognize("How does the engine route a question?", never, BUDGET) is None


def test_a_listing_is_cut_to_the_budget_but_counts_everything(corpus):
    m = recognize("List all principles", lambda: corpus, 500)
    assert m.matched == 31
    assert 0 < len(m.entries) < 31
    assert f"(Only the first {len(m.entries)} are listed here.)" in section(m, corpus.by_id)


def test_extractive_count_and_list_come_from_the_manifest(corpus):
    count = extractive(ask(corpus, "How many ADRs are there?"), corpus.by_id)
    assert "There are 18 ADR documents" in count
    assert "manifest" in count
    listing = extractive(ask(corpus, "List all principles"), corpus.by_id)
    assert all(adr_corpus.principle_title(n) in listing for n in adr_corpus.PRINCIPLE_NUMBERS)


def test_a_listing_names_each_document_once_with_its_status(corpus):
    listing = extractive(ask(corpus, "How many ADRs are there?"), corpus.by_id).splitlines()
    items = [x for x in listing if x.startswith("- ")]
    assert len(items) == 18
    assert "- ADR.12 — Use sign convention for current (accepted)" in items  # label and title, each once
    titled = next(x for x in items if "0027" in x)  # its title opens with its id: the label is not added
    assert titled == "- ADR-0027: Use tls 1.3 for all traffic (accepted)"
    for item in items:
        title = item[2:].split(" (")[0].split(" — ")[-1]
        assert item.count(title) == 1, item


def test_a_label_the_title_already_says_is_not_repeated():
    same = Entry(id="adr/0003", title="ADR 0003 — template.yaml is the one definition", label="ADR.3")
    other = Entry(id="adr/0012", title="Use CIM", label="ADR.0012")
    free = Entry(id="notes/a", title="Appendix A: glossary", label="Appendix A")
    assert [name(e) for e in (same, other, free)] == [
        "ADR 0003 — template.yaml is the one definition",
        "ADR.0012 — Use CIM",
        "Appendix A: glossary",
    ]
    assert line(same).startswith("- ADR 0003 — template.yaml is the one definition (")


def test_a_listing_cut_to_the_budget_says_so(corpus):
    m = recognize("List all principles", lambda: corpus, 500)
    listing = extractive(m, corpus.by_id)
    assert "The index has these 31 principle documents:" in listing
    assert listing.endswith(f"(Only the first {len(m.entries)} are listed here.)")


@pytest.mark.parametrize(
    ("question", "head"),
    [
        ("¿Cuántos ADR hay?", "Hay 18 documentos ADR en el índice:"),
        ("Lista todas las decisiones", "El índice tiene estos 18 documentos de tipo decision:"),
        ("¿Cuántos principios hay?", "Hay 31 documentos de tipo principle en el índice:"),
        ("¿Existe el ADR 50?", "Ningún documento del índice tiene el identificador ADR-50 (68 documentos)."),
        ("How many ADRs are there?", "There are 18 ADR documents in the index:"),
        ("Does ADR-50 exist?", "No document with the identifier ADR-50 exists in the index (68 documents)."),
    ],
)
def test_the_manifest_answer_speaks_the_questions_language(corpus, question, head):
    answer = extractive(ask(corpus, question), corpus.by_id, language(question))
    note, body = answer.split("\n\n", 1)
    assert body.splitlines()[0] == head
    spanish = question.startswith("¿") or question.startswith("Lista")
    assert note.startswith("El modelo de lenguaje no está disponible" if spanish else "The language model")


def test_identifier_spellings_resolve_to_one_document(tmp_path: Path):
    """ids spelled three ways in three documents; each spelling of each id finds its document."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "ADR-008-short-circuit-routing.md").write_text("# Short circuit\n\nText.\n")
    (tmp_path / "notes" / "cim.md").write_text("---\nnav_order: ADR.12\n---\n# Use CIM\n\nText.\n")
    (tmp_path / "notes" / "tls.md").write_text("# ADR-0027: TLS everywhere\n\nText.\n")
    docs = [parse_document(d, p.read_text(), str(p)) for d, p in iter_documents(tmp_path)]
    c = Corpus(None, [entry_for(doc, str(tmp_path)) for doc in docs])
    for number, doc in ((8, "notes/ADR-008-short-circuit-routing"), (12, "notes/cim"), (27, "notes/tls")):
        for spelling in (f"ADR-{number}", f"adr {number:04d}", f"ADR.{number:04d}"):
            m = recognize(f"What does {spelling} say?", lambda c=c: c, BUDGET)
            assert m is not None
            assert m.documents == [doc], spelling


def test_resolve_gives_the_documents_a_question_names_for_ranking(corpus):
    found, missing = corpus.resolve(["adr-12", "pcp-17", "adr-50", "http-2"])
    assert found == ["decisions/0012-use-sign-convention-for-current", "principles/0017-data-is-versioned-by-design"]
    assert missing == ["adr-50"]  # http-2: no document is numbered under `http`, so not missing either
