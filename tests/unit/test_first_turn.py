"""A first turn with nothing to answer from is judged as RETRIEVAL (ADR 0127): which turns are (`unanchored`), what
the verdict would read of them (`readable`), and the route they get (`first_turn_route`); and the bank that keeps a
message acting on the conversation CONVERSATIONAL, with the real embedder, on the repo's first-turn rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assist.contracts import IntentEntry, Layer, QueryType, Route, Slot
from assist.language import detect
from assist.query.first_turn import (
    NO_ACCOUNT_DATA,
    REASON,
    first_turn_route,
    readable,
    unanchored,
    without_account_data,
)
from assist.query.recall import RecallBank
from assist.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
S = Settings().with_(ollama={"model_name": "main:1b", "model_name_conversational": "light:1b"})


def route(qtype: QueryType, layer: Layer = Layer.EMBEDDING, lexical: str | None = None) -> Route:
    return Route(qtype, layer, 0.9, "embedding p=0.90", qtype.model_slot, "light:1b", lexical_query=lexical)


@pytest.mark.parametrize(
    ("qtype", "layer", "history", "extra", "expected"),
    [
        (QueryType.CONVERSATIONAL, Layer.EMBEDDING, [], None, True),
        (QueryType.CONVERSATIONAL, Layer.FALLBACK, [], None, True),
        (QueryType.PLATFORM, Layer.LLM, [], None, True),
        (QueryType.PLATFORM, Layer.EMBEDDING, [IntentEntry(QueryType.RETRIEVAL, "x")], None, True),  # any turn
        (QueryType.PLATFORM, Layer.DECLARED, [], None, True),  # declared, but no data to answer from
        (QueryType.PLATFORM, Layer.EMBEDDING, [], "usage: 20%", False),  # account data to answer from
        (QueryType.CONVERSATIONAL, Layer.EMBEDDING, [IntentEntry(QueryType.RETRIEVAL, "x")], None, False),
        (QueryType.CONVERSATIONAL, Layer.DECLARED, [], None, False),  # the caller knows
        (QueryType.PLATFORM, Layer.RULES, [], None, False),  # a platform prefix: the platform's own text
        (QueryType.RETRIEVAL, Layer.EMBEDDING, [], None, False),  # judged anyway
        (QueryType.CODE_GENERATION, Layer.EMBEDDING, [], None, False),
    ],
)
def test_only_a_turn_sent_away_from_the_docs_with_nothing_to_answer_from_is_unanchored(
    qtype, layer, history, extra, expected
):
    assert unanchored(route(qtype, layer), history, extra) is expected


def test_the_verdict_reads_the_translation_or_the_message_in_the_index_language():
    assert readable(route(QueryType.CONVERSATIONAL), "Who won the Super Bowl?", S) == "Who won the Super Bowl?"
    spanish = "¿Quién ganó la última final de la Copa del Rey?"
    assert readable(route(QueryType.CONVERSATIONAL), spanish, S) is None  # no model: nothing can read it
    translated = route(QueryType.CONVERSATIONAL, lexical="Who won the last Copa del Rey final?")
    assert readable(translated, spanish, S) == "Who won the last Copa del Rey final?"


def test_an_unanchored_turn_becomes_retrieval_on_the_main_slot_saying_why():
    before = route(QueryType.CONVERSATIONAL)
    after = first_turn_route(before, "Who won the Super Bowl?", lambda _: False, S)
    assert (after.type, after.model_slot, after.model) == (QueryType.RETRIEVAL, Slot.MAIN, "main:1b")
    assert after.reason == f"embedding p=0.90; {REASON}"
    assert (after.layer, after.confidence) == (before.layer, before.confidence)  # who decided, as decided
    assert before.type is QueryType.CONVERSATIONAL  # a new route, the router's left as it was


def test_a_message_acting_on_the_conversation_stays_conversational_and_platform_is_never_asked():
    asked = []

    def refers(text: str) -> bool:
        asked.append(text)
        return True

    kept = route(QueryType.CONVERSATIONAL)
    assert first_turn_route(kept, "What did I ask?", refers, S) is kept
    assert first_turn_route(kept, None, refers, S) is kept  # unreadable: as routed
    assert not without_account_data(kept)
    for text in ("What did I ask?", None):  # without account data, read or not, PLATFORM is never the model's own
        platform = first_turn_route(route(QueryType.PLATFORM), text, refers, S)
        assert (platform.type, platform.reason) == (QueryType.RETRIEVAL, f"embedding p=0.90; {NO_ACCOUNT_DATA}")
        assert without_account_data(platform)
    assert asked == ["What did I ask?"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Repite tu última respuesta.", "es"),  # no function word of any table: its letters tell
        ("longitud máxima del mensaje", "es"),
        ("Qual é a versão atual?", "pt"),
        ("Configuração está pronta?", None),  # Portuguese letters: not taken for Spanish
        ("Tell me a joke about cats.", None),
        ("What does the piñata cost in the café?", "en"),  # function words decide first
    ],
)
def test_a_spanish_letter_tells_a_question_too_short_for_function_words(text, expected):
    assert detect(text) == expected


def _rows(name: str) -> list[str]:
    lines = (ROOT / "data" / "uncertain" / name).read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    return [r["metadata"].get("translation") or r["text"] for r in rows]  # as the verdict reads them


@pytest.fixture(scope="module")
def bank(embedder) -> RecallBank:
    return RecallBank(lambda: embedder)


def test_every_first_turn_recall_question_acts_on_the_conversation(bank):
    assert [q for q in _rows("recall.jsonl") if not bank.refers_to_conversation(q)] == []


def test_no_everyday_question_acts_on_the_conversation(bank):
    assert [q for q in _rows("everyday.jsonl") if bank.refers_to_conversation(q)] == []
