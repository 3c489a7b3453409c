"""What the answer stage works from: the passages (or the session so far) and, for a question about the corpus,
the `<corpus>` section; the prompt built from them to fit the model's window; and the answer written without a
model when no slot can answer (ADR 0073 keeps these apart from the stage runner, `engine.py`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec

from assist.answer import marker
from assist.answer.budget import Material, Prompt, fit_bounded, token_counter
from assist.answer.corpus import extractive, section
from assist.answer.extractive import conversation_recap, extractive_answer, platform_facts
from assist.answer.phrases import language, phrase
from assist.contracts import (
    AnsweredBy,
    AnsweredFrom,
    Chunk,
    CorpusMatch,
    CorpusStage,
    Degraded,
    Exchange,
    GenerateStage,
    PromptFit,
    QueryType,
    TurnState,
    UncertainReason,
)
from assist.llm.slots import Generation, LLMUnavailable
from assist.logs import get_logger
from assist.retrieve.documents import whole_document
from assist.thinking import strip_thinking
from assist.trace import named

if TYPE_CHECKING:
    from assist.llm.slots import ModelSlots
    from assist.retrieve.corpus import Corpus
    from assist.settings import Settings

log = get_logger(__name__)


@dataclass
class Context:
    """What the model sees besides the message: passages, and for CONVERSATIONAL the session so far."""

    chunks: list[Chunk]
    turns: list[Exchange] = field(default_factory=list)
    corpus: str = ""  # the `<corpus>` section of a question about the corpus itself (ADR 0042)
    corpus_answer: str | None = None  # its answer from the manifest alone, for when no model can answer
    documents: int = 0  # the first chunks are a named document's, given whole (ADR 0042)

    @property
    def conversation(self) -> list[dict[str, str]]:
        """The session's turns as chat messages; an answer stored before thinking was kept apart loses it here."""
        msgs: list[dict[str, str]] = []
        for t in self.turns:
            msgs += [{"role": "user", "content": t.message}, {"role": "assistant", "content": strip_thinking(t.answer)}]
        return msgs


def context_for(
    state: TurnState,
    corpus: Callable[[], Corpus | None] | None,
    settings: Settings,
    recall: Callable[[TurnState], object],
) -> Context:
    """Retrieved passages (and a corpus question's documents and section); or for CONVERSATIONAL the session's
    turns (read with the history) and the passages cited in them (`recall`ed here when no earlier stage did, as
    on the state machine's path)."""
    assert state.route is not None
    if state.route.type is not QueryType.CONVERSATIONAL:
        ctx = Context(state.retrieval.chunks if state.retrieval else [])
        return with_corpus(state, ctx, corpus, settings) if state.corpus is not None else ctx
    if state.memory is None:
        recall(state)
    return Context(state.memory or [], state.conversation)


def with_corpus(
    state: TurnState, ctx: Context, corpus: Callable[[], Corpus | None] | None, settings: Settings
) -> Context:
    """A corpus question's context: the named documents whole and first (then the other passages), and the
    `<corpus>` section. The budgets used go to the trace's `corpus` stage."""
    match = state.corpus
    assert match is not None
    try:
        manifest = corpus() if corpus is not None else None
    except Exception as exc:  # the retrieve stage read it; here (another process) it may fail: passages only
        log.warning("answer.corpus_failed", error=f"{type(exc).__name__}: {str(exc)[:200]}")
        manifest = None
    if manifest is None:
        state.degraded.append(Degraded.CORPUS_UNAVAILABLE)
        return ctx
    whole = _named_documents(match, manifest, settings.retrieve.document_chars)
    given = set(match.documents)
    chunks = whole + [c for c in ctx.chunks if c.doc_id not in given]
    text = section(match, manifest.by_id)
    if (st := named(state.stages, CorpusStage)) is not None:
        st.corpus_chars, st.document_chunks = len(text), len(whole)
        st.document_chars = sum(len(c.text) for c in whole)
    answer = extractive(match, manifest.by_id, language(state.request.message))
    return Context(chunks, ctx.turns, text, answer, documents=len(whole))


def _named_documents(match: CorpusMatch, corpus: Corpus, budget: int) -> list[Chunk]:
    whole: list[Chunk] = []
    for doc_id in match.documents:
        left = budget - sum(len(c.text) for c in whole)
        if left <= 0 and whole:
            break
        whole += whole_document(corpus.table, doc_id, max(left, 1), (match.found_by,) if match.found_by else ())
    return whole


def fit_to_model_window(state: TurnState, ctx: Context, slots: ModelSlots, settings: Settings) -> Prompt:
    """The prompt, built to fit the window the slot's call asks for (ADR 0079). The model host is asked for that
    window (each model's facts, read once per process), so a turn that may ask no model never calls this. What
    the prompt leaves out goes to the trace (`generate.prompt.dropped`) and `context_trimmed`; `ctx.chunks`
    become the sources it numbers."""
    req, route = state.request, state.route
    assert route is not None
    qtype = route.type
    material = Material(
        qtype,
        req.message,
        passages=ctx.chunks[ctx.documents :],
        documents=ctx.chunks[: ctx.documents],
        corpus=ctx.corpus,
        conversation=ctx.conversation if qtype is QueryType.CONVERSATIONAL else [],
        extra_context=req.extra_context if qtype is QueryType.PLATFORM else None,
        editor_content=req.editor_content if qtype is QueryType.CODE_GENERATION else None,
    )
    window = slots.window(route.model_slot, state.deadline)
    fitted = fit_bounded(material, window, lambda: token_counter(settings))
    ctx.chunks = fitted.chunks
    if fitted.dropped:
        state.degraded.append(Degraded.CONTEXT_TRIMMED)
        log.info("answer.context_trimmed", dropped=fitted.dropped, tokens=fitted.tokens, limit=window.limit())
    return fitted


def budget_spent() -> LLMUnavailable:
    """What stands for the model past a site key's daily budget (`TurnState.budget_spent`): none is asked."""
    return LLMUnavailable("the site key's daily model budget is spent", reason=Degraded.BUDGET)


def traced(st: GenerateStage, fitted: Prompt) -> None:
    """The prompt's size against its budget, on the `generate` stage."""
    st.prompt = msgspec.convert(fitted.trace(), PromptFit)


def answer_text(state: TurnState, st: GenerateStage, gen: Generation | LLMUnavailable | None, ctx: Context) -> str:
    """The answer text, from the model or — when every slot is down or too slow — without one."""
    route = state.route
    assert route is not None
    lang = language(state.request.message)
    if missing := (gen.missing if isinstance(gen, Generation | LLMUnavailable) else []):
        state.degraded.append(Degraded.MODEL_MISSING)
        st.missing_models = missing  # the models a host said it does not have (`ollama pull` them)
    if isinstance(gen, Generation):
        return _from_model(state, st, gen, lang)
    state.degraded.append(gen.reason if isinstance(gen, LLMUnavailable) else Degraded.LLM_UNAVAILABLE)
    # `answered_from` says what the answer quotes and `lang` in which language, so a client can say so in the
    # answer's own words (the web chat's and the widget's notice)
    st.model, st.answered_by, st.lang = None, AnsweredBy.EXTRACTIVE, lang
    route.model = ""  # the route names a model only when one answered (the configured one did not)
    if route.type is QueryType.PLATFORM:
        st.answered_from = AnsweredFrom.ACCOUNT_DATA
        return platform_facts(state.request.extra_context, lang)
    if route.type is QueryType.CONVERSATIONAL:
        st.answered_from = AnsweredFrom.CONVERSATION
        return conversation_recap(ctx.turns, lang)
    if ctx.corpus_answer is not None:
        st.answered_from = AnsweredFrom.MANIFEST
        return ctx.corpus_answer
    st.answered_from = AnsweredFrom.PASSAGES
    index_down = next((d for d in state.degraded if d.without_index), None)
    return extractive_answer(ctx.chunks, index_down=index_down, lang=lang)


def _from_model(state: TurnState, st: GenerateStage, gen: Generation, lang: str) -> str:
    assert state.route is not None
    state.degraded += gen.degraded
    state.route.model = gen.model
    st.model, st.answered_by, st.model_ms = gen.model, AnsweredBy(gen.slot), round(gen.model_ms, 2)
    st.usage = gen.usage
    st.asked = gen.request
    if state.request.force_answer:
        st.forced = True
    said_not_covered, text = marker.split(gen.text)
    if said_not_covered:  # the model's own verdict (ADR 0083): uncertain, its explanation kept
        state.uncertain_reason = st.verdict = UncertainReason.MODEL_NOT_COVERED
    if gen.truncated:  # cut at num_predict: the reader is told, not handed half an answer as whole
        return f"{text}\n\n{phrase('truncated', lang)}"
    return text
