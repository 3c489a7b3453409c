"""`assist eval retrieval`: one strategy over a BEIR data set, with the metrics BEIR reports.

Strategies: `fts` (BM25 on LanceDB's native FTS), `vector` (exhaustive or IVF, as the index has it),
`rrf` (LanceDB's own hybrid query with its default `RRFReranker`: what a user gets without us) and
`adaptive` (our `Retriever`). Documents are ranked by their best chunk. Gains are linear in the
grade, as in BEIR's pytrec_eval; only queries with at least one relevant document count.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assist.index.store import FTS_COLUMN, open_table, sync
from assist.logs import get_logger
from assist.retrieve import beir
from assist.retrieve.analysis import words
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
    strategy: str, table: Any, embedder: Embedder, options: SearchOptions, chunks: int
) -> Callable[[str], list[str]]:
    """A function from query text to the doc ids of its ranked chunks, for one strategy."""
    cols = ["doc_id"]
    if strategy == "fts":
        from lancedb.query import MatchQuery

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
        retriever = Retriever(table, embedder, options)
        return lambda q: [c.doc_id for c in retriever.search(q, k=chunks).chunks]
    raise ValueError(f"unknown strategy {strategy!r}: expected one of {', '.join(STRATEGIES)}")


def build_index(
    corpus_path: str | Path, index_dir: str, settings: Settings, embedder: Embedder, s3: Any = None
) -> tuple[Any, int]:
    """The corpus indexed in index_dir; a rerun re-embeds only documents whose text changed (none: reused).
    `s3`: a client for the writer lease when index_dir is an `s3://` prefix."""
    corpus = beir.read_corpus(corpus_path)
    if not corpus:
        raise beir.BeirError(f"{corpus_path}: the corpus is empty")
    s = settings.with_(index_uri=index_dir, index_table="corpus")
    stats = sync(beir.index_documents(corpus, source=str(corpus_path)), s, embedder, s3=s3)
    log.info("eval.index", dir=index_dir, docs=stats.docs, chunks=stats.chunks, re_embedded=stats.added_docs)
    return open_table(s, embedder), len(corpus)


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
) -> dict[str, Any]:
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}: expected one of {', '.join(STRATEGIES)}")
    judged = beir.read_qrels(qrels)
    asked = {qid: text for qid, text in beir.read_queries(queries).items() if qid in judged}
    if not asked:
        raise beir.BeirError(f"no query of {queries} has a relevant document in {qrels}")
    table, n_docs = build_index(corpus, index_dir, settings, embedder, s3)
    chunks_per_doc = max(1.0, table.count_rows() / n_docs)
    run = searcher(
        strategy,
        table,
        embedder,
        options or SearchOptions.from_settings(settings),
        chunks=math.ceil(DEPTH * min(chunks_per_doc, 3.0)),
    )
    run(next(iter(asked.values())))  # warm: the first query pays for caches, not for the strategy
    totals = {"ndcg@10": 0.0, "recall@5": 0.0, "recall@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}
    times = []
    for qid, text in asked.items():
        start = time.perf_counter()
        ranked = best_chunk_order(run(text))
        times.append((time.perf_counter() - start) * 1000)
        rels = judged[qid]
        totals["ndcg@10"] += ndcg(ranked, rels, 10)
        totals["recall@5"] += recall(ranked, rels, 5)
        totals["recall@10"] += recall(ranked, rels, 10)
        totals["recall@100"] += recall(ranked, rels, 100)
        totals["mrr@10"] += mrr(ranked, rels, 10)
    n = len(asked)
    return {
        "strategy": strategy,
        **{k: round(v / n, 4) for k, v in totals.items()},
        "p50_ms": percentile(times, 50),
        "p95_ms": percentile(times, 95),
        "docs": n_docs,
        "queries": n,
        "index_dir": index_dir,
    }
