"""`assist eval retrieval`: one strategy over a BEIR data set, with the metrics BEIR reports.

Strategies: `fts` (BM25 on LanceDB's native FTS), `vector` (exhaustive or IVF, as the index has it),
`rrf` (LanceDB's own hybrid query with its default `RRFReranker`: what a user gets without us) and
`adaptive` (our `Retriever`). Documents are ranked by their best chunk. Gains are linear in the
grade, as in BEIR's pytrec_eval; only queries with at least one relevant document count.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lancedb.query import MatchQuery

from assist.build.run import sync_docs
from assist.index.store import FTS_COLUMN, connect, open_table
from assist.logs import get_logger
from assist.offline.retrieve import beir
from assist.retrieve.analysis import words
from assist.retrieve.manifest import Manifest, load
from assist.retrieve.search import Retriever, SearchOptions
from assist.stats import percentile

if TYPE_CHECKING:
    from assist.embed.base import Embedder
    from assist.settings import Settings

log = get_logger(__name__)
STRATEGIES = ("fts", "vector", "rrf", "adaptive")
DEPTH = 100  # documents ranked per query: recall@100 needs them


def ndcg(ranked: Sequence[str], rels: dict[str, int], k: int) -> float:
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(rels.values(), reverse=True)[:k]))
    return dcg / ideal if ideal else 0.0


def recall(ranked: Sequence[str], rels: dict[str, int], k: int) -> float:
    return len(set(ranked[:k]) & set(rels)) / len(rels) if rels else 0.0


def mrr(ranked: Sequence[str], rels: dict[str, int], k: int) -> float:
    return next((1.0 / (i + 1) for i, d in enumerate(ranked[:k]) if d in rels), 0.0)


def best_chunk_order(doc_ids: Sequence[str], depth: int = DEPTH) -> list[str]:
    """Documents in the order of their best-ranked chunk."""
    return list(dict.fromkeys(doc_ids))[:depth]


def searcher(
    strategy: str,
    table: Any,
    embedder: Embedder,
    options: SearchOptions,
    chunks: int,
    catalog: Callable[[], Manifest | None] | None = None,
) -> Callable[[str], list[str]]:
    """A function from query text to the doc ids of its ranked chunks, for one strategy."""
    cols = ["doc_id"]
    if strategy == "fts":
        return lambda q: (
            [
                r["doc_id"]
                for r in table.search(MatchQuery(" ".join(words(q)), FTS_COLUMN), query_type="fts")
                .select([*cols, "_score"])
                .limit(chunks)
                .to_list()
            ]
            if words(q)
            else []
        )
    if strategy == "vector":
        return lambda q: [
            r["doc_id"]
            for r in table.search(embedder.embed([q])[0]).select([*cols, "_distance"]).limit(chunks).to_list()
        ]
    if strategy == "rrf":

        def rrf(q: str) -> list[str]:
            vec, text = embedder.embed([q])[0], " ".join(words(q))
            if not text:  # LanceDB's hybrid query needs text: a user would fall back to vector search
                return [r["doc_id"] for r in table.search(vec).select([*cols, "_distance"]).limit(chunks).to_list()]
            query = table.search(query_type="hybrid", fts_columns=FTS_COLUMN).vector(vec).text(text)
            return [r["doc_id"] for r in query.select(cols).limit(chunks).to_list()]

        return rrf
    if strategy == "adaptive":
        retriever = Retriever(table, embedder, options, catalog=catalog)
        return lambda q: retriever.rank(q, chunks)
    raise ValueError(f"unknown strategy {strategy!r}: expected one of {', '.join(STRATEGIES)}")


def build_index(
    corpus_path: str | Path, index_dir: str, settings: Settings, embedder: Embedder, s3: Any = None
) -> tuple[Any, int, Callable[[], Manifest | None]]:
    """The corpus indexed in index_dir; a rerun re-embeds only documents whose text changed (none: reused).
    `s3`: a client for the writer lease when index_dir is an `s3://` prefix."""
    corpus = beir.read_corpus(corpus_path)
    if not corpus:
        raise beir.BeirError(f"{corpus_path}: the corpus is empty")
    s = settings.with_(index={"uri": index_dir, "table": "corpus"})
    stats = sync_docs(beir.index_documents(corpus, source=str(corpus_path)), s, embedder, s3=s3)
    log.info("eval.index", dir=index_dir, docs=stats.docs, chunks=stats.chunks, re_embedded=stats.added_docs)
    db = connect(index_dir, s.storage_options())
    return open_table(s, embedder, db), len(corpus), lambda: load(db, index_dir, s.index.table)


METRICS = ("ndcg@10", "recall@5", "recall@10", "recall@100", "mrr@10")


def evaluate(
    corpus: str | Path,
    queries: str | Path,
    qrels: str | Path,
    strategy: str,
    index_dir: str,
    settings: Settings,
    embedder: Embedder,
    options: SearchOptions | None = None,
    s3: Any = None,
    baseline: str | None = None,
    per_query: str | Path | None = None,
) -> dict[str, Any]:
    """`strategy`'s figures; with `baseline`, that strategy's too, run in the same process on the same
    queries, interleaved (each query by both, in alternating order, so the machine's swings fall on both
    alike), with the differences (`delta`) and the p50 ratio. `per_query`: a JSON line per query to
    triage misses by (the relevant documents' rank per strategy, the query kind, the fused top 5)."""
    for name in (strategy, baseline):
        if name is not None and name not in STRATEGIES:
            raise ValueError(f"unknown strategy {name!r}: expected one of {', '.join(STRATEGIES)}")
    judged, asked = beir.read_judged(queries, qrels)
    table, n_docs, catalog = build_index(corpus, index_dir, settings, embedder, s3)
    chunks = math.ceil(DEPTH * min(max(1.0, table.count_rows() / n_docs), 3.0))
    opts = options or SearchOptions.from_settings(settings)
    names = [strategy] if baseline in (None, strategy) else [strategy, baseline]
    runs = {n: searcher(n, table, embedder, opts, chunks, catalog) for n in names}
    for run in runs.values():
        run(next(iter(asked.values())))  # warm: the first query pays for caches, not for the strategy
    totals = {n: dict.fromkeys(METRICS, 0.0) for n in names}
    times: dict[str, list[float]] = {n: [] for n in names}
    explainer = Retriever(table, embedder, opts, catalog=catalog) if per_query else None
    with open(per_query or os.devnull, "w", encoding="utf-8") as triage:
        for i, (qid, text) in enumerate(asked.items()):
            rels = judged[qid]
            ranked = {}
            for n in names if i % 2 == 0 else names[::-1]:
                start = time.perf_counter()
                ranked[n] = best_chunk_order(runs[n](text))
                times[n].append((time.perf_counter() - start) * 1000)
            for n in names:
                for metric, value in _metrics(ranked[n], rels).items():
                    totals[n][metric] += value
            if explainer:
                triage.write(json.dumps(_triage(qid, text, rels, ranked, explainer), ensure_ascii=False) + "\n")
    n = len(asked)
    results = {
        name: {
            "strategy": name,
            **{k: round(v / n, 4) for k, v in totals[name].items()},
            "p50_ms": percentile(times[name], 50),
            "p95_ms": percentile(times[name], 95),
            "docs": n_docs,
            "queries": n,
            "index_dir": index_dir,
        }
        for name in names
    }
    return _beside(results[strategy], results[baseline] if len(names) > 1 and baseline else None)


def _beside(out: dict[str, Any], base: dict[str, Any] | None) -> dict[str, Any]:
    """A strategy's figures, with the baseline's beside them when one ran: the differences, the p50 ratio."""
    if base is None:
        return out
    return {
        **out,
        "baseline": base,
        "delta": {k: round(out[k] - base[k], 4) for k in METRICS},
        "p50_ratio": round(out["p50_ms"] / base["p50_ms"], 3) if base["p50_ms"] else None,
    }


def _metrics(ranked: Sequence[str], rels: dict[str, int]) -> dict[str, float]:
    return {
        "ndcg@10": ndcg(ranked, rels, 10),
        "recall@5": recall(ranked, rels, 5),
        "recall@10": recall(ranked, rels, 10),
        "recall@100": recall(ranked, rels, 100),
        "mrr@10": mrr(ranked, rels, 10),
    }


def _triage(
    qid: str,
    text: str,
    rels: dict[str, int],
    ranked: dict[str, list[str]],
    retriever: Retriever,
) -> dict[str, Any]:
    """One query's story: where each relevant document ranked in every list, ours and the strategies'."""
    result, lists = retriever.explain(text, k=10)

    def ranks(docs: Sequence[str]) -> dict[str, int | None]:
        order = best_chunk_order(docs)
        return {d: (order.index(d) + 1 if d in order else None) for d in rels}

    return {
        "id": qid,
        "text": text,
        "kind": result.query_kind,
        "weights": result.weights,
        "relevant": rels,
        "ranks": {**{n: ranks(r) for n, r in ranked.items()}, **{f"adaptive.{s}": ranks(d) for s, d in lists.items()}},
        "top5": [{"doc_id": c.doc_id, "found_by": c.found_by, "score": c.score} for c in result.chunks[:5]],
        "ndcg@10": {n: round(ndcg(r, rels, 10), 4) for n, r in ranked.items()},
    }


def gate_score(settings: Settings, embedder: Embedder) -> float:
    """nDCG@10 of the index at `settings.index.uri` on the publish gate's relevance set (`index/publish.py`,
    ADR 0067): the adaptive retriever, documents ranked by their best chunk, identifiers resolved as readers do."""
    judged, asked = beir.read_judged(settings.index.gate_queries, settings.index.gate_qrels)
    db = connect(settings.index.uri, settings.storage_options())
    search = searcher(
        "adaptive",
        open_table(settings, embedder, db),
        embedder,
        SearchOptions.from_settings(settings),
        DEPTH,
        catalog=lambda: load(db, settings.index.uri, settings.index.table),
    )
    total = sum(ndcg(best_chunk_order(search(text)), judged[q], 10) for q, text in asked.items())
    return round(total / len(asked), 4)
