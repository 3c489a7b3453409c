"""`assist eval scoped-verdict`: a scoped question judged by its scope's own calibration or by the corpus's
(ADR 0129).

Each set's documents are split into `k` scopes by topic, as a site's products are: k-means (seeded) over each
document's mean passage vector, the cluster written into the index's `product` column. The index is then
calibrated as a build calibrates it (`calibrate_scopes`: the corpus, and apart each scope with sections enough).
Within each scope calibrated apart, two kinds of questions are searched in that scope and judged both ways:

- the set's **answerable** questions whose relevant document lies in the scope (flagged is wrong);
- **off-topic** questions from files the calibration never reads (its own bank is what it fits on; flagged is right).

Nothing here reads a question to fit anything: the thresholds come from the corpus alone.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from assist.contracts import Scope
from assist.index.scope import key
from assist.index.store import refresh_indexes
from assist.insights.gaps import kmeans
from assist.logs import quiet
from assist.offline.retrieve import beir
from assist.offline.retrieve.evaluate import build_index
from assist.offline.retrieve.evaluate_verdict import DataSet, Question, answerable, questions
from assist.retrieve.calibrate import calibrate_scopes, score
from assist.retrieve.search import Retriever, SearchOptions
from assist.retrieve.verdict import Weights

if TYPE_CHECKING:
    from assist.embed.base import Embedder
    from assist.index.calibration import Calibration
    from assist.settings import Settings

SEED = 7
#: ids per `update` statement: a long IN list is one SQL string
BATCH = 400


def run(
    sets: list[DataSet], offtopic: list[str], k: int, index_root: str, settings: Settings, embedder: Embedder
) -> dict[str, Any]:
    # the verdict is measured, not the search's speed (as `assist eval everyday`): no embedder budget under load
    settings = settings.with_(retrieve={"embed_timeout_ms": 60_000.0})
    off = [q for path in offtopic for q in questions(path)]
    out: dict[str, Any] = {"k": k, "offtopic": len(off), "sets": {}}
    for ds in sets:
        table, _, catalog = build_index(ds.corpus, str(Path(index_root) / ds.name), settings, embedder)
        of = split(table, k, settings)
        retriever = Retriever(table, embedder, SearchOptions.from_settings(settings), catalog=catalog)
        u, weights = settings.uncertain, Weights.from_settings(settings)
        c = calibrate_scopes(
            retriever, weights, settings.retrieve.top_k, u.calibration_target, u.calibration_confidence
        )
        asked = _scoped(answerable(ds), beir.read_qrels(ds.qrels), of)
        per = {name: _judged(retriever, weights, settings, c, name, asked.get(name, []), off) for name in c.scopes}
        out["sets"][ds.name] = {
            "corpus_threshold": round(c.threshold, 4),
            "corpus_calibration_s": c.seconds,
            "documents": dict(sorted(Counter(of.values()).items())),
            "scopes": per,
            "all": _totals(per.values()),
        }
    return out


def split(table: Any, k: int, settings: Settings) -> dict[str, str]:
    """Each document's scope key (`t0/*` …): its cluster by topic, written into the index's `product` column (the
    rows written again are folded into the indexes, as after a build)."""
    rows = table.search().select(["doc_id", "vector"]).limit(None).to_arrow()
    by: dict[str, list[np.ndarray]] = {}
    for doc, vector in zip(rows.column("doc_id").to_pylist(), rows.column("vector").to_numpy(), strict=True):
        by.setdefault(doc, []).append(np.asarray(vector, dtype=np.float32))
    docs = sorted(by)
    means = np.array([np.mean(by[d], axis=0) for d in docs])
    means /= np.linalg.norm(means, axis=1, keepdims=True)
    assign, _ = kmeans(means, k, seed=SEED)
    of = {d: f"t{int(a)}" for d, a in zip(docs, assign, strict=True)}
    for product in sorted(set(of.values())):
        mine = [d for d in docs if of[d] == product]
        for i in range(0, len(mine), BATCH):
            listed = ", ".join("'" + d.replace("'", "''") + "'" for d in mine[i : i + BATCH])
            table.update(where=f"doc_id IN ({listed})", values={"product": product})
    refresh_indexes(table, settings)
    return {d: key(Scope(product=p)) for d, p in of.items()}


def _scoped(qs: list[Question], qrels: dict[str, dict[str, int]], of: dict[str, str]) -> dict[str, list[Question]]:
    """The answerable questions by the scope of their most relevant document (one the index holds)."""
    out: dict[str, list[Question]] = {}
    for q in qs:
        graded = sorted(qrels.get(q.id.rsplit(":", 1)[-1], {}).items(), key=lambda kv: -kv[1])
        scope = next((of[_doc(d, of)] for d, _ in graded if _doc(d, of) in of), None)
        if scope is not None:
            out.setdefault(scope, []).append(q)
    return out


def _doc(corpus_id: str, of: dict[str, str]) -> str:
    """The index's document of a corpus id: the id itself, or for a section id (`page#part`) its page."""
    return corpus_id if corpus_id in of else corpus_id.split("#", 1)[0]


def _judged(
    retriever: Retriever,
    weights: Weights,
    settings: Settings,
    c: Calibration,
    name: str,
    answer: list[Question],
    off: list[Question],
) -> dict[str, Any]:
    own, scope = c.scopes[name], Scope(product=name.split("/", 1)[0])
    k = settings.retrieve.top_k
    with quiet():  # one report, not a `retrieve.fused` event per question
        answered = [score(retriever, q.translation or q.text, weights, k, scope=scope) for q in answer]
        offtopic = [score(retriever, q.translation or q.text, weights, k, scope=scope) for q in off]
    figures = {}
    for which, cut in (("scope", own.threshold), ("corpus", c.threshold)):
        figures[which] = {
            "threshold": round(cut, 4),
            "answerable_flagged": sum(s < cut for s in answered),
            "offtopic_caught": sum(s < cut for s in offtopic),
        }
    sizes = {"sections": own.sections, "answerable": len(answered), "offtopic": len(offtopic)}
    return sizes | {"calibration_s": own.seconds, **figures}


def _totals(per: Any) -> dict[str, Any]:
    """The scopes together: shares of the answerable flagged and of the off-topic caught, each way."""
    per = list(per)
    n_a, n_o = sum(p["answerable"] for p in per), sum(p["offtopic"] for p in per)
    out: dict[str, Any] = {"answerable": n_a, "offtopic": n_o}
    for which in ("scope", "corpus"):
        flagged = sum(p[which]["answerable_flagged"] for p in per)
        caught = sum(p[which]["offtopic_caught"] for p in per)
        out[which] = {
            "answerable_flagged": round(flagged / n_a, 4) if n_a else math.nan,
            "offtopic_caught": round(caught / n_o, 4) if n_o else math.nan,
        }
    return out
