from assist.index import frontmatter
from assist.index.chunking import parse_document

ADR = """---
parent: Decisions
nav_order: ADR.12
dct:
  identifier: urn:uuid:f6a7b8c9
  title: Use CIM as default domain language
  isVersionOf: accepted
  issued: 2025-05-14
---
<!-- markdownlint-disable-next-line MD025 -->

# Use CIM as default domain language

## Context

We need one language.
"""


def test_front_matter_is_metadata_and_not_body():
    meta, body = frontmatter.split(ADR)
    assert meta["nav_order"] == "ADR.12"
    assert meta["dct"]["issued"] == "2025-05-14"  # dates become strings: JSON-safe
    assert frontmatter.text_field(meta, "title") == "Use CIM as default domain language"
    assert frontmatter.text_field(meta, "isVersionOf") == "accepted"
    assert "nav_order" not in body
    assert body.lstrip().startswith("<!--")


def test_flat_dublin_core_keys_are_read_too():
    meta, _ = frontmatter.split("---\ndct:title: Flat\nstatus: draft\n---\nBody\n")
    assert frontmatter.text_field(meta, "title") == "Flat"
    assert frontmatter.text_field(meta, "status") == "draft"


def test_malformed_or_non_mapping_blocks_are_body_text():
    for text in ("---\ntitle: [unclosed\n---\nBody\n", "---\n- a list\n---\nBody\n", "---\nno end\n\nBody\n"):
        meta, body = frontmatter.split(text)
        assert meta == {}
        assert body == text
    assert frontmatter.split("Text\n---\ntitle: x\n---\n") == ({}, "Text\n---\ntitle: x\n---\n")  # only at the top


def test_title_from_front_matter_then_h1_then_stem():
    doc = parse_document("decisions/0012-use-cim", ADR)
    assert doc.title == "Use CIM as default domain language"
    assert all("nav_order" not in c.text and "isVersionOf" not in c.text for c in doc.chunks)
    assert {c.title for c in doc.chunks} == {doc.title}
    assert doc.chunks[0].heading == "Context"  # the lint comment before the H1 is no chunk of its own
    assert doc.headings == ["Use CIM as default domain language", "Context"]
    assert parse_document("a/b", "# Heading one\n\ntext\n").title == "Heading one"
    assert parse_document("a/some-file_name", "text only\n").title == "Some File Name"


def test_ordinal_is_the_position_in_the_document():
    doc = parse_document("d", "# T\n\nintro\n\n## A\n\none\n\n## B\n\ntwo\n\n## A\n\nthree\n")
    assert [c.ordinal for c in doc.chunks] == [0, 1, 2, 3]
    assert [c.id for c in doc.chunks] == ["d#intro:0", "d#a:0", "d#b:0", "d#a:1"]
