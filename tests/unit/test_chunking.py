from assist.index.chunking import MAX_CHARS, chunk_document

DOC = """# Configuration

Intro paragraph.

## Model slots

Main and light.

### Light slot

Falls back to main.

```bash
# not a heading inside a fence
echo hi
```

## Model slots

A second section with the same heading.
"""


def test_chunks_follow_headings_with_stable_ids_and_paths():
    chunks = chunk_document("guide/configuration", DOC)
    assert [c.id for c in chunks] == [
        "guide/configuration#intro:0",
        "guide/configuration#model-slots:0",
        "guide/configuration#model-slots-light-slot:0",
        "guide/configuration#model-slots:1",
    ]
    assert chunks[0].title == "Configuration"
    assert chunks[2].heading == "Model slots > Light slot"
    assert "# not a heading inside a fence" in chunks[2].text
    assert chunks[2].content.startswith("Configuration > Model slots > Light slot\n")


def test_ids_do_not_change_when_the_text_does():
    before = [c.id for c in chunk_document("d", DOC)]
    after = [c.id for c in chunk_document("d", DOC.replace("Main and light.", "Main and light, now longer."))]
    assert before == after


def test_long_sections_are_windowed_under_the_limit():
    body = "\n\n".join(f"Paragraph {i} " + "word " * 60 for i in range(40))
    chunks = chunk_document("long", f"# Long\n\n## Part\n\n{body}")
    assert len(chunks) > 3
    assert all(len(c.text) <= MAX_CHARS for c in chunks)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert "Paragraph 39" in chunks[-1].text


def test_a_giant_single_line_is_text_not_a_heading():
    line = "# " + "ADR text " * 600
    chunks = chunk_document("adr", line)
    assert chunks
    assert "ADR text" in chunks[0].text
