"""The fixed answer to a question the documentation does not cover (ADR 0055): said plainly, in the
question's language, with the nearest topics the documentation does cover, and the passages found listed as
near misses (ADR 0102). No model writes it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from assist.answer.phrases import language, phrase
from assist.contracts import AnsweredBy, Chunk, GenerateStage, Scope
from assist.trace import stage

if TYPE_CHECKING:
    from assist.contracts import TurnState


def fixed_answer(state: TurnState) -> str:
    """The answer of a turn the verdict found uncertain, with its near misses; its `generate` stage says no
    model was asked."""
    with stage(state, GenerateStage(skipped=True)) as st:
        st.model, st.answered_by = None, AnsweredBy.NOT_COVERED
        if state.route is not None:
            state.route.model = ""  # no model answered, so the route names none
        r = state.retrieval
        if state.elsewhere and state.scope:
            return not_in_scope(state.request.message, state.scope, state.elsewhere)
        return not_covered(state.request.message, r.suggestions if r else [], links(r.chunks) if r else {})


def not_in_scope(question: str, scope: Scope, elsewhere: Sequence[Chunk]) -> str:
    """A scoped question another scope covers (ADR 0122): not in these docs, and where it is, as links."""
    lang = language(question)
    by_scope: dict[str, list[Chunk]] = {}
    for c in elsewhere:
        by_scope.setdefault(c.scope.label() if c.scope else "", []).append(c)
    parts = [phrase("not_in_scope", lang, scope=scope.label())]
    for label, chunks in by_scope.items():
        lines = [f"- [{t}]({u})" if u else f"- {t}" for t, u in {c.topic: c.url for c in chunks}.items()]
        parts.append(phrase("elsewhere", lang, scope=label) + "\n" + "\n".join(lines))
    return "\n\n".join(parts)


def near_misses(state: TurnState) -> list[Chunk]:
    """The passages an uncertain turn's search found: its answer lists them as near misses, never cited, so a
    wrong verdict costs the reader no passage (ADR 0102)."""
    return list(state.retrieval.chunks) if state.retrieval else []


def links(chunks: Sequence[Chunk]) -> dict[str, str]:
    """Each retrieved section's page (ADR 0059), by its topic (`retrieve/verdict.py` names the nearest): the near
    misses a reader can follow."""
    out: dict[str, str] = {}
    for c in chunks:
        if c.url:
            out.setdefault(c.topic, c.url)
    return out


def not_covered(question: str, topics: Sequence[str], urls: Mapping[str, str] | None = None) -> str:
    lang = language(question)  # the fixed sentences' table (answer/phrases.py), in the question's language
    if not topics:
        return f"{phrase('not_covered', lang)} {phrase('none', lang)}"
    urls = urls or {}
    lines = [f"- [{t}]({urls[t]})" if t in urls else f"- {t}" for t in topics]  # a Markdown link: every way in
    return phrase("not_covered", lang) + "\n\n" + phrase("nearest", lang) + "\n" + "\n".join(lines)
