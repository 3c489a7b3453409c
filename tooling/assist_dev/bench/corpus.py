"""`assist bench corpus`: the corpus manifest's size, and what corpus-question recognition adds per question
(ADR 0042), printed beside the search it runs with.

Size: the manifest of docs/ and of a generated 1,000-document folder with front matter — entries, their
JSON, the whole `<corpus>` section and its rough tokens (4 characters a token), and how many entries
fit RETRIEVE_CORPUS_CHARS. Latency, on an index of docs/: for the relevance set's questions (none is
about the corpus) the recognition the engine adds, beside the search's own time; for corpus
questions, recognition + the section + the named documents read whole.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from assist.answer.corpus import section
from assist.ask.build import lazy_corpus, lazy_retriever
from assist.build.run import ingest
from assist.embed import build_embedder
from assist.index.chunking import iter_documents, parse_document
from assist.index.manifest import entry_for, line
from assist.offline.retrieve.beir import read_queries
from assist.retrieve.corpus import Corpus, recognize
from assist.retrieve.documents import whole_document
from assist.settings import Settings
from assist.stats import percentile
from assist_dev.bench.harness import REPO

BUDGET_ADDED_P50_MS = 5.0
CORPUS_QUESTIONS = [
    "How many ADRs are there?",
    "List all the decision records",
    "Which documents are there?",
    "Does ADR-0099 exist?",
    "Tell me about ADR-0020",
    "What does ADR.21 decide?",
    "¿Cuántas ADR hay?",
    "Is there a page about the configuration?",
]
TYPES = ["decisions", "principles", "guides"]


def synthetic(root: Path, n: int) -> Path:
    """n documents with realistic front matter, spread over three folders, numbered like ADRs."""
    for i in range(n):
        folder = TYPES[i % len(TYPES)]
        (root / folder).mkdir(parents=True, exist_ok=True)
        num = i // len(TYPES)
        title = f"Use component {i} for the {folder[:-1]} about topic {i * 7 % 97}"
        (root / folder / f"{num:04d}-component-{i}.md").write_text(
            f"---\nparent: {folder.title()}\nnav_order: {folder[:3].upper()}.{num}\ndct:\n  title: {title}\n"
            f"  isVersionOf: {'accepted' if i % 4 else 'proposed'}\n  issued: 2025-0{i % 9 + 1}-1{i % 10}\n"
            f"owner: Team {i % 12}\n---\n\n# {title}\n\n## Context\n\nWhy {i}.\n\n## Decision\n\nWhat {i}.\n"
            "\n## Consequences\n\nSo it goes.\n"
        )
    return root


def size(root: Path, budget_chars: int) -> dict[str, Any]:
    base = str(root)
    entries = [
        entry_for(parse_document(d, p.read_text(encoding="utf-8", errors="replace"), str(p)), base)
        for d, p in iter_documents(root)
    ]
    lines = [line(e) for e in entries]
    section = sum(len(x) + 1 for x in lines)
    fit, used = 0, 0
    for x in lines:
        if used + len(x) + 1 > budget_chars:
            break
        fit, used = fit + 1, used + len(x) + 1
    start = time.perf_counter()
    Corpus(None, entries)
    return {
        "documents": len(entries),
        "manifest_json_bytes": sum(len(msgspec.json.encode(e)) for e in entries),
        "section_chars_all": section,
        "section_tokens_all": section // 4,
        "chars_per_entry": round(section / max(1, len(entries)), 1),
        "entries_within_budget": fit,
        "lookup_build_ms": round((time.perf_counter() - start) * 1000, 2),
    }


def latency(settings: Settings, rounds: int) -> dict[str, Any]:
    retriever = lazy_retriever(settings)()
    start = time.perf_counter()
    corpus = lazy_corpus(settings)()
    first_read_ms = (time.perf_counter() - start) * 1000
    queries = list(read_queries(REPO / "data/retrieval/queries.jsonl").values())
    budget = settings.retrieve.corpus_chars
    search_ms: list[float] = []
    added_ms: list[float] = []
    fired = 0
    for _ in range(rounds):
        for q in queries:
            t0 = time.perf_counter()
            retriever.search(q, k=settings.retrieve.top_k)
            t1 = time.perf_counter()
            fired += recognize(q, lambda: corpus, budget) is not None
            t2 = time.perf_counter()
            search_ms.append((t1 - t0) * 1000)
            added_ms.append((t2 - t1) * 1000)
    corpus_ms: list[float] = []
    kinds: dict[str, str] = {}
    for _ in range(rounds):
        for q in CORPUS_QUESTIONS:
            t0 = time.perf_counter()
            m = recognize(q, lambda: corpus, budget)
            if m is not None:
                section(m, corpus.by_id)
                left = settings.retrieve.document_chars
                for d in m.documents:
                    left -= sum(len(c.text) for c in whole_document(corpus.table, d, max(left, 1)))
            corpus_ms.append((time.perf_counter() - t0) * 1000)
            kinds[q] = m.kind if m else "-"
    p50_search, p50_added = percentile(search_ms, 50), percentile(added_ms, 50)
    return {
        "questions": len(queries),
        "rounds": rounds,
        "recognised_as_corpus": round(fired / rounds),
        "search_p50_ms": p50_search,
        "added_p50_ms": p50_added,
        "added_p95_ms": percentile(added_ms, 95),
        "added_over_search": round(p50_added / p50_search, 4) if p50_search else None,
        "budget_added_p50_ms": BUDGET_ADDED_P50_MS,
        "within_budget": p50_added <= BUDGET_ADDED_P50_MS,
        "manifest_first_read_ms": round(first_read_ms, 2),
        "corpus_question_p50_ms": percentile(corpus_ms, 50),
        "corpus_question_p95_ms": percentile(corpus_ms, 95),
        "corpus_question_kinds": kinds,
    }


def run(settings: Settings, rounds: int = 3, documents: int = 1000, index_dir: str | None = None) -> dict[str, Any]:
    docs = REPO / "docs"
    with tempfile.TemporaryDirectory(prefix="assist-bench-corpus-") as tmp:
        s = settings.with_(index={"uri": index_dir or str(Path(tmp) / "index")})
        ingest(docs, s, build_embedder(s), progress=False)
        out = {
            "size": {
                "docs": size(docs, s.retrieve.corpus_chars),
                f"synthetic_{documents}": size(synthetic(Path(tmp) / "synthetic", documents), s.retrieve.corpus_chars),
                "budget_chars": s.retrieve.corpus_chars,
            },
            "latency": latency(s, rounds),
        }
    json.dumps(out)  # fail here, not in the printer, on anything not JSON
    return out
