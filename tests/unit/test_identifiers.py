import pytest

from assist.index.identifiers import document_identifiers, mentions, normalize, prefixes


@pytest.mark.parametrize("token", ["ADR-8", "ADR.0008", "adr 008", "adr_8", "Adr8", "ADR - 0008"])
def test_spellings_of_one_id_share_a_key(token):
    assert normalize(token) == "adr-8"


def test_normalize_keeps_a_suffix_letter_and_refuses_non_ids():
    assert normalize("PRINCIPLE-0017") == "principle-17"
    assert normalize("ADR.22D") == "adr-22d"  # an approval record is not the decision itself
    assert normalize("0012") is None
    assert normalize("use cim") is None
    assert normalize("ADR-8 and more") is None


def test_mentions_in_free_text_english_and_spanish():
    assert mentions("What does ADR-008 decide?") == ["adr-8"]
    assert mentions("compare adr 0008 with ADR.12 and PCP.22D") == ["adr-8", "adr-12", "pcp-22d"]
    assert mentions("¿Qué dice el principio 17 sobre la ADR.0027?") == ["principio-17", "principle-17", "adr-27"]
    assert mentions("is PRINCIPLE-0017 about data?") == ["principle-17"]
    assert mentions("decision 12 and decisions 3") == ["decision-12", "adr-12", "decisions-3", "adr-3"]


def test_mentions_over_generate_harmlessly_but_skip_glued_and_bare_numbers():
    # letters then digits is a candidate (the caller keeps only keys some document has) ...
    assert mentions("does it speak http2?") == ["http-2"]
    # ... but not numbers alone, not a word glued to more letters, not the middle of a path or version
    assert mentions("top 5% of 2024, version 1.2.3, sha256sum") == ["top-5", "of-2024"]
    assert mentions("see x9 and file.adr8") == []


def test_prefixes_of_folders_and_types():
    assert prefixes("decisions") == ["decision", "adr"]
    assert prefixes("Principles") == ["principle"]
    assert prefixes("adr") == ["adr"]
    assert prefixes("2025") == []


def test_document_identifiers_from_stem_front_matter_and_heading():
    ids = document_identifiers("decisions/0012-use-cim", "", {"parent": "Decisions", "nav_order": "ADR.12"}, "")
    assert "adr-12" in ids
    assert "decision-12" in ids
    assert "0012-use-cim" in ids
    assert "decisions/0012-use-cim" in ids
    # an approval record in the same folder keeps its letter: never mistaken for the decision
    dar = document_identifiers("decisions/0012D-use-cim", "", {"nav_order": "ADR.12D"}, "Decision Approval Record")
    assert "adr-12d" in dar
    assert "adr-12" not in dar
    # an id-led stem, a front-matter id, a numeric nav_order with the folder's prefix, a leading H1 id
    assert "adr-8" in document_identifiers("notes/ADR-008-short-circuit-routing", "", {}, "")
    assert "pcp-17" in document_identifiers("x/y", "", {"id": "PCP-0017"}, "")
    assert "adr-3" in document_identifiers("adr/use-x", "", {"nav_order": 3}, "")
    assert "adr-12" in document_identifiers("misc/use-cim", "", {}, "ADR-0012: Use CIM")


def test_an_id_merely_mentioned_in_a_title_is_not_the_documents_own():
    ids = document_identifiers("approvals/record", "", {"title": "Approval of ADR.12"}, "Approval of ADR.12")
    assert "adr-12" not in ids
