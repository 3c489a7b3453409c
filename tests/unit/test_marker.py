"""The model's marker (ADR 0083) stripped from a reply, whole and streamed in every split."""

from __future__ import annotations

import pytest

from assist.answer.marker import MARKER, MarkerFilter, split

EXPLAINED = f"{MARKER} The sources describe routing and retrieval, not cake recipes."


def streamed(reply: str, cuts: list[int]) -> tuple[str, bool, list[str]]:
    f = MarkerFilter()
    pieces = [reply[a:b] for a, b in zip([0, *cuts], [*cuts, len(reply)], strict=True)]
    shown = [f.feed(p) for p in pieces] + [f.close()]
    return "".join(shown), f.found, shown


def test_split_strips_the_marker_and_keeps_the_explanation():
    assert split(EXPLAINED) == (True, "The sources describe routing and retrieval, not cake recipes.")
    assert split(f"  **{MARKER.upper()}**: nothing on that.") == (True, "nothing on that.")
    assert split("The engine is configured by environment variables [1].") == (
        False,
        "The engine is configured by environment variables [1].",
    )
    assert split(f"Some answer, then {MARKER}") == (False, f"Some answer, then {MARKER}")  # only at the start


@pytest.mark.parametrize("cut", range(1, len(MARKER) + 8))
def test_a_marker_split_anywhere_is_never_shown(cut):
    text, found, shown = streamed(EXPLAINED, [cut])
    assert found
    assert text == split(EXPLAINED)[1]
    assert not any(p and p in MARKER for p in shown if p.strip())  # no piece of the marker reaches the reader


def test_a_marker_one_character_at_a_time():
    text, found, _ = streamed(EXPLAINED, list(range(1, len(EXPLAINED))))
    assert found
    assert text == split(EXPLAINED)[1]


def test_a_reply_without_the_marker_passes_unchanged_and_is_not_held_for_long():
    reply = "[1] says the engine reads its settings from the environment."
    text, found, shown = streamed(reply, list(range(1, len(reply))))
    assert not found
    assert text == reply
    assert shown[1] == "[1"  # "[1" cannot begin the marker: shown at once, not held to the end
    short, found, _ = streamed("[[no", [2])  # shorter than the marker: shown at the end
    assert (short, found) == ("[[no", False)
