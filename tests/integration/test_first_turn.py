"""A first turn with nothing to answer from is judged by the documentation (ADR 0127), through the real parts: HTTP
(uvicorn) → engine → the routing classifier and the MiniLM embedder → LanceDB with docs/, moto DynamoDB, the Ollama
test server as the model. An everyday question the router sends to CONVERSATIONAL is answered "not in the docs"
with no model call; a first-turn recall question stays CONVERSATIONAL; the same everyday question later in a
session is the router's as before."""

from __future__ import annotations

import pytest

from assist.query.first_turn import REASON
from assist.settings import Settings
from assist_dev.doubles.ollama_server import OllamaTestServer
from tests.integration.conftest import answered, served

pytestmark = pytest.mark.integration
MAIN, LIGHT = "main-model:1b", "light-model:0.5b"
#: routed CONVERSATIONAL by the embedding layer (p 0.99): the LLM classifier is never asked
EVERYDAY = "Tell me a joke about cats."
RECALL = "What did I ask?"


@pytest.fixture(scope="module")
def llm():
    with OllamaTestServer(models=[MAIN, LIGHT]) as srv:
        yield srv


@pytest.fixture(scope="module")
def base(docs_index: Settings, llm):
    with served(
        docs_index.with_(ollama={"host": llm.url, "model_name": MAIN, "model_name_conversational": LIGHT})
    ) as url:
        yield url


def test_an_everyday_first_turn_is_not_in_the_docs_and_asks_no_model(base, llm, session_id):
    before = len(llm.calls())
    a = answered(base, session_id=session_id, message=EVERYDAY)
    assert a["route"]["type"] == "RETRIEVAL"
    assert a["route"]["reason"].endswith(REASON)
    assert a["route"]["reason"].startswith("embedding")  # the router's own decision, kept in the reason
    assert (a["uncertain"], a["uncertain_reason"]) == (True, "out_of_scope")
    assert a["answer"].startswith("The documentation does not cover this question")
    assert len(llm.calls()) == before  # no model: neither slot answered from its general knowledge
    classify = next(s for s in a["trace"]["stages"] if s["name"] == "classify")
    assert classify["type"] == "CONVERSATIONAL"  # the trace keeps what the router said


def test_a_first_turn_recall_question_stays_conversational(base, llm, session_id):
    llm.reply("You have not asked anything yet.", model=LIGHT)
    a = answered(base, session_id=session_id, message=RECALL)
    assert a["route"]["type"] == "CONVERSATIONAL"
    assert REASON not in a["route"]["reason"]
    assert a["uncertain"] is False
    assert a["answer"] == "You have not asked anything yet."


def test_later_in_a_session_the_router_decides_as_before(base, llm, session_id):
    llm.reply("Settings come from the environment [1].", model=MAIN)
    answered(base, session_id=session_id, message="How is the engine configured?", query_type="RETRIEVAL")
    llm.reply("Here is one about cats.", model=LIGHT)
    a = answered(base, session_id=session_id, message=EVERYDAY)
    assert a["route"]["type"] == "CONVERSATIONAL"
    assert a["uncertain"] is False
