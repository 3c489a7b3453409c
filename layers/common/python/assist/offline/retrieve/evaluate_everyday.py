"""`assist eval everyday`: everyday first turns, through the router and the documentation's verdict (ADR 0127).

Each question is asked as the first turn of a session: the router (embedding layer and fallback, no LLM layer)
gives its route, and a route that searches is judged by the verdict under the set's own calibration (ADR 0096:
computed from its corpus, never its questions). Two policies side by side:

- **baseline**: only RETRIEVAL and CODE_GENERATION are judged (a CONVERSATIONAL or PLATFORM first turn is answered
  without the documentation);
- **first turn**: an unanchored first turn is judged too (`query/first_turn.py`).

And two engines: **translated**, as with a model configured (a Spanish question read by its `metadata.translation`,
as the translate stage would give it; ADR 0055's convention), and **untranslated**, as with no model.

Three kinds of questions: `everyday` (flagged is right), `answerable` (the set's queries with qrels: flagged is
wrong), `recall` (first-turn questions about the conversation: routed CONVERSATIONAL is right).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assist.classify.build import embedding_layer
from assist.classify.cascade import Cascade
from assist.language import foreign
from assist.offline.retrieve.evaluate import build_index
from assist.offline.retrieve.evaluate_verdict import DataSet, Question, answerable, questions
from assist.query.first_turn import first_turn_route, unanchored
from assist.query.recall import RecallBank
from assist.retrieve.calibrate import calibrate
from assist.retrieve.search import Retriever, SearchOptions
from assist.retrieve.verdict import Weights, calibrated, judge

if TYPE_CHECKING:
    from assist.embed.base import Embedder
    from assist.settings import Settings

EVERYDAY, ANSWERABLE, RECALL = "everyday", "answerable", "recall"
POLICIES = ("baseline", "first_turn")
ENGINES = ("translated", "untranslated")


@dataclass(frozen=True)
class Outcome:
    kind: str
    id: str
    text: str
    engine: str
    routed: str  # the router's type
    judged_as: str  # the type after the first-turn policy
    flagged: dict[str, bool]  # per policy


def run(
    sets: list[DataSet],
    everyday: str,
    recall: str,
    index_root: str,
    settings: Settings,
    embedder: Embedder,
    limit: int | None = None,
) -> dict[str, Any]:
    # the verdict is measured, not the search's speed: under load a 300 ms embedder budget would make some searches
    # full-text only (`embedder_timeout`), a verdict no quiet machine gives
    settings = settings.with_(retrieve={"embed_timeout_ms": 60_000.0})
    cascade = Cascade(settings, embedding=embedding_layer(settings, lambda: embedder))
    bank = RecallBank(lambda: embedder)
    asked = {EVERYDAY: questions(everyday), RECALL: questions(recall)}
    out: dict[str, Any] = {"sets": {}}
    for ds in sets:
        table, _, catalog = build_index(ds.corpus, str(Path(index_root) / ds.name), settings, embedder)
        retriever = Retriever(table, embedder, SearchOptions.from_settings(settings), catalog=catalog)
        u, configured = settings.uncertain, Weights.from_settings(settings)
        calibration = calibrate(
            retriever, configured, settings.retrieve.top_k, u.calibration_target, u.calibration_confidence
        )
        weights = calibrated(configured, calibration)
        started = time.perf_counter()
        kinds = {**asked, ANSWERABLE: answerable(ds)[:limit]}
        outcomes = [
            _outcome(kind, q, engine, cascade, bank, retriever, weights, settings)
            for kind, qs in kinds.items()
            for q in qs
            for engine in ENGINES
        ]
        out["sets"][ds.name] = summary(outcomes) | {
            "threshold": round(weights.threshold, 4),
            "calibrated": calibration.calibrated,
            "seconds": round(time.perf_counter() - started, 1),
        }
    return out


def _outcome(
    kind: str,
    q: Question,
    engine: str,
    cascade: Cascade,
    bank: RecallBank,
    retriever: Retriever,
    weights: Weights,
    settings: Settings,
) -> Outcome:
    route = cascade.classify(q.text, [])
    other = foreign(q.text, settings.index.language) is not None
    translation = q.translation if engine == "translated" and other else None
    route.lexical_query = translation  # what the translate stage gives; `readable` reads it
    text = translation or (None if other else q.text)
    judged = (
        first_turn_route(route, text, bank.refers_to_conversation, settings) if unanchored(route, [], None) else route
    )
    flagged = {"baseline": False, "first_turn": False}
    if judged.type.needs_retrieval:
        result = retriever.search(q.text, k=settings.retrieve.top_k, translated=translation)
        verdict = judge(translation or q.text, result, weights, text is not None, retriever.unknown)
        flagged = {"baseline": verdict.uncertain and route.type.needs_retrieval, "first_turn": verdict.uncertain}
    return Outcome(kind, q.id, q.text, engine, route.type.value, judged.type.value, flagged)


def summary(outcomes: list[Outcome]) -> dict[str, Any]:
    """Per engine and kind: the share flagged under each policy, the share routed CONVERSATIONAL (recall), the
    router's types, and the everyday questions the first-turn policy still misses."""
    out: dict[str, Any] = {}
    for engine in ENGINES:
        per: dict[str, Any] = {}
        for kind in (EVERYDAY, ANSWERABLE, RECALL):
            rows = [o for o in outcomes if o.engine == engine and o.kind == kind]
            if not rows:
                continue
            n = len(rows)
            per[kind] = {
                "n": n,
                **{f"flagged_{p}": round(sum(o.flagged[p] for o in rows) / n, 4) for p in POLICIES},
                "conversational_baseline": round(sum(o.routed == "CONVERSATIONAL" for o in rows) / n, 4),
                "conversational_first_turn": round(sum(o.judged_as == "CONVERSATIONAL" for o in rows) / n, 4),
                "routed": dict(Counter(o.routed for o in rows).most_common()),
                "by_language": _by_language(rows),
            }
            if kind == EVERYDAY:
                per[kind]["missed"] = [o.text for o in rows if not o.flagged["first_turn"]]
            if kind == ANSWERABLE:
                per[kind]["flagged"] = [o.text for o in rows if o.flagged["first_turn"]][:12]
        out[engine] = per
    return out


def _by_language(rows: list[Outcome]) -> dict[str, float]:
    """The first-turn policy's flagged share, by the question's id prefix language (`-en-`/`-es-`)."""
    out = {}
    for lang in ("en", "es"):
        mine = [o for o in rows if f"-{lang}-" in o.id]
        if mine:
            out[lang] = round(sum(o.flagged["first_turn"] for o in mine) / len(mine), 4)
    return out
