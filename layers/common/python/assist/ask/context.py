"""What the answer stage works from: the passages (or the session so far) and, for a question about the corpus,
the `<corpus>` section; the prompt built from them; and the answer written without a model when no slot can
answer (ADR 0073 keeps these apart from the stage runner, `engine.py`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from assist.answer import marker
from assist.answer.corpus import extractive, section
from assist.answer.extractive import conversation_recap, extractive_answer, platform_facts
from assist.answer.llm import Generation, LLMUnavailable
from assist.answer.phrases import language
from assist.answer.prompts import build_messages
from assist.contracts import Chunk, CorpusMatch, Degraded, Exchange, QueryType, Stage, TurnState, UncertainReason
from assist.logs import get_logger
from assist.retrieve.documents import whole_document
from assist.trace import named

if TYPE_CHECKING:
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

    @property
    def conversation(self) -> list[dict[str, str]]:
        msgs: list[dict[str, str]] = []
        for t in self.turns:
            msgs += [{"role": "user", "content": t.message}, {"role": "assistant", "content": t.answer}]
        return msgs


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
    if (st := named(state.stages, "corpus")) is not None:
        st.corpus_chars, st.document_chunks = len(text), len(whole)
        st.document_chars = sum(len(c.text) for c in whole)
    answer = extractive(match, manifest.by_id, language(state.request.message))
    return Context(chunks, ctx.turns, text, answer)


def _named_documents(match: CorpusMatch, corpus: Corpus, budget: int) -> list[Chunk]:
    whole: list[Chunk] = []
    for doc_id in match.documents:
        left = budget - sum(len(c.text) for c in whole)
        if left <= 0 and whole:
            break
        whole += whole_document(corpus.table, doc_id, max(left, 1), (match.found_by,) if match.found_by else ())
    return whole


def messages(state: TurnState, ctx: Context) -> list[dict[str, str]]:
    req, route = state.request, state.route
    assert route is not None
    conversation = ctx.conversation if route.type is QueryType.CONVERSATIONAL else None
    return build_messages(
        route.type, req.message, ctx.chunks, conversation, req.extra_context, req.editor_content, corpus=ctx.corpus
    )


def answer_text(state: TurnState, st: Stage, gen: Generation | LLMUnavailable | None, ctx: Context) -> str:
    """The answer text, from the model or — when every slot is down or too slow — without one."""
    route = state.route
    assert route is not None
    if isinstance(gen, Generation):
        state.degraded += gen.degraded
        route.model = gen.model
        st.model, st.answered_by, st.model_ms, st.usage = gen.model, gen.slot, round(gen.model_ms, 2), gen.usage
        if state.request.force_answer:
            st.forced = True
        said_not_covered, text = marker.split(gen.text)
        if said_not_covered:  # the model's own verdict (ADR 0083): uncertain, its explanation kept
            state.uncertain_reason = st.verdict = UncertainReason.MODEL_NOT_COVERED
        return text
    state.degraded.append(gen.reason if isinstance(gen, LLMUnavailable) else Degraded.LLM_UNAVAILABLE)
    lang = language(state.request.message)
    # `answered_from` says what the answer quotes, so a client can say so (the web chat's notice)
    st.model, st.answered_by = None, "extractive"
    if route.type is QueryType.PLATFORM:
        st.answered_from = "account_data"
        return platform_facts(state.request.extra_context, lang)
    if route.type is QueryType.CONVERSATIONAL:
        st.answered_from = "conversation"
        return conversation_recap(ctx.turns, lang)
    if ctx.corpus_answer is not None:
        st.answered_from = "manifest"
        return ctx.corpus_answer
    st.answered_from = "passages"
    index_down = any(d.without_index for d in state.degraded)
    return extractive_answer(ctx.chunks, index_down=index_down, lang=lang)
