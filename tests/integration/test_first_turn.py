"""A turn with nothing to answer from is judged by the documentation (ADR 0127), through the real parts: HTTP
(uvicorn) → engine → the routing classifier and the MiniLM embedder → LanceDB with docs/, moto DynamoDB, the Ollama
test server as the model. An everyday question the router sends to CONVERSATIONAL is answered "not in the docs"
with no model call; a first-turn recall question stays CONVERSATIONAL; the same everyday question later in a
session is the router's as before. PLATFORM without account data says so, then answers from the docs or says they
do not cover it: never the light model on its own."""

from __future__ import annotations

import json

import httpx
import pytest

from assist.answer.phrases import phrase
from assist.query.first_turn import NO_ACCOUNT_DATA, REASON
from assist.settings import Settings
from tests.integration.conftest import answered

pytestmark = pytest.mark.integration
MAIN, LIGHT = "main-model:1b", "light-model:0.5b"
#: routed CONVERSATIONAL by the embedding layer (p 0.99): the LLM classifier is never asked
EVERYDAY = "Tell me a joke about cats."
RECALL = "What did I ask?"


@pytest.fixture
def api_settings(docs_index: Settings, ollama) -> Settings:
    return docs_index.with_(ollama={"host": ollama.url, "model_name": MAIN, "model_name_conversational": LIGHT})


def test_an_everyday_first_turn_is_not_in_the_docs_and_asks_no_model(api, ollama, session_id):
    before = len(ollama.calls())
    a = answered(api, session_id=session_id, message=EVERYDAY)
    assert a["route"]["type"] == "RETRIEVAL"
    assert a["route"]["reason"].endswith(REASON)
    assert a["route"]["reason"].startswith("embedding")  # the router's own decision, kept in the reason
    assert (a["uncertain"], a["uncertain_reason"]) == (True, "out_of_scope")
    assert a["answer"].startswith("The documentation does not cover this question")
    assert len(ollama.calls()) == before  # no model: neither slot answered from its general knowledge
    classify = next(s for s in a["trace"]["stages"] if s["name"] == "classify")
    assert classify["type"] == "CONVERSATIONAL"  # the trace keeps what the router said


def test_a_first_turn_recall_question_stays_conversational(api, ollama, session_id):
    ollama.reply("You have not asked anything yet.", model=LIGHT)
    a = answered(api, session_id=session_id, message=RECALL)
    assert a["route"]["type"] == "CONVERSATIONAL"
    assert REASON not in a["route"]["reason"]
    assert a["uncertain"] is False
    assert a["answer"] == "You have not asked anything yet."


def test_later_in_a_session_the_router_decides_as_before(api, ollama, session_id):
    ollama.reply("Settings come from the environment [1].", model=MAIN)
    answered(api, session_id=session_id, message="How is the engine configured?", query_type="RETRIEVAL")
    ollama.reply("Here is one about cats.", model=LIGHT)
    a = answered(api, session_id=session_id, message=EVERYDAY)
    assert a["route"]["type"] == "CONVERSATIONAL"
    assert a["uncertain"] is False


def streamed(base: str, **body) -> list[dict]:
    with httpx.stream("POST", f"{base}/v1/ask/stream", json=body, timeout=60) as r:
        return [json.loads(x[5:]) for x in r.iter_lines() if x.startswith("data:")]


def test_platform_without_account_data_says_so_and_answers_from_the_docs(api, ollama, session_id):
    before = len(ollama.calls(model=LIGHT))
    ollama.reply("Quotas are set per widget key [1].", model=MAIN)
    events = streamed(api, session_id=session_id, message="How much of my quota is left?", query_type="PLATFORM")
    route, done = events[0], events[-1]  # the route event is the route, with its sources
    assert (route["type"], route["model_slot"]) == ("RETRIEVAL", "main")
    assert route["reason"].endswith(NO_ACCOUNT_DATA)
    assert done["answer"] == phrase("without_account_data") + "\n\nQuotas are set per widget key [1]."
    assert "".join(e.get("text", "") for e in events[1:-1]) == done["answer"]  # the note streamed first
    assert "<sources>" in json.dumps(ollama.calls(model=MAIN)[-1].body)  # from the passages, not the model's own
    assert len(ollama.calls(model=LIGHT)) == before


def test_platform_without_account_data_out_of_the_docs_is_not_in_the_docs(api, ollama, session_id):
    before = len(ollama.calls())
    a = answered(api, session_id=session_id, message=EVERYDAY, query_type="PLATFORM")
    assert (a["uncertain"], a["route"]["type"]) == (True, "RETRIEVAL")
    assert a["answer"].startswith(phrase("without_account_data") + "\n\nThe documentation does not cover")
    assert len(ollama.calls()) == before  # no model: neither slot answered from its general knowledge
