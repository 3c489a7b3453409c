"""Thinking kept out of answers (ADR 0078): whole replies and streams whose tags are split anywhere."""

from __future__ import annotations

import pytest

from assist.ollama_client import ModelFacts
from assist.thinking import HOLD_CHARS, ThinkFilter, strip_thinking

REPLIES = [
    ("<think>\nWhich source? The first.\n</think>\n\nUse the main slot [1].", False),
    ("  <think>Which source?</think>Use the main slot [1].", False),
    ("Which source? The first.\n</think>\n\nUse the main slot [1].", True),  # the template opened the tag
    ("Use the main slot [1].", True),
    ("Use the main slot [1].", False),
]


def streamed(text: str, stray: bool, size: int) -> tuple[str, str]:
    f, thought, answer = ThinkFilter(stray), "", ""
    for i in range(0, len(text), size):
        t, a = f.feed(text[i : i + size])
        thought, answer = thought + t, answer + a
    t, a = f.finish()
    return thought + t, answer + a


@pytest.mark.parametrize(("text", "stray"), REPLIES)
@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_a_stream_cut_anywhere_gives_the_answer_a_whole_reply_gives(text: str, stray: bool, size: int) -> None:
    thought, answer = streamed(text, stray, size)

    assert answer == strip_thinking(text, stray) == "Use the main slot [1]."
    assert "think>" not in answer
    assert ("Which source?" in thought) == ("Which source?" in text)


def test_an_answer_that_mentions_the_tag_later_is_kept_whole() -> None:
    text = "Ollama parses `<think>` blocks; a stray </think> is stripped."

    assert strip_thinking(text, stray=False) == text
    assert streamed(text, False, 3)[1] == text


def test_an_unclosed_block_is_all_thinking_and_a_long_reply_without_close_is_released() -> None:
    assert strip_thinking("<think>still thinking when the output limit came") == ""
    assert streamed("<think>still thinking", False, 4)[1] == ""
    long = "An answer with no tag at all. " * (HOLD_CHARS // 20)
    f = ThinkFilter(stray=True)
    released = f.feed(long)[1]
    assert released == long  # past HOLD_CHARS it was the answer: nothing is held back any longer
    assert f.feed(" more")[1] == " more"


def facts(*capabilities: str, family: str = "qwen3", present: bool | None = True) -> ModelFacts:
    model = "qwen3:1.7b" if family == "qwen3" else f"{family}:8b"
    return ModelFacts("http://h", model, present, capabilities, 40960 if present else None, family)


def test_think_is_sent_only_where_it_means_something() -> None:
    thinking, legacy, plain = facts("completion", "thinking"), facts("completion"), facts("completion", family="llama")
    unknown = facts(present=None)

    assert [thinking.think(w) for w in ("false", "true", "low")] == [False, True, "low"]
    assert [legacy.think(w) for w in ("false", "true")] == [None, None]  # never think: true without the capability
    assert [unknown.think(w) for w in ("false", "true")] == [False, None]
    assert (thinking.stray_think, legacy.stray_think, plain.stray_think, unknown.stray_think) == (
        False,
        True,
        False,
        True,
    )
    assert (thinking.window(8192), thinking.window(65536), unknown.window(65536)) == (8192, 40960, 65536)


def test_the_soft_switch_goes_only_to_a_reasoning_model_on_an_old_template() -> None:
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "Label:"}]

    assert facts("completion").soft_switch("false", msgs)[-1]["content"] == "Label: /no_think"
    assert facts("completion").soft_switch("true", msgs) == msgs
    assert facts("completion", "thinking").soft_switch("false", msgs) == msgs
    assert facts("completion", family="llama").soft_switch("false", msgs) == msgs
    assert msgs[-1]["content"] == "Label:"  # the caller's list is not changed
