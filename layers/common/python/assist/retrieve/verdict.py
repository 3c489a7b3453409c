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

Two more signals say whether the question's own words exist in the corpus at all (ADR 0082), which passage
scores cannot: "does it support <a protocol the docs never mention>" finds loosely related passages.

- **absent**: the share of the question's terms (stop words out, whole words) that no passage of the index
  contains: the index's full-text vocabulary is asked, one term query each, only for the terms the returned
  passages do not already contain.
- **named**: 1 when one of those absent terms is a name — written with a capital, an acronym, a code symbol,
  or a word with digits after its first letter — and is absent even with one typo forgiven: the concrete thing
  (a protocol, library, product, command, drug) the question is about; else 0. A name the corpus spells a
  letter apart (`Bacteriophagaes`, `eIF3` for `elF3`) is a variant, not an absence.

The score subtracts them: `… − absent_weight × absent − named_weight × named < threshold`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from msgspec import UNSET, UnsetType

from assist.contracts import Chunk, RetrievalResult, UncertainReason, VerdictSignals
from assist.index.calibration import METHOD
from assist.language import foreign

if TYPE_CHECKING:
    from assist.contracts import RetrieveStage, TurnState
    from assist.index.calibration import Calibration
    from assist.retrieve.search import Retriever
    from assist.settings import Settings

#: a document named by its identifier is on topic whatever the embedder says
NAMED = "identifier"
TOPICS = 3  # nearest topics an uncertain answer names
STEM = 5  # letters compared: `configured` and `configuration` are one word, `cake` and `cache` are not
_WORD = re.compile(r"[^\W_]{3,}", re.UNICODE)
#: a word joined to the next by `_`, `.`, `-` without spaces: part of a code symbol or a compound name
_SYMBOL = re.compile(r"[^\W_]+(?:[_.][^\W_]+)+")
STOP = frozenset(
    re.split(
        r"\s+",
        """the and for are was were how what when where which who whom why with this that these those from have has had
    can could would should will shall may might must does did not you your our their they them its into about
    there here then than but any all some each more most other such only own same both few many much one two get
    got tell please show give want need know like make good best way just also very too yes use using
    el la los las un una unos unas del al con por para que qué es son se su sus lo como cómo cuál cuáles cuándo
    cuánto cuántos dónde quién hay este esta esto ese esa puedo""".strip(),
    )
    # English function words (NLTK's list, ≥ 3 letters): the full-text tokenizer drops most of them, so the
    # vocabulary would call them absent everywhere ("doesn", "until", "under")
    + re.split(
        r"\s+",
        """myself ours ourselves yours yourself yourselves him his himself she her hers herself itself theirs
    themselves whom being having doing because until while against between through during before after above
    below down out off over under again further once nor too now ain aren couldn didn doesn hadn hasn haven
    isn mightn mustn needn shan shouldn wasn weren won wouldn don""".strip(),
    )
)


@dataclass(frozen=True)
class Verdict:
    uncertain: bool
    reason: UncertainReason | None = None  # when uncertain
    similarity: float | None = None
    centrality: float | None = None
    coverage: float | None = None
    absent: float | None = None
    named: float | None = None
    score: float | None = None  # the weighted sum, when the signals were read
    #: the question's terms the corpus never mentions
    unknown: tuple[str, ...] = ()

    def detail(self) -> VerdictSignals:
        """For the trace's `verdict` stage: the signals that were read, to 4 places."""

        def kept(value: float | None) -> float | UnsetType:
            return UNSET if value is None else round(value, 4)

        return VerdictSignals(
            uncertain=self.uncertain,
            unknown=list(self.unknown) or UNSET,
            reason=self.reason or UNSET,
            similarity=kept(self.similarity),
            centrality=kept(self.centrality),
            coverage=kept(self.coverage),
            absent=kept(self.absent),
            named=kept(self.named),
            score=kept(self.score),
        )


def terms(text: str) -> list[str]:
    """The question's terms as the corpus vocabulary is asked for them: whole words, lower case, in order."""
    return list(dict.fromkeys(w for w in _WORD.findall(text.lower()) if w not in STOP and not w.isdigit()))


def names(text: str) -> set[str]:
    """The question's words that could name something (lower case): written with a capital (`GraphQL`,
    `Kubernetes`, a claim's `Tirzepatide`), an acronym, a code symbol, or a word with digits after its first
    letter. A word that begins with a digit is a quantity (`40mg`, `50s`), not a name. Only a name the corpus
    lacks counts (`absence`), so a capitalised common word costs nothing."""
    out = set()
    for m in _WORD.finditer(text):
        w = m.group()
        if w[0].isdigit():
            continue
        if w[0].isupper() or any(c.isupper() or c.isdigit() for c in w[1:]) or _SYMBOL.match(text, m.start()):
            out.add(w.lower())
    return out


def content_words(text: str) -> set[str]:
    return {w[:STEM] for w in terms(text)}


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
    absent: float = 0.0
    named: float = 0.0

    @classmethod
    def from_settings(cls, s: Settings) -> Weights:
        u = s.uncertain
        return cls(u.threshold, u.centrality_weight, u.coverage_weight, u.absent_weight, u.named_weight)

    def score(self, similarity: float, centrality: float, coverage: float, absent: float, named: float) -> float:
        return (
            similarity
            + self.centrality * centrality
            + self.coverage * coverage
            - self.absent * absent
            - self.named * named
        )


def signature(weights: Weights) -> list[float]:
    """The weights a calibrated threshold holds for (the similarity's is 1): other weights, another scale."""
    return [weights.centrality, weights.coverage, weights.absent, weights.named]


def calibrated(weights: Weights, calibration: Calibration | None, on: bool = True) -> Weights:
    """The weights with the index's calibrated threshold (ADR 0096), when calibration is `on` and the index was
    calibrated by this engine's method for these weights; else as configured."""
    c = calibration
    if not on or c is None or c.method != METHOD or c.weights != signature(weights):
        return weights
    return replace(weights, threshold=c.threshold)


#: which of these terms no passage of the index contains, with `typos` edits forgiven (`Retriever.unknown`)
Vocabulary = Callable[..., set[str]]


def absence(
    question: str, chunks: Sequence[Chunk], vocabulary: Vocabulary | None
) -> tuple[float, float, tuple[str, ...]]:
    """(share of the question's terms the corpus never mentions, 1 when one of them is a name, those terms).
    Only the terms the returned passages lack are looked up; without a vocabulary, nothing is absent."""
    asked = terms(question)
    if not asked or vocabulary is None:
        return 0.0, 0.0, ()
    seen: set[str] = set()
    for c in chunks:
        seen.update(_WORD.findall(f"{c.title} {c.heading} {c.text}".lower()))
    unknown = vocabulary([t for t in asked if t not in seen])
    missing = tuple(t for t in asked if t in unknown)
    named_words = names(question)
    candidates = [t for t in missing if t in named_words]
    named = 1.0 if candidates and vocabulary(candidates, typos=1) else 0.0
    return len(missing) / len(asked), named, missing


def judge(
    question: str,
    result: RetrievalResult,
    weights: Weights,
    readable: bool = True,
    vocabulary: Vocabulary | None = None,
) -> Verdict:
    """`question`: the text retrieval searched with (the translation, when there was one); `readable`: False
    for a question in another language that was not translated; `vocabulary`: the index's (`Retriever.unknown`),
    asked only when the absent-term weights are on."""
    if not result.chunks:
        return Verdict(True, UncertainReason.NO_RELEVANT_PASSAGE)
    sim, central = result.similarity, result.centrality
    if result.confidence.loose:  # found only by the fallback phases (relaxed typos, partial words)
        return Verdict(True, UncertainReason.LOW_RETRIEVAL_CONFIDENCE, sim, central)
    if NAMED in result.chunks[0].found_by or sim is None or central is None or not readable:
        return Verdict(False, similarity=sim, centrality=central)
    cov = coverage(question, result.chunks)
    asks = vocabulary if weights.absent or weights.named else None
    absent, named, unknown = absence(question, result.chunks, asks)
    score = weights.score(sim, central, cov, absent, named)
    reason = UncertainReason.OUT_OF_SCOPE if score < weights.threshold else None
    return Verdict(reason is not None, reason, sim, central, cov, absent, named, score, unknown)


def judge_turn(
    state: TurnState,
    query: str,
    translated: str | None,
    st: RetrieveStage,
    retriever: Callable[[], Retriever],
    settings: Settings,
) -> None:
    """Does the documentation cover the turn's question (ADR 0055)? Uncertain: the answer says it does not,
    with the nearest topics (`retrieval.suggestions`), and no model is asked. An index that could not
    be searched says nothing about the documentation: no verdict then. The verdict and its signals go
    to the retrieve stage's `verdict` (a few microseconds: no stage of its own)."""
    result = state.retrieval
    if result is None or any(d.without_index for d in result.degraded):
        return
    readable = translated is not None or foreign(query, settings.index.language) is None
    searched = retriever()  # the index version searched, with its calibration (ADR 0096): the turn's scope's own
    found = searched.calibration()
    on = settings.uncertain.calibrate
    weights = calibrated(Weights.from_settings(settings), found.within(state.scope) if found else None, on)
    verdict = judge(translated or query, result, weights, readable, searched.unknown)
    st.verdict = verdict.detail()
    if verdict.score is not None:
        st.verdict.threshold = round(weights.threshold, 4)
    if verdict.uncertain and state.request.force_answer:  # asked anyway: the model answers, the trace says so
        st.verdict.forced = True
    elif verdict.uncertain:
        state.uncertain_reason = verdict.reason
        result.suggestions = nearest_topics(result.chunks, result.suggestions)


def nearest_topics(chunks: Sequence[Chunk], suggestions: Sequence[str] = (), limit: int = TOPICS) -> list[str]:
    """The retrieved passages' sections (`Chunk.topic`), distinct, best first; the suggested titles
    when nothing was retrieved."""
    return list(dict.fromkeys([*(c.topic for c in chunks), *suggestions]))[:limit]
