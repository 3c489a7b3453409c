"""What each type's prompt must contain (docs/answering.md): sources and citations, editor code, memory,
account data."""

from assist.answer.marker import MARKER
from assist.answer.prompts import build_messages
from assist.contracts import Chunk, QueryType

CHUNKS = [
    Chunk(id="a#x:0", doc_id="a", title="Rate limits", heading="Burst", text="50 calls per second.", score=1.0),
    Chunk(id="b#y:0", doc_id="b", title="Keys", heading="Rotation", text="Rotate every 90 days.", score=0.5),
]


def joined(msgs: list[dict[str, str]]) -> str:
    return "\n".join(m["content"] for m in msgs)


def test_retrieval_numbers_sources_asks_for_citations_and_admits_gaps():
    msgs = build_messages(QueryType.RETRIEVAL, "What is the burst limit?", CHUNKS)
    text = joined(msgs)
    assert "[1] Rate limits — Burst\n50 calls per second." in text
    assert "[2] Keys — Rotation" in text
    assert "[1], [2]" in msgs[0]["content"]
    assert f"do not answer the question, do not guess: begin your reply with {MARKER}" in msgs[0]["content"]
    assert msgs[-1]["content"].endswith("Question: What is the burst limit?")


def test_code_generation_adds_the_editor_content_delimited():
    msgs = build_messages(QueryType.CODE_GENERATION, "fix this", CHUNKS, editor_content="for i in x: pritn(i)")
    assert "<editor>\nfor i in x: pritn(i)\n</editor>" in msgs[-1]["content"]
    assert "<sources>" in msgs[-1]["content"]
    assert "<editor>" not in joined(build_messages(QueryType.RETRIEVAL, "q", CHUNKS, editor_content="x = 1"))


def test_conversational_sees_the_session_and_earlier_sources_but_no_new_question_framing():
    convo = [{"role": "user", "content": "first?"}, {"role": "assistant", "content": "1. a 2. b 3. c"}]
    msgs = build_messages(QueryType.CONVERSATIONAL, "tell me more about item 3", CHUNKS, conversation=convo)
    assert msgs[-1] == {"role": "user", "content": "tell me more about item 3"}
    assert {"role": "assistant", "content": "1. a 2. b 3. c"} in msgs
    assert "Sources cited earlier" in joined(msgs)
    assert "Question:" not in joined(msgs)


def test_platform_puts_account_data_first_and_never_invents_it():
    msgs = build_messages(QueryType.PLATFORM, "how much have I used?", CHUNKS, extra_context="usage: 20% of 10k calls")
    system, user = msgs[0]["content"], msgs[-1]["content"]
    assert "primary source" in system
    assert "Never invent account data" in system
    assert "not available" in system
    assert user.startswith("<account_data>\nusage: 20% of 10k calls\n</account_data>")
    assert "<sources>" not in joined(msgs), "PLATFORM never sees documentation"
    empty = build_messages(QueryType.PLATFORM, "how much?", [], extra_context=None)
    assert "(no account data was provided)" in empty[-1]["content"]
