"""What a turn's search looks for: the message, rewritten when it leans on the history (`rewrite.py`), and
translated when it is in another language than the index (`translate.py`, ADR 0038). Each step that ran is a
stage of the turn's trace (`rewrite`, `translate`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from assist.contracts import QueryBy, RewriteStage, TranslateStage
from assist.deadline import after, sooner
from assist.language import foreign
from assist.query.rewrite import deterministic_rewrite, leans_on_history, llm_rewrite
from assist.query.translate import llm_translate
from assist.trace import stage

if TYPE_CHECKING:
    from assist.contracts import TurnState
    from assist.llm.slots import ModelSlots
    from assist.settings import Settings


def resolve_search_query(
    state: TurnState, slots: Callable[[], ModelSlots], settings: Settings, may_call: Callable[[], bool]
) -> None:
    """The route's `retrieval_query` (the message, or its rewrite) and, for another language, its `lexical_query`.
    `may_call` says whether the turn may ask a model now, and counts the call on a widget key's budget (ADR 0092):
    it is asked only right before a model would be, and to translate only with a configured LLM; `slots` (the
    model client, built on first use) is called only when one is asked."""
    route, message = state.route, state.request.message
    assert route is not None, "classify runs before the search query"
    route.retrieval_query = message
    if leans_on_history(message, state.history):
        with stage(state, RewriteStage()) as st:
            rewritten = None
            if may_call():
                rewritten = llm_rewrite(slots(), message, state.history, _light_deadline(state, settings))
            st.by = QueryBy.LLM if rewritten else QueryBy.HISTORY
            route.retrieval_query = rewritten or deterministic_rewrite(message, state.history)
            st.query = route.retrieval_query
    lang = foreign(route.retrieval_query, settings.index.language)
    if lang is None or not settings.ollama.host_explicit or not may_call():
        return
    with stage(state, TranslateStage()) as st:
        to, deadline = settings.index.language, _light_deadline(state, settings)
        route.lexical_query = llm_translate(slots(), route.retrieval_query, to, deadline)
        st.source_language, st.to, st.by = lang, to, QueryBy.LLM if route.lexical_query else QueryBy.NONE
        st.query = route.lexical_query


def _light_deadline(state: TurnState, settings: Settings) -> float | None:
    """A search-query call (rewrite, translate) waits at most the LLM classifier's budget, and never past the
    turn's deadline: the answer still needs the rest."""
    return sooner(state.deadline, after(settings.classifier.llm_timeout_s))
