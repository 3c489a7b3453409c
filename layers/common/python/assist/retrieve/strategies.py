"""The search strategies, each one LanceDB query on the chunk table: exact full-text, relaxed full-text,
vector, and the looser full-text queries of the fallback cascade.

Full-text queries are built as LanceDB query objects (`MatchQuery`, `PhraseQuery`), never as query
strings, so nothing a user types — a lone hyphen, a quote, `AND`, a colon — reaches a query parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lancedb.query import BooleanQuery, MatchQuery, Occur, PhraseQuery

from assist.index.store import FTS_COLUMN

if TYPE_CHECKING:
    from assist.retrieve.analysis import Analysis

#: what a passage carries once chosen; never the FTS copy of the text
COLUMNS = ["id", "doc_id", "title", "heading", "text", "url"]
#: what a strategy reads: ranking needs ids and scores only, passages are read for the few that win
HIT_COLUMNS = ["id", "doc_id"]
EXACT, RELAXED, VECTOR = "fts_exact", "fts_relaxed", "vector"


@dataclass(frozen=True)
class Hit:
    id: str
    doc_id: str
    row: int  # LanceDB row id: the passage is read by it
    score: float  # BM25, or cosine similarity for the vector strategy


@dataclass(frozen=True)
class Strategy:
    """One query to run: a name (for `found_by` and the fusion weights) and what to run."""

    name: str
    fts: Any = None  # a LanceDB FullTextQuery
    vector: Any = None  # a query vector

    def run(self, table: Any, limit: int) -> list[Hit]:
        """Hits best first."""
        if self.vector is not None:
            query = table.search(self.vector).select([*HIT_COLUMNS, "_distance"])
            rows = query.with_row_id(True).limit(limit).to_arrow().to_pylist()
            # L2 on unit vectors → cosine similarity
            return [Hit(r["id"], r["doc_id"], r["_rowid"], 1.0 - float(r["_distance"]) / 2.0) for r in rows]
        query = table.search(self.fts, query_type="fts").select([*HIT_COLUMNS, "_score"])
        rows = query.with_row_id(True).limit(limit).to_arrow().to_pylist()
        hits = [Hit(r["id"], r["doc_id"], r["_rowid"], float(r["_score"])) for r in rows]
        # BM25: higher is better. LanceDB returns them so; sort anyway, stable, so a change there cannot flip us.
        return sorted(hits, key=lambda h: -h.score)


def lexical(analysis: Analysis) -> list[Strategy]:
    """The primary full-text strategies of a query: exact (phrases, symbols, or all words) and relaxed (any word)."""
    out: list[Strategy] = []
    terms = " ".join(analysis.words)
    exact_parts = [PhraseQuery(" ".join(_split(p)), FTS_COLUMN) for p in analysis.phrases or analysis.identifiers]
    if len(exact_parts) == 1:
        out.append(Strategy(EXACT, fts=exact_parts[0]))
    elif exact_parts:
        occur = Occur.MUST if analysis.phrases else Occur.SHOULD  # every quoted phrase; any of several symbols
        out.append(Strategy(EXACT, fts=BooleanQuery([(occur, q) for q in exact_parts])))
    elif len(analysis.words) > 1:
        out.append(Strategy(EXACT, fts=MatchQuery(terms, FTS_COLUMN, operator="AND")))
    if terms:
        out.append(Strategy(RELAXED, fts=MatchQuery(terms, FTS_COLUMN)))
    return out


def fuzzy(analysis: Analysis) -> list[Strategy]:
    """Fallback 1: any word, with a typo forgiven (edit distance 1)."""
    terms = " ".join(analysis.words)
    return [Strategy("fts_fuzzy", fts=MatchQuery(terms, FTS_COLUMN, fuzziness=1))] if terms else []


def partial(analysis: Analysis) -> list[Strategy]:
    """Fallback 2: the parts of words — symbols split at case and underscores, long words cut to their
    stem-like head — each matched loosely."""
    parts = {p[:6].lower() for w in analysis.words for p in _split(w) if len(p) >= 3}
    terms = " ".join(sorted(parts))
    return [Strategy("fts_partial", fts=MatchQuery(terms, FTS_COLUMN, fuzziness=2, prefix_length=2))] if terms else []


def _split(text: str) -> list[str]:
    """`addVar` → add, Var; `ERR_429` → ERR, 429; `classify.decided` → classify, decided."""
    return re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+|[^\W\d_]+", text)
