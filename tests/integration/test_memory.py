"""Conversational memory (docs/answering.md) through the real pipeline, with a counter on the retriever."""

from __future__ import annotations

from dataclasses import replace

import pytest

from assist.ask.build import build_engine, build_parts, lazy_retriever
from assist.ask.engine import Engine
from assist.aws.clients import client
from assist.contracts import AskRequest, QueryType
from assist.settings import Settings

pytestmark = pytest.mark.integration


class Counting:
    """The real retriever, counting its searches (fetching cited sources by id is not a search)."""

    def __init__(self, settings: Settings) -> None:
        self._get = lazy_retriever(settings)
        self.searches: list[str] = []

    def __call__(self):
        return self

    def search(self, query: str, k: int = 5, **kwargs):
        self.searches.append(query)
        return self._get().search(query, k, **kwargs)

    def fetch(self, ids, scope=None):
        return self._get().fetch(ids, scope)

    def unknown(self, terms, typos=0):  # the verdict's vocabulary look-ups are not searches either
        return self._get().unknown(terms, typos)

    def calibration(self):  # nor is reading the searched version's calibration (ADR 0096)
        return self._get().calibration()


@pytest.fixture
def engine_and_counter(docs_index: Settings, ollama):
    s = docs_index.with_(
        ollama={"host": ollama.url, "model_name": "main-model:1b", "model_name_conversational": "light-model:0.5b"}
    )
    counter = Counting(s)
    return Engine(s, replace(build_parts(s, client("dynamodb", s)), retriever=counter)), counter


def test_seed_003_plan_search_only_for_new_topics(engine_and_counter, ollama, session_id):
    engine, counter = engine_and_counter
    ollama.responder = lambda body: "answer to: " + body["messages"][-1]["content"][-80:]

    def ask(message: str):
        return engine.ask(AskRequest(session_id=session_id, message=message))

    first = ask("How does the engine stream answers to the client?")
    assert len(counter.searches) == 1
    follow = ask("Tell me more about the first one.")
    assert follow.route.type.value == "CONVERSATIONAL"
    assert len(counter.searches) == 1, "a follow-up on the previous answer is answered from memory"
    assert {s.id for s in follow.sources} <= {s.id for s in first.sources}, "earlier sources stay citable"
    assert follow.sources
    new = ask("What about the export of labeled data?")
    assert new.route.type.value == "RETRIEVAL"
    assert len(counter.searches) == 2
    recall = ask("What was my first question?")
    assert recall.route.type.value == "CONVERSATIONAL"
    assert len(counter.searches) == 2
    light_calls = ollama.calls("/api/chat", model="light-model:0.5b")
    seen = [m["content"] for m in light_calls[-1].body["messages"]]
    assert "How does the engine stream answers to the client?" in seen, "the model sees the session's messages"


def test_history_recall_without_a_model_lists_the_questions(docs_index: Settings, session_id):
    engine = build_engine(docs_index, client("dynamodb", docs_index))  # no Ollama
    engine.ask(AskRequest(session_id=session_id, message="Where is the index stored?"))
    recall = engine.ask(
        AskRequest(session_id=session_id, message="What was my first question?", query_type=QueryType.CONVERSATIONAL)
    )
    assert recall.degraded == ["llm_unavailable"]
    assert "1. Where is the index stored?" in recall.answer


def test_referential_follow_up_is_rewritten_by_the_llm(engine_and_counter, ollama, session_id):
    engine, counter = engine_and_counter
    engine.ask(AskRequest(session_id=session_id, message="How do I configure the light model slot?"))
    ollama.queue_replies(["configure the light model slot on another Ollama host"], model="light-model:0.5b")
    second = engine.ask(AskRequest(session_id=session_id, message="and how do I do that on another host?"))
    assert second.route.retrieval_query == "configure the light model slot on another Ollama host"
    assert counter.searches[-1] == second.route.retrieval_query
    rewrite_call = ollama.calls("/api/chat", model="light-model:0.5b")[0]
    prompt = rewrite_call.body["messages"][-1]["content"]
    assert '[RETRIEVAL] "How do I configure the light model slot?"' in prompt
    assert [s.name for s in second.trace.stages][:4] == ["history", "classify", "rewrite", "retrieve"]


def test_referential_follow_up_without_a_model_borrows_the_history_topic(docs_index: Settings, session_id):
    engine = build_engine(docs_index, client("dynamodb", docs_index))
    engine.ask(AskRequest(session_id=session_id, message="How do I configure the light model slot?"))
    second = engine.ask(AskRequest(session_id=session_id, message="and how do I do that on another host?"))
    assert second.route.retrieval_query == (
        "and how do I do that on another host? How do I configure the light model slot?"
    )
