"""`assist eval uncertain`: how often the uncertainty verdict (ADR 0055) flags answerable and off-topic
questions, on several BEIR sets side by side.

Each set's answerable questions are its queries with a relevant document in the qrels; its off-topic ones
come from the `--offtopic` files, the same for every set: JSONL `{"_id","text"}` rows (a Spanish row may
carry `metadata.translation`), or CLINC150's JSON, of which `oos_train` and the first `train` row of each
intent are read (never a validation or test split). A question in another language than the index is
judged on its translation when the data gives one (`metadata.translation`, or `metadata.translates`: the
id of the set's own query it translates), as the engine's translate stage would give it; otherwise untranslated,
as the engine without a model. Beside the verdict: the signal there was before it, retrieval confidence
`low`/`none` (what the insights page counted as a gap).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assist.retrieve import beir
from assist.retrieve.evaluate import build_index
from assist.retrieve.language import foreign
from assist.retrieve.search import Retriever, SearchOptions
from assist.retrieve.verdict import Weights, judge

if TYPE_CHECKING:
    from assist.embed.base import Embedder
    from assist.settings import Settings

#: what counted as "the docs did not answer" before the verdict (insights' WEAK)
WEAK = frozenset({"low", "none"})


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    translation: str | None = None


@dataclass(frozen=True)
class DataSet:
    name: str
    corpus: str
    qrels: str
    queries: tuple[str, ...]


def offtopic(path: str | Path) -> list[Question]:
    p = Path(path)
    if p.suffix == ".json":  # CLINC150: the out-of-scope training rows, and one training row per intent
        data = json.loads(p.read_text(encoding="utf-8"))
        first: dict[str, str] = {}
        for text, intent in data["train"]:
            first.setdefault(intent, text)
        rows = [t for t, _ in data["oos_train"]] + list(first.values())
        return [Question(f"{p.stem}:{i}", t) for i, t in enumerate(rows)]
    out = []
    for line in p.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.append(Question(str(row["_id"]), row["text"], (row.get("metadata") or {}).get("translation")))
    return out


def answerable(ds: DataSet) -> list[Question]:
    judged = beir.read_qrels(ds.qrels)
    rows: dict[str, dict[str, Any]] = {}
    for path in ds.queries:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                rows[f"{path}:{row['_id']}"] = row
    english = {str(r["_id"]): r["text"] for r in rows.values() if "translates" not in (r.get("metadata") or {})}
    out = []
    for key, row in rows.items():
        meta = row.get("metadata") or {}
        if str(row["_id"]) in judged:
            out.append(Question(key, row["text"], meta.get("translation") or english.get(meta.get("translates", ""))))
    return out


def verdicts(
    questions: list[Question], retriever: Retriever, settings: Settings
) -> list[tuple[str | None, str, Question]]:
    """(the verdict's reason or None, retrieval confidence, question) for each question, as the engine judges it."""
    out = []
    for q in questions:
        text = q.translation if q.translation and foreign(q.text, settings.index.language) else q.text
        result = retriever.search(text, k=settings.retrieve.top_k)
        readable = text is not q.text or foreign(q.text, settings.index.language) is None
        v = judge(text, result, Weights.from_settings(settings), readable)
        out.append((v.reason, result.confidence, q))
    return out


def evaluate(
    sets: list[DataSet], offtopic_files: list[str], index_root: str, settings: Settings, embedder: Embedder
) -> dict[str, Any]:
    off = [(Path(f).name, offtopic(f)) for f in offtopic_files]
    report: dict[str, Any] = {
        "threshold": settings.uncertain.threshold,
        "centrality_weight": settings.uncertain.centrality_weight,
        "coverage_weight": settings.uncertain.coverage_weight,
        "sets": {},
    }
    for ds in sets:
        table, _, catalog = build_index(ds.corpus, str(Path(index_root) / ds.name), settings, embedder)
        retriever = Retriever(table, embedder, SearchOptions.from_settings(settings), catalog=catalog)
        groups = {"answerable": verdicts(answerable(ds), retriever, settings)}
        groups |= {f"off-topic {name}": verdicts(qs, retriever, settings) for name, qs in off}
        offs = [v for name, vs in groups.items() if name != "answerable" for v in vs]
        report["sets"][ds.name] = {
            **{name: _rates(vs) for name, vs in groups.items()},
            "off-topic": _rates(offs),
            "missed": [q.text for reason, _, q in offs if reason is None][:20],
            "flagged_answerable": [q.text for reason, _, q in groups["answerable"] if reason][:20],
        }
    return report


def _rates(vs: list[tuple[str | None, str, Question]]) -> dict[str, Any]:
    n = len(vs)
    return {
        "n": n,
        "flagged": round(sum(r is not None for r, _, _ in vs) / n, 4) if n else None,
        "weak_confidence": round(sum(c in WEAK for _, c, _ in vs) / n, 4) if n else None,
        "reasons": dict(Counter(r for r, _, _ in vs if r).most_common()),
    }
