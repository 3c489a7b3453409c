"""Query-adaptive hybrid search (docs/retrieval.md): analyse the query, run the strategies in parallel, fuse them,
keep the result honest about its confidence, and never return an empty list without saying why.

    analyse ─► identifier keys ─► named documents (first: `found_by: identifier`)
            ─► fts_exact ┐
               fts_relaxed├─► convex fusion + agreement ─► hub damping ─► floor ─► MMR ─► (rerank) ─► confidence
    embed ───► vector ────┘        nothing? fuzzy + no floor (low) ─► partial words (speculative) ─► none

Strategies read ids and scores only; the passages of the k winners are read afterwards by row id.
The query embedding has its own time budget: past it (or when the embedder fails) the search is
full-text only and says `embedder_timeout` / `embedder_unavailable`; the next search tries again.
The fusion weights are one setting for every query (ADR 0039: per-kind weights tuned on our docs did
not hold on SciFact); the query kind still picks the exact strategy (phrases, symbols, all words).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np
from lancedb.expr import col, lit
from lancedb.query import MatchQuery
from msgspec import UNSET

from assist.contracts import Chunk, Confidence, Degraded, RetrievalResult, Scope
from assist.embed.base import EmbedderError
from assist.index.scope import KEYS as SCOPE_KEYS
from assist.index.scope import contains, row_scope, scoped
from assist.index.store import FTS_COLUMN
from assist.lazy import once
from assist.logs import get_logger
from assist.retrieve import strategies as st
from assist.retrieve.analysis import Analysis, analyze
from assist.retrieve.fusion import Fused, below_floor, convex, mmr
from assist.retrieve.manifest import Manifest

if TYPE_CHECKING:
    from assist.embed.base import Embedder
    from assist.index.calibration import Calibration
    from assist.settings import Settings

log = get_logger(__name__)
#: a reranker: the query and the fused chunks in, the same chunks in a new order (and/or fewer) out
Rerank = Callable[[str, list[Chunk]], list[Chunk]]
MIN_POOL = 20  # candidates each strategy contributes, at least: fusion needs more than the k it returns
SUGGESTIONS = 5
RECENT_CHUNKS = 1024  # ~1 MB of passages: what a follow-up is likely to cite again
IDENTIFIER = "identifier"


@dataclass(frozen=True)
class SearchOptions:
    embed_timeout_s: float = 0.3
    similarity_floor: float = 0.2
    agreement_bonus: float = 0.2
    mmr_lambda: float = 1.0
    #: vector's share against the relaxed full-text list (the convex combination's one weight)
    semantic_weight: float = 0.5
    #: the exact full-text list (phrases, symbols, all words), on top of the two
    exact_weight: float = 0.2
    #: a document referencing the whole corpus keeps 1 − this of its score (a registry page)
    hub_damping: float = 0.5
    #: a translated question's vector side searches the translation too: the local embedder (MiniLM) is English-only,
    #: a multilingual one (`ollama:bge-m3`) gets the question as asked (ADR 0038 measures both)
    embed_translation: bool = True

    @classmethod
    def from_settings(cls, s: Settings) -> SearchOptions:
        return cls(
            embed_timeout_s=s.retrieve.embed_timeout_ms / 1000,
            similarity_floor=s.retrieve.similarity_floor,
            agreement_bonus=s.retrieve.agreement_bonus,
            mmr_lambda=s.retrieve.mmr_lambda,
            semantic_weight=s.retrieve.semantic_weight,
            exact_weight=s.retrieve.exact_weight,
            hub_damping=s.retrieve.hub_damping,
            embed_translation=s.embed.embedder == "minilm",
        )

    def weights(self, strategies: list[str]) -> dict[str, float]:
        by_name = {st.VECTOR: self.semantic_weight, st.EXACT: self.exact_weight}
        return {n: by_name.get(n, 1.0 - self.semantic_weight) for n in strategies}


class Retriever:
    def __init__(
        self,
        table: Any,
        embedder: Embedder,
        options: SearchOptions | None = None,
        rerank: Rerank | None = None,
        catalog: Callable[[], Manifest | None] | None = None,
        calibration: Callable[[], Calibration | None] | None = None,
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
        # identifier keys and hub shares per document, read once from the corpus manifest
        self._catalog_source = catalog
        self._catalog: Manifest | None = None
        self._catalog_lock = threading.Lock()
        # the mean direction of every passage: how near the corpus's subject a question is (ADR 0055)
        self._centroid: np.ndarray | None = None
        self._centroid_lock = threading.Lock()
        # the verdict's threshold computed for this index version when it was built (ADR 0096)
        self._calibration = once(calibration) if calibration else None

    @cached_property
    def _columns(self) -> list[str]:
        """A passage's columns, its scope's too when the index has them (one built before scopes has not)."""
        return [*st.COLUMNS, *(k for k in SCOPE_KEYS if k in self._table.schema.names)]

    @property
    def table(self) -> Any:
        """The chunk table, for lookups that are not searches (whole documents, the document list)."""
        return self._table

    def fetch(self, ids: list[str], scope: Scope | None = None) -> list[Chunk]:
        """Chunks by id, in the order asked (a lookup for cited sources, not a search): the ones this
        process returned lately from memory, the others from the index; within `scope` when one is asked."""
        with self._recent_lock:
            known = {i: c for i in ids if (c := self._recent.get(i)) is not None}
        if missing := [i for i in ids if i not in known]:
            query = self._table.search().where(col("id").isin(missing)).select(self._columns)
            rows = query.limit(len(missing)).to_list()
            known.update((r["id"], _chunk(r, 0.0, [])) for r in rows)
            self._remember(list(known.values()))
        return [
            msgspec.structs.replace(known[i], score=0.0, found_by=["memory"], agreement=1)
            for i in ids
            if i in known and contains(scope, known[i].scope or Scope())
        ]

    def _remember(self, chunks: list[Chunk]) -> None:
        with self._recent_lock:
            for c in chunks:
                self._recent[c.id] = c
                self._recent.move_to_end(c.id)
            while len(self._recent) > RECENT_CHUNKS:
                self._recent.popitem(last=False)

    def catalog(self) -> Manifest:
        """The corpus manifest: identifier keys and hub shares (empty for an index without a manifest)."""
        if self._catalog is None:
            with self._catalog_lock:
                if self._catalog is None:
                    self._catalog = (self._catalog_source() if self._catalog_source else None) or Manifest()
        return self._catalog

    def calibration(self) -> Calibration | None:
        """This index version's calibration of the verdict (read once); None when it has none."""
        return self._calibration() if self._calibration else None

    def centroid(self) -> np.ndarray:
        """The unit mean of the passages' unit vectors, read once (the vector column only)."""
        if self._centroid is None:
            with self._centroid_lock:
                if self._centroid is None:
                    column = self._table.search().select(["vector"]).limit(None).to_arrow().column("vector")
                    v = np.asarray(column.to_pylist(), dtype=np.float32).reshape(len(column), -1)
                    mean = (v / np.linalg.norm(v, axis=1, keepdims=True).clip(min=1e-12)).mean(axis=0)
                    self._centroid = mean / (np.linalg.norm(mean) or 1.0)
        return self._centroid

    def unknown(self, terms: Iterable[str], typos: int = 0) -> set[str]:
        """The terms no passage of the index contains (`typos`: with that many edits forgiven): one full-text
        query per term, each asking for a single row, in parallel (the FTS index is the index's vocabulary,
        stemmed as it indexes). The caller leaves stop words out: the tokenizer drops them, so they would match
        nothing anywhere."""

        def query(term: str) -> MatchQuery:
            return MatchQuery(term, FTS_COLUMN, fuzziness=typos, prefix_length=2 if typos else 0)

        asked = [t for t in dict.fromkeys(terms) if t]
        running = {t: self._pool.submit(st.Strategy("term", fts=query(t)).run, self._table, 1) for t in asked}
        return {t for t, f in running.items() if not f.result()}

    def search(
        self,
        query: str,
        k: int = 5,
        vector: np.ndarray | None = None,
        analysis: Analysis | None = None,
        translated: str | None = None,
        hide: frozenset[str] = frozenset(),
        scope: Scope | None = None,
    ) -> RetrievalResult:
        """The k best chunks for the query, within `scope` when one is asked (a prefilter, ADR 0121). `vector`: the
        query's embedding when the caller has it already.
        `translated`: the query in the index's language (the `translate` stage); the full-text side searches it,
        the vector side too unless the embedder is multilingual (`SearchOptions.embed_translation`).
        `hide`: sections (`section_of`) searched as if they were not in the index (a calibration probe's own)."""
        if translated is not None:
            query, analysis = (translated if self.options.embed_translation else query), analyze(translated)
        return self._search(query, k, vector, analysis, hide=hide, scope=scope)[0]

    def rank(self, query: str, k: int) -> list[str]:
        """The document ids of the k best chunks, best first, without reading their passages: what an
        evaluation ranks by, like LanceDB's hybrid query asked for ids only (`assist eval retrieval`)."""
        return [c.doc_id for c in self._search(query, k, None, None, passages=False)[0].chunks]

    def explain(self, query: str, k: int = 5) -> tuple[RetrievalResult, dict[str, list[str]]]:
        """The search, and each strategy's ranked document ids (for triage: `assist eval retrieval --per-query`)."""
        result, lists = self._search(query, k, None, None)
        return result, {name: [h.doc_id for h in hits] for name, hits in lists.items()}

    # 63 lines: one search's steps in order; its signature takes 10 of them since `hide` and `scope` joined it
    def _search(
        self,
        query: str,
        k: int,
        vector: np.ndarray | None,
        analysis: Analysis | None,
        passages: bool = True,
        hide: frozenset[str] = frozenset(),
        scope: Scope | None = None,
    ) -> tuple[RetrievalResult, dict[str, list[st.Hit]]]:
        started = time.perf_counter()
        table = scoped(self._table, scope)
        a = analysis or analyze(query)
        pool = max(MIN_POOL, k)
        embedding = None if vector is not None else self._pool.submit(self._embedder.embed, [query])
        running = {s.name: self._pool.submit(s.run, table, pool) for s in st.lexical(a)}
        named = [] if hide else self._named(a)  # a named document's opening chunk could be the hidden section
        vector, degraded = self._query_vector(vector, embedding, started)
        if vector is not None:
            running[st.VECTOR] = self._pool.submit(st.Strategy(st.VECTOR, vector=vector).run, table, pool)
        lists = {name: _shown(f.result(), hide) for name, f in running.items()}
        fused, note = self._fuse(lists, named, self.options.similarity_floor, table), ""
        confidence: Confidence | None = None
        if fused:
            confidence = Confidence.VERY_HIGH if IDENTIFIER in fused[0].ranks else None
        else:
            fused, confidence, note = self._fallback(a, lists, pool, hide, table)
        chunks = self._passages(fused, lists, k) if passages else _unread(fused[:k], lists)
        if chunks and confidence is None:
            confidence = _agreement_confidence(chunks[0], len(lists), degraded)
        if chunks and self._rerank:
            chunks = self._rerank(query, chunks)
        suggestions: list[str] = []
        if not chunks:
            confidence, note = Confidence.NONE, "no passage matches; try broader terms or one of the suggested topics"
            suggestions = self.suggestions(query)
        weights = self.options.weights([st.VECTOR, st.RELAXED, st.EXACT])
        result = RetrievalResult(
            chunks=chunks,
            confidence=confidence or Confidence.NONE,
            query_kind=a.kind,
            weights={"semantic": weights[st.VECTOR], "lexical": weights[st.RELAXED], "exact": weights[st.EXACT]},
            degraded=degraded,
            strategies={name: len(hits) for name, hits in lists.items()} | ({IDENTIFIER: len(named)} if named else {}),
            note=note,
            suggestions=suggestions,
            similarity=_best_similarity(lists),
            # an evaluation's ranking (no passages read) needs no verdict, so no centroid
            centrality=self._centrality(vector) if passages and vector is not None else None,
        )
        log.info(
            "retrieve.fused",
            n=len(chunks),
            confidence=confidence,
            query_kind=a.kind.value,
            named=named,
            strategies=result.strategies,
            degraded=degraded,
            ms=round((time.perf_counter() - started) * 1000, 2),
        )
        if passages:  # chunks without their text are no memory for a follow-up to cite from
            self._remember(chunks)
        return result, lists

    def _fallback(
        self, a: Analysis, lists: dict[str, list[st.Hit]], pool: int, hide: frozenset[str], table: Any
    ) -> tuple[list[Fused], Confidence | None, str]:
        """Nothing passed the fusion: the fallback phases, each looser than the last, until one finds something
        (its hits join `lists`); the confidence and the note say which phase did."""
        phases = [
            (Confidence.LOW, "relaxed matching: typos forgiven, no similarity floor", st.fuzzy(a), 0.0),
            (Confidence.SPECULATIVE, "partial word matching: verify relevance", st.partial(a), 0.0),
        ]
        for level, why, extra, floor in phases:
            more = {s.name: _shown(s.run(table, pool), hide) for s in extra}
            lists.update(more)
            if st.VECTOR in lists:
                more[st.VECTOR] = lists[st.VECTOR]
            if fused := self._fuse(more, [], floor, table):
                return fused, level, why
        return [], None, ""

    def _centrality(self, vector: np.ndarray) -> float:
        v = np.asarray(vector, dtype=np.float32)
        return round(float(self.centroid() @ v / (np.linalg.norm(v) or 1.0)), 6)

    def suggestions(self, query: str) -> list[str]:
        """Document titles to try: those sharing the most letter trigrams with the query, then the shortest
        (an overview's title is shorter than a decision record's)."""
        if self._titles is None:
            rows = self._table.search().select(["title"]).limit(None).to_arrow().column("title").to_pylist()
            self._titles = sorted(set(rows))
        grams = _trigrams(query)
        ranked = sorted(self._titles, key=lambda t: (-len(grams & _trigrams(t)), len(t), t))
        return ranked[:SUGGESTIONS]

    def _named(self, a: Analysis) -> list[str]:
        """Documents the query names by an identifier they are known by (`ADR-8` = `adr 0008`), in the
        order named. Only a query that mentions something id-like reads the catalog."""
        return self.catalog().named(a.mentions) if a.mentions else []

    def _query_vector(
        self, vector: np.ndarray | None, embedding: Future | None, started: float
    ) -> tuple[np.ndarray | None, list[Degraded]]:
        if embedding is None:
            return vector, []
        budget = max(0.0, self.options.embed_timeout_s - (time.perf_counter() - started))
        try:
            return embedding.result(timeout=budget)[0], []
        except FutureTimeout:
            log.warning("retrieve.embedder_timeout", budget_ms=round(self.options.embed_timeout_s * 1000))
            return None, [Degraded.EMBEDDER_TIMEOUT]
        except EmbedderError as exc:
            log.warning("retrieve.embedder_failed", error=str(exc)[:200])
            return None, [Degraded.EMBEDDER_UNAVAILABLE]

    def _fuse(self, lists: dict[str, list[st.Hit]], named: list[str], floor: float, table: Any) -> list[Fused]:
        """Candidates best first: the named documents' best chunks, then the convex fusion of the lists,
        hub documents damped."""
        similarity = {h.id: h.score for h in lists.get(st.VECTOR, [])}
        doc_of = {h.id: h.doc_id for hits in lists.values() for h in hits}
        fused = convex(
            {n: [(h.id, h.score) for h in hits] for n, hits in lists.items()},
            self.options.weights(list(lists)),
            self.options.agreement_bonus,
        )
        fused = [f for f in fused if not below_floor(f.found_by, similarity.get(f.id), floor)]
        hubs = self.catalog().hubs if self.options.hub_damping else {}
        if hubs:
            for f in fused:
                f.score *= 1.0 - self.options.hub_damping * hubs.get(doc_of[f.id], 0.0)
            fused.sort(key=lambda f: -f.score)
        if not named:
            return fused
        first: list[Fused] = []
        for rank, doc in enumerate(named, 1):
            best = next((f for f in fused if doc_of[f.id] == doc), None)
            if best is None:  # named but found by no strategy: its opening chunk
                hit = _opening(table, doc)  # none outside a scoped question's scope
                if hit is None:
                    continue
                lists.setdefault(IDENTIFIER, []).append(hit)
                doc_of[hit.id] = doc
                best = Fused(hit.id, 0.0)
            best.ranks = {IDENTIFIER: rank, **best.ranks}
            first.append(best)
        return first + [f for f in fused if f not in first]

    def _passages(self, fused: list[Fused], lists: dict[str, list[st.Hit]], k: int) -> list[Chunk]:
        """The passages of the k best (MMR: of the k most relevant and diverse among the pool), read by row id."""
        if not fused:
            return []
        row_of = {h.id: h.row for hits in lists.values() for h in hits}
        mmr_on = self.options.mmr_lambda < 1.0
        picked = fused[: max(MIN_POOL, 2 * k)] if mmr_on else fused[:k]
        columns = [*self._columns, "vector"] if mmr_on else self._columns
        rows = {r["id"]: r for r in self._table.take_row_ids([row_of[f.id] for f in picked]).select(columns).to_list()}
        picked = [f for f in picked if f.id in rows]  # a row deleted since the query: not returned
        if mmr_on:
            vectors = np.asarray([rows[f.id]["vector"] for f in picked], dtype=np.float32)
            picked = [picked[i] for i in mmr([f.score for f in picked], vectors, k, self.options.mmr_lambda)]
        return [_chunk(rows[f.id], f.score, f.found_by) for f in picked[:k]]


def _opening(table: Any, doc_id: str) -> st.Hit | None:
    rows = (
        table.search()
        .where((col("doc_id") == lit(doc_id)) & (col("ordinal") == lit(0)))
        .select(st.HIT_COLUMNS)
        .with_row_id(True)
        .limit(1)
        .to_arrow()
        .to_pylist()
    )
    return st.Hit(rows[0]["id"], rows[0]["doc_id"], rows[0]["_rowid"], 0.0) if rows else None


def section_of(chunk_id: str) -> str:
    """The section a chunk belongs to: its id without the ordinal (a long section's windows share it)."""
    return chunk_id.rsplit(":", 1)[0]


def _shown(hits: list[st.Hit], hide: frozenset[str]) -> list[st.Hit]:
    return [h for h in hits if section_of(h.id) not in hide] if hide else hits


def _unread(fused: list[Fused], lists: dict[str, list[st.Hit]]) -> list[Chunk]:
    """The ranked chunks as ids only: no title, heading or text read."""
    doc_of = {h.id: h.doc_id for hits in lists.values() for h in hits}
    row = {"title": "", "heading": "", "text": ""}
    return [_chunk({**row, "id": f.id, "doc_id": doc_of[f.id]}, f.score, f.found_by) for f in fused]


def _agreement_confidence(top: Chunk, ran: int, degraded: list[Degraded]) -> Confidence:
    """How far the strategies agree on the best chunk: all of three or more → very_high; two → high."""
    if top.agreement >= 3 and top.agreement == ran:
        return Confidence.VERY_HIGH
    if top.agreement >= 2:
        return Confidence.HIGH
    return Confidence.LOW if degraded else Confidence.MEDIUM


def _best_similarity(lists: dict[str, list[st.Hit]]) -> float | None:
    hits = lists.get(st.VECTOR)
    if hits is None:
        return None
    return round(max((h.score for h in hits), default=0.0), 6)


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
        url=row.get("url") or "",
        scope=scope if (scope := row_scope(row)) else UNSET,
    )
