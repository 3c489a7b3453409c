"""Query-adaptive hybrid search (seed 002): analyse the query, run the strategies in parallel, fuse them
with the query kind's weights, keep the result honest about its confidence, and never return an
empty list without saying why.

    analyse ─► fts_exact ┐
               fts_relaxed├─► weighted RRF + agreement ─► floor ─► MMR ─► (rerank) ─► confidence
    embed ───► vector ────┘        nothing? fuzzy + no floor (low) ─► partial words (speculative) ─► none

The query embedding has its own time budget: past it (or when the embedder fails) the search is
full-text only and says `embedder_timeout` / `embedder_unavailable`; the next search tries again.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from assist.contracts import Chunk, RetrievalResult
from assist.embed.base import EmbedderError
from assist.logs import get_logger
from assist.retrieve import strategies as st
from assist.retrieve.analysis import Analysis, QueryKind, analyze
from assist.retrieve.fusion import RRF_K, below_floor, mmr, weighted_rrf

if TYPE_CHECKING:
    from assist.embed.base import Embedder
    from assist.settings import Settings

log = get_logger(__name__)
#: a reranker: the query and the fused chunks in, the same chunks in a new order (and/or fewer) out
Rerank = Callable[[str, list[Chunk]], list[Chunk]]
MIN_POOL = 20  # candidates each strategy contributes, at least: fusion needs more than the k it returns
SUGGESTIONS = 5
RECENT_CHUNKS = 1024  # ~1 MB of passages: what a follow-up is likely to cite again


@dataclass(frozen=True)
class SearchOptions:
    embed_timeout_s: float = 0.3
    similarity_floor: float = 0.2
    agreement_bonus: float = 0.2
    mmr_lambda: float = 1.0
    rrf_k: int = RRF_K
    weights: dict[QueryKind, tuple[float, float]] | None = None  # None: analysis.WEIGHTS

    @classmethod
    def from_settings(cls, s: Settings) -> SearchOptions:
        return cls(
            embed_timeout_s=s.retrieve_embed_timeout_ms / 1000,
            similarity_floor=s.retrieve_similarity_floor,
            agreement_bonus=s.retrieve_agreement_bonus,
            mmr_lambda=s.retrieve_mmr_lambda,
        )


class Retriever:
    def __init__(
        self,
        table: Any,
        embedder: Embedder,
        options: SearchOptions | None = None,
        rerank: Rerank | None = None,
    ) -> None:
        self._table = table
        self._embedder = embedder
        self.options = options or SearchOptions()
        self._rerank = rerank
        # the embedding and three queries of one search, for a few searches at once
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="retrieve")
        self._titles: list[str] | None = None
        # passages returned lately, by id: a follow-up citing them again is a dict read, not an index query
        self._recent: OrderedDict[str, Chunk] = OrderedDict()
        self._recent_lock = threading.Lock()

    @property
    def table(self) -> Any:
        """The chunk table, for lookups that are not searches (whole documents, the document list)."""
        return self._table

    def fetch(self, ids: list[str]) -> list[Chunk]:
        """Chunks by id, in the order asked (a lookup for cited sources, not a search): the ones this
        process returned lately from memory, the others from the index."""
        with self._recent_lock:
            known = {i: c for i in ids if (c := self._recent.get(i)) is not None}
        if missing := [i for i in ids if i not in known]:
            where = "id IN (" + ", ".join("'" + i.replace("'", "''") + "'" for i in missing) + ")"
            rows = self._table.search().where(where).select(st.COLUMNS).limit(len(missing)).to_list()
            known.update((r["id"], _chunk(r, 0.0, [])) for r in rows)
            self._remember(list(known.values()))
        return [
            msgspec.structs.replace(known[i], score=0.0, found_by=["memory"], agreement=1) for i in ids if i in known
        ]

    def _remember(self, chunks: list[Chunk]) -> None:
        with self._recent_lock:
            for c in chunks:
                self._recent[c.id] = c
                self._recent.move_to_end(c.id)
            while len(self._recent) > RECENT_CHUNKS:
                self._recent.popitem(last=False)

    def search(
        self, query: str, k: int = 5, vector: np.ndarray | None = None, analysis: Analysis | None = None
    ) -> RetrievalResult:
        """The k best chunks for the query. `vector`: the query's embedding when the caller has it already."""
        started = time.perf_counter()
        a = analysis or analyze(query, self.options.weights)
        pool = max(MIN_POOL, 2 * k)
        embedding = None if vector is not None else self._pool.submit(self._embedder.embed, [query])
        mmr_on = self.options.mmr_lambda < 1.0  # only MMR needs the candidates' vectors: don't read them otherwise
        running = {s.name: self._pool.submit(s.run, self._table, pool, mmr_on) for s in st.lexical(a)}
        vector, degraded = self._query_vector(vector, embedding, started)
        if vector is not None:
            running[st.VECTOR] = self._pool.submit(st.Strategy(st.VECTOR, vector=vector).run, self._table, pool, mmr_on)
        lists = {name: f.result() for name, f in running.items()}
        chunks, confidence, note = self._fuse(lists, a, k, self.options.similarity_floor), "", ""
        if chunks:
            confidence = _agreement_confidence(chunks[0], len(lists), degraded)
        else:  # the fallback cascade: each phase looser than the last
            phases = [
                ("low", "relaxed matching: typos forgiven, no similarity floor", st.fuzzy(a), 0.0),
                ("speculative", "partial word matching: verify relevance", st.partial(a), 0.0),
            ]
            for level, why, extra, floor in phases:
                more = {s.name: s.run(self._table, pool, mmr_on) for s in extra}
                lists.update(more)
                if st.VECTOR in lists:
                    more[st.VECTOR] = lists[st.VECTOR]
                if chunks := self._fuse(more, a, k, floor):
                    confidence, note = level, why
                    break
        if chunks and self._rerank:
            chunks = self._rerank(query, chunks)
        suggestions: list[str] = []
        if not chunks:
            confidence, note = "none", "no passage matches; try broader terms or one of the suggested topics"
            suggestions = self.suggestions(query)
        result = RetrievalResult(
            chunks=chunks,
            confidence=confidence,
            query_kind=a.kind.value,
            weights=a.weights,
            degraded=degraded,
            strategies={name: len(rows) for name, rows in lists.items()},
            note=note,
            suggestions=suggestions,
        )
        log.info(
            "retrieve.fused",
            n=len(chunks),
            confidence=confidence,
            query_kind=a.kind.value,
            weights=a.weights,
            strategies=result.strategies,
            degraded=degraded,
            ms=round((time.perf_counter() - started) * 1000, 2),
        )
        self._remember(chunks)
        return result

    def suggestions(self, query: str) -> list[str]:
        """Document titles to try: those sharing the most letter trigrams with the query, then the shortest
        (an overview's title is shorter than a decision record's)."""
        if self._titles is None:
            rows = self._table.search().select(["title"]).limit(None).to_arrow().column("title").to_pylist()
            self._titles = sorted(set(rows))
        grams = _trigrams(query)
        ranked = sorted(self._titles, key=lambda t: (-len(grams & _trigrams(t)), len(t), t))
        return ranked[:SUGGESTIONS]

    def _query_vector(
        self, vector: np.ndarray | None, embedding: Future | None, started: float
    ) -> tuple[np.ndarray | None, list[str]]:
        if embedding is None:
            return vector, []
        budget = max(0.0, self.options.embed_timeout_s - (time.perf_counter() - started))
        try:
            return embedding.result(timeout=budget)[0], []
        except FutureTimeout:
            log.warning("retrieve.embedder_timeout", budget_ms=round(self.options.embed_timeout_s * 1000))
            return None, ["embedder_timeout"]
        except EmbedderError as exc:
            log.warning("retrieve.embedder_failed", error=str(exc)[:200])
            return None, ["embedder_unavailable"]

    def _fuse(self, lists: dict[str, list[dict[str, Any]]], a: Analysis, k: int, floor: float) -> list[Chunk]:
        weights = {name: (a.semantic if name == st.VECTOR else a.lexical) for name in lists}
        rows: dict[str, dict[str, Any]] = {}
        for name in lists:  # the vector row carries the similarity: read it first
            for r in lists[name]:
                rows.setdefault(r["id"], r)
        similarity = {r["id"]: r["_similarity"] for r in lists.get(st.VECTOR, [])}
        fused = [
            f
            for f in weighted_rrf(
                {n: [r["id"] for r in rs] for n, rs in lists.items()},
                weights,
                self.options.rrf_k,
                self.options.agreement_bonus,
            )
            if not below_floor(f.found_by, similarity.get(f.id), floor)
        ]
        if not fused:
            return []
        if self.options.mmr_lambda < 1.0:
            pool = fused[: max(MIN_POOL, 2 * k)]
            vectors = np.asarray([rows[f.id]["vector"] for f in pool], dtype=np.float32)
            fused = [pool[i] for i in mmr([f.score for f in pool], vectors, k, self.options.mmr_lambda)]
        return [_chunk(rows[f.id], f.score, f.found_by) for f in fused[:k]]


def _agreement_confidence(top: Chunk, ran: int, degraded: list[str]) -> str:
    """How far the strategies agree on the best chunk: all of three or more → very_high; two → high."""
    if top.agreement >= 3 and top.agreement == ran:
        return "very_high"
    if top.agreement >= 2:
        return "high"
    return "low" if degraded else "medium"


def _trigrams(text: str) -> set[str]:
    t = f"  {text.lower()} "
    return {t[i : i + 3] for i in range(len(t) - 2)}


def _chunk(row: dict[str, Any], score: float, found_by: list[str]) -> Chunk:
    return Chunk(
        id=row["id"],
        doc_id=row["doc_id"],
        title=row["title"],
        heading=row["heading"],
        text=row["text"],
        score=round(float(score), 6),
        found_by=list(found_by),
        agreement=len(found_by),
    )
