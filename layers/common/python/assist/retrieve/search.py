"""Hybrid search over the chunk table: LanceDB's vector + native FTS, fused by RRF.

This is the first, plain hybrid; the query-adaptive fusion builds on the same table.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from assist.contracts import Chunk, RetrievalResult
from assist.embed.base import EmbedderError
from assist.index.store import FTS_COLUMN
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.embed.base import Embedder

log = get_logger(__name__)
_COLUMNS = ["id", "doc_id", "title", "heading", "text"]
_WORD = re.compile(r"[\w]+", re.UNICODE)


def fts_text(query: str) -> str:
    """Words only: quotes, hyphens and operators in user text must not reach the FTS parser."""
    return " ".join(_WORD.findall(query))


def confidence_of(top_score: float, n: int) -> str:
    if n == 0:
        return "none"
    # RRF with k=60: a chunk ranked first by both strategies scores 2/61 ≈ 0.033.
    if top_score >= 0.032:
        return "high"
    if top_score >= 0.025:
        return "medium"
    return "low"


class Retriever:
    def __init__(self, table: Any, embedder: Embedder) -> None:
        self._table = table
        self._embedder = embedder

    def fetch(self, ids: list[str]) -> list[Chunk]:
        """Chunks by id, in the order asked (a lookup for cited sources, not a search)."""
        if not ids:
            return []
        where = "id IN (" + ", ".join("'" + i.replace("'", "''") + "'" for i in ids) + ")"
        rows = {r["id"]: r for r in self._table.search().where(where).select(_COLUMNS).limit(len(ids)).to_list()}
        return [_chunk({**rows[i], "_score": 0.0}, "_score", ["memory"]) for i in ids if i in rows]

    def search(self, query: str, k: int = 5) -> RetrievalResult:
        words = fts_text(query)
        degraded: list[str] = []
        try:
            vec = self._embedder.embed([query])[0]
        except EmbedderError as exc:
            log.warning("retrieve.embedder_failed", error=str(exc))
            vec, degraded = None, ["embedder_unavailable"]
        if vec is not None and words:
            q = self._table.search(query_type="hybrid", fts_columns=FTS_COLUMN).vector(vec).text(words)
            rows, found_by, score_key = q.limit(k).select(_COLUMNS).to_list(), ["vector", "fts"], "_relevance_score"
        elif vec is not None:
            rows, found_by, score_key = (
                self._table.search(vec).limit(k).select(_COLUMNS).to_list(),
                ["vector"],
                "_distance",
            )
        elif words:
            q = self._table.search(words, query_type="fts", fts_columns=FTS_COLUMN)
            rows, found_by, score_key = q.limit(k).select(_COLUMNS).to_list(), ["fts"], "_score"
        else:
            rows, found_by, score_key = [], [], "_score"
        chunks = [_chunk(r, score_key, found_by) for r in rows]
        top = chunks[0].score if chunks and score_key == "_relevance_score" else 0.0
        conf = confidence_of(top, len(chunks)) if score_key == "_relevance_score" else ("low" if chunks else "none")
        log.info("retrieve.fused", n=len(chunks), confidence=conf, strategies=found_by, degraded=degraded)
        return RetrievalResult(
            chunks=chunks,
            confidence=conf,
            query_kind="hybrid",
            weights={"semantic": 0.5, "lexical": 0.5},
            degraded=degraded,
        )


def _chunk(row: dict[str, Any], score_key: str, found_by: list[str]) -> Chunk:
    score = float(row.get(score_key, 0.0))
    if score_key == "_distance":
        score = 1.0 - score / 2.0  # L2 on unit vectors → cosine similarity
    return Chunk(
        id=row["id"],
        doc_id=row["doc_id"],
        title=row["title"],
        heading=row["heading"],
        text=row["text"],
        score=round(score, 6),
        found_by=list(found_by),
        agreement=len(found_by),
    )
