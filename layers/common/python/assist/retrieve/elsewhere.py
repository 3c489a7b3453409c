"""A scoped question its scope does not cover, but another scope does (ADR 0122): the answer says "not in these
docs" and links where it is covered ("this is covered in cli 2: …"); it is never answered from the other scope.

The turn's own search ran inside its scope. This check searches the whole index once more and compares: when the
best passage of the whole index lies outside the scope, the whole index covers the question (the verdict, as
`judge` reads it), and either the scope's own search was judged not to cover it or the outside passages are clearly
nearer (`MARGIN` of cosine similarity) and hold more of the question's words (`coverage`), the turn is uncertain and
carries the outside passages as links (`TurnState.elsewhere`), never as sources. Versions that share a heading with
different content stay answered from the reader's version: their passages hold the question's words as well, however
much nearer another product's wording is (on the two-product test corpus, with nearness alone 22 of 40 answerable
scoped questions were answered from their own version's page; with the words, 36, and every question only another
version answers still goes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from assist.contracts import Scope, UncertainReason
from assist.index.scope import contains
from assist.logs import get_logger
from assist.retrieve.verdict import TOPICS, Weights, calibrated, coverage, judge, nearest_topics

if TYPE_CHECKING:
    from assist.contracts import TurnState
    from assist.retrieve.search import Retriever
    from assist.settings import Settings

log = get_logger(__name__)
#: how much nearer (cosine similarity) another scope's best passage must be to call the reader's scope a miss
MARGIN = 0.08


def look_elsewhere(
    state: TurnState, query: str, translated: str | None, retriever: Callable[[], Retriever], settings: Settings
) -> None:
    """Run after the verdict on a scoped turn: sets `state.elsewhere` and the uncertain reason when another scope
    covers what the turn's scope does not. Nothing for an unscoped turn, a forced answer, or an unsearchable index."""
    scope, scoped = state.scope, state.retrieval
    if not scope or scoped is None or state.request.force_answer or any(d.without_index for d in scoped.degraded):
        return
    searched = retriever()
    whole = searched.search(query, k=settings.retrieve.top_k, translated=translated)
    outside = [c for c in whole.chunks if not contains(scope, c.scope or Scope())]
    if not outside or whole.chunks[0] is not outside[0]:
        return  # the whole index's best passage is the scope's own (or shared by every scope)
    asked = translated or query
    weights = calibrated(Weights.from_settings(settings), searched.calibration(), settings.uncertain.calibrate)
    if judge(asked, whole, weights).uncertain:
        return  # nowhere covered: the ordinary "not covered" answer, if the verdict gave one
    nearer = (whole.similarity or 0.0) - (scoped.similarity or 0.0)
    fewer_words = coverage(asked, scoped.chunks) < coverage(asked, whole.chunks)
    if state.uncertain_reason is None and (nearer < MARGIN or not fewer_words):
        return
    state.elsewhere = outside[:TOPICS]
    if state.uncertain_reason is None:
        state.uncertain_reason = UncertainReason.OUT_OF_SCOPE
        scoped.suggestions = nearest_topics(scoped.chunks, scoped.suggestions)
    log.info("retrieve.elsewhere", scope=scope.label(), found=[c.doc_id for c in state.elsewhere], nearer=nearer)
