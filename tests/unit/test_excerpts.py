"""An extractive answer's excerpts: whole sentences, and a code block whole or not at all."""

from __future__ import annotations

from assist.answer.extractive import extractive_answer, first_sentences
from assist.contracts import Chunk

FENCE = "`" * 3


def test_an_excerpt_is_whole_sentences_and_leaves_code_blocks_out():
    text = (
        "Run the stack first. It serves the API on port 8000.\n\n"
        f"{FENCE}bash\nmake run\nassist local env\n{FENCE}\n\nThen ask it. Every answer cites its sources."
    )
    excerpt = first_sentences(text, n=3)
    assert excerpt == "Run the stack first. It serves the API on port 8000. Then ask it."
    assert FENCE not in excerpt
    # the limit stops at a sentence's end, never inside one
    assert first_sentences(text, n=3, max_chars=40) == "Run the stack first."


def test_a_passage_that_is_only_code_gives_the_block_whole_and_closed():
    closed = f"{FENCE}python\nprint('hi')\n{FENCE}"
    assert first_sentences(closed) == f"\n{closed}\n"
    cut = f"{FENCE}python\nfor i in range(3):\n    print(i)"  # a chunk that ends inside its block
    assert first_sentences(cut) == f"\n{cut}\n{FENCE}\n"


def test_every_fence_of_an_extractive_answer_is_closed():
    chunks = [
        Chunk(id=f"d#s{i}:0", doc_id="d", title="Guide", heading=h, text=t, score=1.0)
        for i, (h, t) in enumerate(
            [
                ("Install", f"Install it with pip.\n\n{FENCE}bash\npip install assist\n"),  # cut inside the block
                ("", f"{FENCE}toml\n[tool.assist]\nindex = 'docs'\n{FENCE}"),
                ("Ask", "Ask a question. The answer cites its sources."),
            ]
        )
    ]
    answer = extractive_answer(chunks)
    assert answer.count(FENCE) % 2 == 0
    assert "[1] Guide — Install: Install it with pip." in answer
    assert "[2] Guide: \n" in answer  # an empty heading: the page's title alone
