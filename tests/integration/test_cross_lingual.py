"""A question in another language than the index (ADR 0038): with an LLM configured, the
full-text side searches its translation; without one, the question is searched as asked. Through the
real engine, the docs index and the Ollama test server (which records what it was asked)."""

from __future__ import annotations

import pytest

from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.contracts import AskRequest, QueryType
from assist.query.translate import TRANSLATE_PROMPT

pytestmark = pytest.mark.integration
QUESTION = "¿Qué variable define el modelo de la ranura ligera?"
TRANSLATION = "Which variable sets the light slot model?"


def ask(settings, session_id: str):
    engine = build_engine(settings, client("dynamodb", settings))
    return engine.ask(AskRequest(session_id=session_id, message=QUESTION, query_type=QueryType.RETRIEVAL))


def test_a_spanish_question_searches_an_english_translation_on_the_full_text_side(docs_index, ollama, session_id):
    s = docs_index.with_(
        ollama={
            "host": ollama.url,
            "host_explicit": True,
            "model_name": "main-model:1b",
            "model_name_conversational": "light-model:0.5b",
        }
    )
    ollama.queue_replies([TRANSLATION], model="light-model:0.5b")
    answer = ask(s, session_id)
    asked = ollama.calls("/api/chat", model="light-model:0.5b")[0].body["messages"]
    assert asked[0]["content"] == TRANSLATE_PROMPT.format(language="English")
    assert asked[-1]["content"] == QUESTION
    translate = next(st for st in answer.trace.stages if st.name == "translate")
    assert translate.source_language == "es"
    assert translate.query == TRANSLATION
    assert answer.route.lexical_query == TRANSLATION
    assert answer.route.retrieval_query == QUESTION  # what was asked stays on the route
    assert "OLLAMA_MODEL_NAME_CONVERSATIONAL" in " ".join(c.text for c in answer_chunks(answer, s))


def answer_chunks(answer, settings):
    from assist.ask.build import lazy_retriever

    return lazy_retriever(settings)().fetch([src.id for src in answer.sources])


def test_without_a_model_the_question_is_searched_as_asked(docs_index, session_id):
    answer = ask(docs_index, session_id)
    assert "translate" not in [st.name for st in answer.trace.stages]
    assert answer.route.lexical_query is None
