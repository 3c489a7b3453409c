"""The fixed sentences of answers without a model speak the question's language (Spanish and English at
least); each language's table has every sentence, with the same blanks."""

from string import Formatter

import pytest

from assist.answer.extractive import conversation_recap, extractive_answer, platform_facts
from assist.answer.phrases import PHRASES, language, phrase
from assist.contracts import Chunk, Degraded, Exchange


def blanks(text: str) -> set[str]:
    return {field for _, field, _, _ in Formatter().parse(text) if field}


def test_every_language_has_every_sentence_with_the_same_blanks():
    english = PHRASES["en"]
    for lang, table in PHRASES.items():
        assert table.keys() == english.keys(), lang
        for key, text in table.items():
            assert blanks(text) == blanks(english[key]), (lang, key)
            assert lang == "en" or text != english[key], f"{lang}.{key} is not translated"


@pytest.mark.parametrize(
    ("question", "lang"),
    [
        ("¿Cuántos ADR hay?", "es"),
        ("Lista todas las decisiones", "es"),
        ("¿Dónde se guarda el índice?", "es"),
        ("¿Cómo funciona?", "es"),
        ("How many ADRs are there?", "en"),
        ("Where is the index stored?", "en"),
        ("ADR 12", "en"),  # nothing to tell by: the documentation's language
        ("Wie viele ADRs gibt es und was ist das?", "en"),  # German has no table yet: English
    ],
)
def test_the_language_of_a_question(question, lang):
    assert language(question) == lang


def test_a_sentence_fills_its_blanks_and_falls_back_to_english():
    assert phrase("count", "es", n=3, what="documentos") == "Hay 3 documentos en el índice:"
    assert phrase("count", "de", n=3, what="documents") == "There are 3 documents in the index:"


def test_the_passages_answer_speaks_spanish_to_a_spanish_question():
    chunk = Chunk(
        id="a#b:0", doc_id="a", title="Indexing", heading="Where the index lives", text="It is on S3. Ok.", score=1.0
    )
    spanish = extractive_answer([chunk], lang=language("¿Dónde se guarda el índice?"))
    assert spanish.startswith("El modelo de lenguaje no está disponible, así que estos son los pasajes")
    assert "[1] Indexing — Where the index lives: It is on S3. Ok." in spanish
    english = extractive_answer([chunk], lang=language("Where is the index stored?"))
    assert english.startswith("The language model is unavailable, so these are the most relevant passages")
    assert "aún se estaba cargando" in extractive_answer([], index_down=Degraded.INDEX_LOADING, lang="es")
    assert extractive_answer([], lang="en").endswith("no documentation passage matched this question.")


def test_a_heading_that_repeats_the_title_is_said_once():
    chunk = Chunk(id="a#:0", doc_id="a", title="Indexing", heading="Indexing", text="Text.", score=1.0)
    assert "[1] Indexing: Text." in extractive_answer([chunk])


def test_account_facts_and_recaps_speak_the_questions_language():
    assert platform_facts(None, "es").endswith("esta petición no trae datos de la cuenta.")
    assert platform_facts("plan: pro", "es").endswith("dicen:\nplan: pro")
    assert conversation_recap([], "es").endswith("esta sesión no tiene mensajes anteriores.")
    recap = conversation_recap([Exchange(message="¿Qué es un ADR?", answer="Un registro.")], "es")
    assert "Tus preguntas en esta sesión hasta ahora:\n1. ¿Qué es un ADR?" in recap
    assert recap.endswith("La última respuesta fue:\nUn registro.")
    assert conversation_recap([], "en").startswith("The language model is unavailable")
