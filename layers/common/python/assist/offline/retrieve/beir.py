"""BEIR files — `corpus.jsonl` ({"_id","title","text"}), `queries.jsonl` ({"_id","text"}), qrels TSV
(`query-id corpus-id score`) — read into plain dicts, and a corpus turned into index documents.

`docs_corpus` writes our own `docs/` as such a corpus, one document per heading section, so the
relevance set under data/retrieval/ is judged against the same sections the engine indexes.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from assist.errors import AssistError
from assist.index.chunking import DocChunk, chunk_document, doc_hash, iter_documents, windows


class BeirError(AssistError, ValueError):
    """A BEIR file is missing or malformed; the message names the file and line."""


def _jsonl(path: str | Path, required: tuple[str, ...]) -> list[dict[str, Any]]:
    p = Path(path)
    if not p.is_file():
        raise BeirError(f"{p}: no such file")
    rows = []
    with p.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BeirError(f"{p}:{n}: not JSON: {exc}") from exc
            if not isinstance(row, dict) or any(k not in row for k in required):
                raise BeirError(f"{p}:{n}: expected an object with {list(required)}")
            rows.append(row)
    return rows


def read_corpus(path: str | Path) -> dict[str, tuple[str, str]]:
    """{_id: (title, text)}"""
    return {str(r["_id"]): (str(r.get("title") or ""), str(r["text"])) for r in _jsonl(path, ("_id", "text"))}


def read_queries(path: str | Path) -> dict[str, str]:
    return {str(r["_id"]): str(r["text"]) for r in _jsonl(path, ("_id", "text"))}


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """{query id: {corpus id: grade}}, grades > 0 only (BEIR's test qrels may list 0 for 'judged, not relevant')."""
    p = Path(path)
    if not p.is_file():
        raise BeirError(f"{p}: no such file")
    out: dict[str, dict[str, int]] = {}
    with p.open(encoding="utf-8", newline="") as f:
        rows = csv.reader(f, delimiter="\t")
        header = next(rows, None)
        if header is None or [h.strip() for h in header[:3]] != ["query-id", "corpus-id", "score"]:
            raise BeirError(f"{p}: the first line must be the header 'query-id<TAB>corpus-id<TAB>score'")
        for n, row in enumerate(rows, 2):
            if not row:
                continue
            try:
                qid, did, grade = row[0], row[1], int(float(row[2]))
            except (IndexError, ValueError) as exc:
                raise BeirError(f"{p}:{n}: expected query-id, corpus-id and an integer score") from exc
            if grade > 0:
                out.setdefault(qid, {})[did] = grade
    return out


def read_judged(queries: str | Path, qrels: str | Path) -> tuple[dict[str, dict[str, int]], dict[str, str]]:
    """(qrels, the queries that have a relevant document): what every evaluation asks; a BeirError when none has."""
    judged = read_qrels(qrels)
    asked = {qid: text for qid, text in read_queries(queries).items() if qid in judged}
    if not asked:
        raise BeirError(f"no query of {queries} has a relevant document in {qrels}")
    return judged, asked


def index_documents(corpus: dict[str, tuple[str, str]], source: str = "") -> dict[str, tuple[str, list[DocChunk]]]:
    """Each corpus document as index chunks (long ones cut like our own docs), keyed by its id, with its hash."""
    docs = {}
    for cid, (title, text) in corpus.items():
        pieces = windows(text.strip()) if text.strip() else [title]
        chunks = [DocChunk(f"{cid}:{i}", cid, title, "", source, i, piece) for i, piece in enumerate(pieces)]
        docs[cid] = (doc_hash(f"{title}\n{text}"), chunks)
    return docs


def docs_corpus(root: str | Path) -> list[dict[str, str]]:
    """Our documentation as a BEIR corpus: one document per heading section, `_id` = the section's chunk id
    without its ordinal (`configuration#platform-prefixes`), the parts of a long section joined again."""
    sections: dict[str, dict[str, str]] = {}
    for doc_id, path in iter_documents(Path(root)):
        for c in chunk_document(doc_id, path.read_text(encoding="utf-8")):
            sid = c.id.rsplit(":", 1)[0]
            title = f"{c.title} > {c.heading}" if c.heading else c.title
            sec = sections.setdefault(sid, {"_id": sid, "title": title, "text": ""})
            sec["text"] = f"{sec['text']}\n\n{c.text}" if sec["text"] else c.text
    return list(sections.values())
