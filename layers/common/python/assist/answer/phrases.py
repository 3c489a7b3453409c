"""The fixed sentences of answers written without a model, in the question's language.

One table per language and one lookup, so every extractive path (passages, account facts, recaps, the
corpus manifest) speaks as the person asked. A language without a table, or a question too short to
tell, gets English: the documentation's own language.
"""

from __future__ import annotations

from assist.language import detect

DEFAULT = "en"
PHRASES: dict[str, dict[str, str]] = {
    "en": {
        "passages": "The language model is unavailable, so these are the most relevant passages from the "
        "documentation:",
        "loading_index": "The language model is unavailable, and the documentation index was still loading (copied "
        "or opened for its first search) when this answer was due; please retry in a moment.",
        "slow_index": "The language model is unavailable, and the documentation index did not answer within its "
        "time budget; please retry shortly.",
        "failed_index": "The language model is unavailable, and the documentation index could not be searched "
        "(it failed to open or to read); please retry shortly.",
        "no_passage": "The language model is unavailable and no documentation passage matched this question.",
        "no_account_data": "The language model is unavailable and no account data was provided with this request.",
        "account_data": "The language model is unavailable. The account data provided with this request says:",
        "no_earlier": "The language model is unavailable and this session has no earlier messages.",
        "recap": "The language model is unavailable, so I cannot rephrase. Your questions in this session so far:",
        "last_answer": "The last answer was:",
        "manifest": "The language model is unavailable, so this answer comes from the index's list of documents "
        "(its manifest).",
        "missing": "No document with the identifier {ids} exists in the index ({total} documents).",
        "exist": "{n} {what} exist:",
        "count": "There are {n} {what} in the index:",
        "list": "The index has these {n} {what}:",
        "only_first": "(Only the first {shown} are listed here.)",
        "documents": "documents",
        "acronym_documents": "{subject} documents",
        "typed_documents": "{subject} documents",
        "without_account_data": "No account data came with this question, so I can answer only from the documentation.",
        "not_covered": "The documentation does not cover this question, so I will not guess an answer.",
        "nearest": "The nearest topics it does cover:",
        "not_in_scope": "These docs ({scope}) do not cover this question, so I will not answer from another version.",
        "elsewhere": "This is covered in {scope}:",
        "none": "Try other words, or ask about a topic the documentation covers.",
        "truncated": "(This answer was cut off at the model's output limit: ask for the rest, or for a shorter "
        "answer.)",
    },
    "es": {
        "passages": "El modelo de lenguaje no está disponible, así que estos son los pasajes más relevantes de la "
        "documentación:",
        "loading_index": "El modelo de lenguaje no está disponible, y el índice de la documentación aún se estaba "
        "cargando (copiando o abriendo para su primera búsqueda) cuando había que responder; vuelve a intentarlo en "
        "un momento.",
        "slow_index": "El modelo de lenguaje no está disponible, y el índice de la documentación no respondió "
        "dentro de su tiempo; vuelve a intentarlo en unos momentos.",
        "failed_index": "El modelo de lenguaje no está disponible, y no se pudo buscar en el índice de la "
        "documentación (falló al abrirse o al leerse); vuelve a intentarlo en unos momentos.",
        "no_passage": "El modelo de lenguaje no está disponible y ningún pasaje de la documentación responde a esta "
        "pregunta.",
        "no_account_data": "El modelo de lenguaje no está disponible y esta petición no trae datos de la cuenta.",
        "account_data": "El modelo de lenguaje no está disponible. Los datos de la cuenta que trae esta petición "
        "dicen:",
        "no_earlier": "El modelo de lenguaje no está disponible y esta sesión no tiene mensajes anteriores.",
        "recap": "El modelo de lenguaje no está disponible, así que no puedo reformular. Tus preguntas en esta sesión "
        "hasta ahora:",
        "last_answer": "La última respuesta fue:",
        "manifest": "El modelo de lenguaje no está disponible, así que esta respuesta sale de la lista de documentos "
        "del índice (su manifiesto).",
        "missing": "Ningún documento del índice tiene el identificador {ids} ({total} documentos).",
        "exist": "Existen {n} {what}:",
        "count": "Hay {n} {what} en el índice:",
        "list": "El índice tiene estos {n} {what}:",
        "only_first": "(Solo se listan aquí los {shown} primeros.)",
        "documents": "documentos",
        "acronym_documents": "documentos {subject}",
        "typed_documents": "documentos de tipo {subject}",
        "without_account_data": "Esta pregunta no trae datos de la cuenta, así que solo puedo responder con la "
        "documentación.",
        "not_covered": "La documentación no cubre esta pregunta, así que no voy a inventar una respuesta.",
        "nearest": "Los temas más cercanos que sí cubre:",
        "not_in_scope": "Esta documentación ({scope}) no cubre esta pregunta, así que no responderé con otra versión.",
        "elsewhere": "Esto se trata en {scope}:",
        "none": "Pruebe con otras palabras, o pregunte por un tema que la documentación cubra.",
        "truncated": "(Esta respuesta se cortó al llegar al límite de salida del modelo: pide el resto, o una "
        "respuesta más breve.)",
    },
}


def language(question: str) -> str:
    """The language to answer `question` in: one with a table here, else English. A fixed sentence needs
    only a lean (one function word more than any other language), not the search's firmer guess."""
    lang = detect(question, margin=1)
    return lang if lang in PHRASES else DEFAULT


def phrase(key: str, lang: str = DEFAULT, **values: object) -> str:
    """The sentence `key` in `lang` (English where that language has no table), with `values` filled in."""
    return PHRASES.get(lang, PHRASES[DEFAULT])[key].format(**values)
