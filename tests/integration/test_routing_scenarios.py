"""The PRD-0003 routing scenarios through the real pipeline: HTTP (uvicorn) → engine → intent history in DynamoDB (moto
server) → cascade (shipped model, ONNX MiniLM) → LanceDB retrieval → Ollama test server."""

from __future__ import annotations

import pytest

from assist.settings import DEFAULT_CLASSIFIER_MODEL, Settings
from tests.integration.conftest import answered, served

pytestmark = pytest.mark.integration
MODEL = DEFAULT_CLASSIFIER_MODEL
DOC_TURNS = [
    "How does the retry policy of the HTTP connector work?",
    "What is the intent history?",
    "How is the documentation index built?",
    "What does the platform prefix rule do?",
    "How does hybrid retrieval rank passages?",
]


def is_classifier_call(body: dict) -> bool:
    return "<history_rule>" in body["messages"][0]["content"]


def reply_for(label: str):
    """Classifier calls get `label`; answer calls get an answer."""
    return lambda body: label if is_classifier_call(body) else "An answer [1]."


@pytest.fixture
def settings(docs_index: Settings, ollama) -> Settings:
    return docs_index.with_(
        classifier={"model_path": MODEL},
        ollama={
            "host": ollama.url,
            "host_explicit": True,  # as with OLLAMA_HOST set: the LLM layer is on
            "model_name": "main-model:1b",
            "model_name_conversational": "light-model:0.5b",
        },
    )


def api(settings: Settings):
    return served(settings)


def ask(base: str, **body) -> dict:
    return answered(base, **body)


def stage_names(reply: dict) -> list[str]:
    return [s["name"] for s in reply["trace"]["stages"]]


def classifier_calls(ollama) -> list:
    return [c for c in ollama.calls("/api/chat") if is_classifier_call(c.body)]


def test_the_platform_widget_prompt_is_platform_by_rule_with_no_classifier_call_and_no_retrieval(
    settings, ollama, session_id
):
    ollama.responder = reply_for("RETRIEVAL")
    with api(settings) as base:
        body = ask(
            base,
            session_id=session_id,
            message="You are a direct and concise assistant. You have a project usage percentage of 20%. "
            "Provide an insight. Rules: Exactly 3 sentences.",
            extra_context="project usage: 20% of 10,000 calls",
        )
    assert (body["route"]["type"], body["route"]["layer"]) == ("PLATFORM", "rules")
    assert "retrieve" not in stage_names(body)
    assert body["sources"] == []
    assert classifier_calls(ollama) == []
    assert [c.model for c in ollama.calls("/api/chat")] == ["light-model:0.5b"]  # the answer only


def test_a_usage_question_after_five_documentation_turns_is_platform(settings, ollama, session_id):
    ollama.responder = reply_for("RETRIEVAL")
    with api(settings) as base:
        docs = [ask(base, session_id=session_id, message=m) for m in DOC_TURNS]
        # the platform sends the account data with an account question (without it: ADR 0127)
        usage = ask(base, session_id=session_id, message="cuántas llamadas llevo este mes?", extra_context="1.204")
    assert [d["route"]["type"] for d in docs] == ["RETRIEVAL"] * 5
    assert usage["trace"]["history"] == [f'[RETRIEVAL] "{m[:60]}"' for m in DOC_TURNS]
    assert usage["route"]["type"] == "PLATFORM"
    assert usage["route"]["layer"] == "embedding"  # decided by content, with no model call
    assert "retrieve" not in stage_names(usage)


def test_explain_this_after_code_turns_is_code_generation(settings, ollama, session_id):
    ollama.responder = reply_for("RETRIEVAL")  # were the LLM asked, it would answer wrong
    with api(settings) as base:
        code = [
            ask(base, session_id=session_id, message="Write a Python handler that returns the order with the given id"),
            ask(base, session_id=session_id, message="Now add pagination to that handler with a page size of 20"),
        ]
        explain = ask(base, session_id=session_id, message="explain this", editor_content="def handler(event): ...")
    assert [c["route"]["type"] for c in code] == ["CODE_GENERATION"] * 2
    assert explain["route"]["type"] == "CODE_GENERATION"
    assert explain["route"]["layer"] == "embedding"
    assert "a reference to the previous CODE_GENERATION turn" in explain["route"]["reason"]
    assert classifier_calls(ollama) == []


def test_en_menos_palabras_is_conversational_and_skips_retrieval(settings, ollama, session_id):
    ollama.responder = reply_for("RETRIEVAL")
    with api(settings) as base:
        ask(base, session_id=session_id, message="How do webhook retries work?")
        short = ask(base, session_id=session_id, message="en menos palabras")
    assert short["route"]["type"] == "CONVERSATIONAL"
    assert short["route"]["model_slot"] == "light"
    assert "retrieve" not in stage_names(short)


def test_a_declared_type_bypasses_every_layer(settings, ollama, session_id):
    ollama.responder = reply_for("PLATFORM")
    with api(
        settings.with_(classifier={"confidence_threshold": 1.01})
    ) as base:  # any free-text message would reach the LLM
        body = ask(base, session_id=session_id, message="explain this", query_type="CODE_GENERATION")
    assert (body["route"]["type"], body["route"]["layer"], body["route"]["confidence"]) == (
        "CODE_GENERATION",
        "declared",
        1.0,
    )
    assert classifier_calls(ollama) == []


def test_the_llm_layer_sees_the_intent_history_and_never_raw_messages(settings, ollama, session_id):
    ollama.responder = reply_for("CODE_GENERATION")
    long_turns = [
        "Write a function that validates the signature of an incoming webhook and rejects replays older than 5 min",
        "How does the platform sign webhook payloads, and which header carries the signature and the timestamp?",
    ]
    with api(settings.with_(classifier={"confidence_threshold": 1.01})) as base:  # every free-text message asks the LLM
        first = ask(base, session_id=session_id, message=long_turns[0])
        second = ask(base, session_id=session_id, message=long_turns[1])
        third = ask(base, session_id=session_id, message="and in Go?")
    assert third["route"]["layer"] == "llm"
    assert third["route"]["reason"].startswith("llm: CODE_GENERATION (history 2 entries)")
    last = classifier_calls(ollama)[-1].body["messages"]
    prompt = "\n".join(m["content"] for m in last)
    expected = [f'[{r["route"]["type"]}] "{m[:60]}"' for r, m in zip((first, second), long_turns, strict=True)]
    assert expected == third["trace"]["history"]  # what the engine stored is what the classifier saw
    assert "\n".join(expected) in prompt
    for message in long_turns:
        assert message[60:] not in prompt  # no raw earlier message...
    assert "An answer [1]." not in prompt  # ...and no earlier answer
    assert "<message>\nand in Go?\n</message>" in prompt


# ADR 0042: questions about the corpus itself stay RETRIEVAL, decided by the shipped model's content layer; the
# conversation and account questions worded like them keep their types. None of these messages is a seed row.
CORPUS_AND_LOOKALIKES = [
    ("List all principles", "RETRIEVAL"),
    ("Lista todos los principios", "RETRIEVAL"),
    ("How many principles are there?", "RETRIEVAL"),
    ("Which principles are there?", "RETRIEVAL"),
    ("Tell me about ADR.0025", "RETRIEVAL"),
    ("Who approved ADR.12?", "RETRIEVAL"),
    ("how many questions did I ask?", "CONVERSATIONAL"),
    ("list what I asked", "CONVERSATIONAL"),
    ("how many calls did I make this month", "PLATFORM"),
]


@pytest.mark.parametrize(("message", "expected"), CORPUS_AND_LOOKALIKES)
def test_corpus_questions_are_retrieval_and_their_lookalikes_keep_their_type(
    settings, ollama, session_id, message, expected
):
    ollama.responder = reply_for("CODE_GENERATION")  # were the LLM asked, it would answer wrong
    account = {"extra_context": "calls this month: 1,204"} if expected == "PLATFORM" else {}  # as a platform asks
    with api(settings) as base:
        body = ask(base, session_id=session_id, message=message, **account)
    assert (body["route"]["type"], body["route"]["layer"]) == (expected, "embedding")
    assert classifier_calls(ollama) == []
