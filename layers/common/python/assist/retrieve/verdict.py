"""Does the documentation cover the question? A verdict from retrieval's own evidence (ADR 0055).

Three signals, all read from the search that just ran, no model:

- **similarity**: the best cosine of any passage to the question (`RetrievalResult.similarity`). An
  off-topic question is far from every passage, but a short or oddly worded on-topic one can be too.
- **centrality**: the question's cosine to the mean direction of all passages (`RetrievalResult.centrality`):
  how near the corpus's subject as a whole it is, wherever its best passage happens to be.
- **coverage**: the share of the question's content words (stop words dropped, words cut to `STEM`
  letters) that the returned passages contain. An off-topic question shares a word or two by chance
  ("time", "good"); an answerable one's words are in the passages that answer it.

No one of them separates the two on both development sets (ADR 0055 measures each); a weighted sum does:
`similarity + centrality_weight × centrality + coverage_weight × coverage < threshold` is `out_of_scope`.
Before that: no passage at all is `no_relevant_passage`, and a passage found only by the loose fallback
phases (`low`, `speculative`) is `low_retrieval_confidence`. A document the question names by identifier
is evidence enough. A question in another language than the index that was not translated is never called
out of scope: none of the signals can read it (the English-only embedder, English passages).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assist.contracts import Chunk, RetrievalResult

if TYPE_CHECKING:
    from assist.settings import Settings

NO_RELEVANT_PASSAGE = "no_relevant_passage"
LOW_RETRIEVAL_CONFIDENCE = "low_retrieval_confidence"
OUT_OF_SCOPE = "out_of_scope"
REASONS = (NO_RELEVANT_PASSAGE, LOW_RETRIEVAL_CONFIDENCE, OUT_OF_SCOPE)
#: the confidences only the fallback phases give (relaxed typos, partial words)
LOOSE = frozenset({"low", "speculative"})
#: a document named by its identifier is on topic whatever the embedder says
NAMED = "identifier"
STEM = 5  # letters compared: `configured` and `configuration` are one word, `cake` and `cache` are not
_WORD = re.compile(r"[^\W_]{3,}", re.UNICODE)
_STOP = frozenset(
    re.split(
        r"\s+",
        """the and for are was were how what when where which who whom why with this that these those from have has had
    can could would should will shall may might must does did not you your our their they them its into about
    there here then than but any all some each more most other such only own same both few many much one two get
    got tell please show give want need know like make good best way just also very too yes use using
    el la los las un una unos unas del al con por para que qué es son se su sus lo como cómo cuál cuáles cuándo
    cuánto cuántos dónde quién hay este esta esto ese esa puedo""".strip(),
    )
)


@dataclass(frozen=True)
class Verdict:
    uncertain: bool
    reason: str | None = None  # one of REASONS when uncertain
    similarity: float | None = None
    centrality: float | None = None
    coverage: float | None = None
    score: float | None = None  # the weighted sum, when the signals were read

    def detail(self) -> dict[str, object]:
        """For the trace's `verdict` stage."""
        out: dict[str, object] = {"uncertain": self.uncertain}
        for name in ("reason", "similarity", "centrality", "coverage", "score"):
            if (value := getattr(self, name)) is not None:
                out[name] = round(value, 4) if isinstance(value, float) else value
        return out


def content_words(text: str) -> set[str]:
    return {w[:STEM] for w in _WORD.findall(text.lower()) if w not in _STOP and not w.isdigit()}


def coverage(question: str, chunks: Sequence[Chunk]) -> float:
    """Share of the question's content words the passages (with their titles and headings) contain."""
    asked = content_words(question)
    if not asked:
        return 1.0  # nothing to look for: the question is all function words, coverage says nothing
    found: set[str] = set()
    for c in chunks:
        found |= content_words(f"{c.title} {c.heading} {c.text}")
    return len(asked & found) / len(asked)


@dataclass(frozen=True)
class Weights:
    threshold: float
    centrality: float
    coverage: float

    @classmethod
    def from_settings(cls, s: Settings) -> Weights:
        return cls(s.uncertain.threshold, s.uncertain.centrality_weight, s.uncertain.coverage_weight)


def judge(question: str, result: RetrievalResult, weights: Weights, readable: bool = True) -> Verdict:
    """`question`: the text retrieval searched with (the translation, when there was one); `readable`: False
    for a question in another language that was not translated."""
    if not result.chunks:
        return Verdict(True, NO_RELEVANT_PASSAGE)
    sim, central = result.similarity, result.centrality
    if result.confidence in LOOSE:
        return Verdict(True, LOW_RETRIEVAL_CONFIDENCE, sim, central)
    if NAMED in result.chunks[0].found_by or sim is None or central is None or not readable:
        return Verdict(False, similarity=sim, centrality=central)
    cov = coverage(question, result.chunks)
    score = sim + weights.centrality * central + weights.coverage * cov
    reason = OUT_OF_SCOPE if score < weights.threshold else None
    return Verdict(reason is not None, reason, sim, central, cov, score)
