"""`assist eval uncertain`: the uncertainty verdict (ADR 0055, ADR 0082) fitted on several development
corpora and reported on each, as fitted and as left out of the fit.

Each set is a BEIR corpus with three kinds of questions:
- **answerable**: its queries with a relevant document in the qrels;
- **off-topic**: the `--offtopic` files, the same for every set: JSONL `{"_id","text"}` rows, or CLINC150's
  JSON, of which `oos_train` and the first `train` row of each intent are read (never a validation or test
  split). A row whose `metadata.near` names the set is left out of that set (near its subject);
- **absent** (in domain, but absent): the set's `--absent` files, questions naming a thing the corpus never
  mentions.

A question in another language than the index is judged on its translation when the data gives one
(`metadata.translation`, or `metadata.translates`: the id of the set's own query it translates), as the
engine's translate stage would give it; otherwise untranslated, as the engine without a model.

Every question is searched once; its signals are kept, and the verdict under any weights is arithmetic on
them (`offline/retrieve/verdict_fit.py` fits the weights). The report gives, per set and kind, the share flagged
under the configured weights, under the weights fitted on every set (`fitted`) and under the weights
fitted without the set (`held_out`, leave-one-corpus-out), beside the old signal (retrieval confidence
`low`/`none`).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from assist.contracts import Confidence
from assist.index.calibration import Calibration
from assist.language import foreign
from assist.offline.retrieve import beir
from assist.offline.retrieve.evaluate import build_index
from assist.offline.retrieve.verdict_fit import Evidence, Targets, fit, flagged
from assist.retrieve.calibrate import calibrate
from assist.retrieve.search import Retriever, SearchOptions
from assist.retrieve.verdict import Weights, calibrated, judge
from assist.stats import percentile

if TYPE_CHECKING:
    from assist.embed.base import Embedder
    from assist.settings import Settings

ANSWERABLE, OFF_TOPIC, ABSENT = "answerable", "off-topic", "absent"
OWN = ":own-section"  # a calibration's key when its probes were scored with their own sections searchable
#: every signal read, whatever the weights: the vocabulary is asked, the threshold never decides
READ_ALL = Weights(threshold=float("-inf"), centrality=0.0, coverage=0.0, absent=1.0, named=1.0)


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    translation: str | None = None
    near: tuple[str, ...] = ()


@dataclass(frozen=True)
class DataSet:
    name: str
    corpus: str
    qrels: str
    queries: tuple[str, ...]
    absent: tuple[str, ...] = ()


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def questions(path: str | Path) -> list[Question]:
    """Off-topic or absent questions: JSONL rows, or CLINC150's JSON (its out-of-scope training rows and one
    training row per intent)."""
    p = Path(path)
    if p.suffix == ".json":
        data = json.loads(p.read_text(encoding="utf-8"))
        first: dict[str, str] = {}
        for text, intent in data["train"]:
            first.setdefault(intent, text)
        rows = [t for t, _ in data["oos_train"]] + list(first.values())
        return [Question(f"{p.stem}:{i}", t) for i, t in enumerate(rows)]
    out = []
    for row in _rows(p):
        meta = row.get("metadata") or {}
        out.append(Question(str(row["_id"]), row["text"], meta.get("translation"), tuple(meta.get("near", ()))))
    return out


def answerable(ds: DataSet) -> list[Question]:
    judged = beir.read_qrels(ds.qrels)
    rows = {f"{path}:{row['_id']}": row for path in ds.queries for row in _rows(Path(path))}
    english = {str(r["_id"]): r["text"] for r in rows.values() if "translates" not in (r.get("metadata") or {})}
    out = []
    for key, row in rows.items():
        meta = row.get("metadata") or {}
        if str(row["_id"]) in judged:
            out.append(Question(key, row["text"], meta.get("translation") or english.get(meta.get("translates", ""))))
    return out


def evidence(
    group: str, source: str, qs: list[Question], retriever: Retriever, settings: Settings
) -> tuple[list[Evidence], list[float]]:
    """Each question searched and judged as the engine does, its signals kept; and each verdict's cost beyond
    the search (ms: the vocabulary look-ups)."""
    out, costs = [], []
    for q in qs:
        text = q.translation if q.translation and foreign(q.text, settings.index.language) else q.text
        result = retriever.search(text, k=settings.retrieve.top_k)
        readable = text is not q.text or foreign(q.text, settings.index.language) is None
        started = time.perf_counter()
        v = judge(text, result, READ_ALL, readable, retriever.unknown)
        costs.append((time.perf_counter() - started) * 1000)
        signals = None
        if v.reason is None and v.score is not None:
            signals = (v.similarity or 0.0, v.centrality or 0.0, v.coverage or 0.0, v.absent or 0.0, v.named or 0.0)
        out.append(Evidence(group, source, q.id, q.text, result.confidence, v.reason, signals, v.unknown))
    return out, costs


def gather(
    sets: list[DataSet], offtopic_files: list[str], index_root: str, settings: Settings, embedder: Embedder
) -> tuple[dict[str, list[Evidence]], dict[str, Any], dict[str, Calibration]]:
    """Every set's evidence, the verdict's cost per set (p50/p95 ms beside the search's), and each set's
    calibration as its index's publish computes it (ADR 0096): from the corpus's documents, never its questions."""
    off = [(f, questions(f)) for f in offtopic_files]
    out: dict[str, list[Evidence]] = {}
    cost: dict[str, Any] = {}
    calibrations: dict[str, Calibration] = {}
    u = settings.uncertain
    for ds in sets:
        table, _, catalog = build_index(ds.corpus, str(Path(index_root) / ds.name), settings, embedder)
        retriever = Retriever(table, embedder, SearchOptions.from_settings(settings), catalog=catalog)
        started = time.perf_counter()
        retriever.centroid()
        centroid_ms = (time.perf_counter() - started) * 1000
        configured = Weights.from_settings(settings)
        k = settings.retrieve.top_k
        calibrations[ds.name] = calibrate(retriever, configured, k, u.calibration_target, u.calibration_confidence)
        # the same probes scored with their own sections searchable: the cut a less cautious calibration gives
        own = calibrate(retriever, configured, k, u.calibration_target, u.calibration_confidence, hold_out=False)
        calibrations[f"{ds.name}{OWN}"] = own
        rows, costs = evidence(ANSWERABLE, Path(ds.queries[0]).name, answerable(ds), retriever, settings)
        for name, qs in off:
            more, c = evidence(OFF_TOPIC, name, [q for q in qs if ds.name not in q.near], retriever, settings)
            rows, costs = rows + more, costs + c
        for path in ds.absent:
            more, c = evidence(ABSENT, Path(path).name, questions(path), retriever, settings)
            rows, costs = rows + more, costs + c
        out[ds.name] = rows
        search_ms = _search_ms(retriever, [e.text for e in rows[:50]], settings.retrieve.top_k)
        cost[ds.name] = {
            "verdict_p50_ms": percentile(costs, 50),
            "verdict_p95_ms": percentile(costs, 95),
            "search_p50_ms": percentile(search_ms, 50),
            "centroid_ms": round(centroid_ms, 1),
            "chunks": table.count_rows(),
            "calibration_s": calibrations[ds.name].seconds,
        }
    return out, cost, calibrations


def _search_ms(retriever: Retriever, texts: list[str], k: int) -> list[float]:
    out = []
    for t in texts:
        started = time.perf_counter()
        retriever.search(t, k=k)
        out.append((time.perf_counter() - started) * 1000)
    return out


def report(
    found: dict[str, list[Evidence]],
    configured: Weights,
    targets: Targets,
    cost: dict[str, Any] | None = None,
    calibrations: dict[str, Calibration] | None = None,
) -> dict[str, Any]:
    """Shares flagged per set and kind: configured weights, fitted on every set, fitted without the set, and
    the configured weights with the threshold the set's own calibration computed (`calibrated`, ADR 0096)."""
    fitted, fit_detail = fit(found, targets)
    held_out = {name: fit({n: e for n, e in found.items() if n != name}, targets)[0] for name in found}
    out: dict[str, Any] = {
        "targets": {"answerable": targets.answerable, "off_topic": targets.off_topic, "absent": targets.absent},
        "configured": _weights(configured),
        "fitted": _weights(fitted) | {"fit": fit_detail},
        "held_out_weights": {name: _weights(w) for name, w in held_out.items()},
        "sets": {},
    }
    for name, rows in found.items():
        per: dict[str, Any] = {}
        runs = {"configured": configured, "fitted": fitted, "held_out": held_out[name]}
        c = (calibrations or {}).get(name)
        if c is not None:
            runs["calibrated"] = calibrated(configured, c)
        if (own := (calibrations or {}).get(f"{name}{OWN}")) is not None:
            runs["calibrated_own_section"] = calibrated(configured, own)
        flags = {k: flagged(rows, w) for k, w in runs.items()}
        for group in (ANSWERABLE, OFF_TOPIC, ABSENT):
            idx = [i for i, e in enumerate(rows) if e.group == group]
            if not idx:
                continue
            per[group] = {
                "n": len(idx),
                **{k: round(float(f[idx].mean()), 4) for k, f in flags.items()},
                # what counted as "the docs did not answer" before the verdict (the insights page's gaps)
                "weak_confidence": round(sum(Confidence(rows[i].confidence).weak for i in idx) / len(idx), 4),
                "by_source": {
                    src: round(float(flags["held_out"][[i for i in idx if rows[i].source == src]].mean()), 4)
                    for src in dict.fromkeys(rows[i].source for i in idx)
                },
                "reasons": dict(Counter(rows[i].fixed for i in idx if rows[i].fixed).most_common()),
            }
        held = flags["held_out"]
        per["missed_held_out"] = {
            g: [e.text for i, e in enumerate(rows) if e.group == g and not held[i]][:12] for g in (OFF_TOPIC, ABSENT)
        }
        per["flagged_answerable_held_out"] = [e.text for i, e in enumerate(rows) if e.group == ANSWERABLE and held[i]][
            :12
        ]
        if cost:
            per["cost"] = cost[name]
        if own is not None:
            per["calibration_own_section"] = msgspec.structs.asdict(own)
        if c is not None:
            per["calibration"] = msgspec.structs.asdict(c)
            per["flagged_answerable_calibrated"] = [
                e.text for i, e in enumerate(rows) if e.group == ANSWERABLE and flags["calibrated"][i]
            ][:12]
        out["sets"][name] = per
    return out


def _weights(w: Weights) -> dict[str, float]:
    return {
        "threshold": round(w.threshold, 4),
        "centrality": w.centrality,
        "coverage": w.coverage,
        "absent": w.absent,
        "named": w.named,
    }


def save(
    found: dict[str, list[Evidence]], path: str | Path, calibrations: dict[str, Calibration] | None = None
) -> None:
    """The evidence as JSON lines, so a fit can be re-run without searching again (`--evidence`); each set's
    calibration as a line of its own (`{"set", "calibration"}`)."""
    with open(path, "w", encoding="utf-8") as f:
        for name, c in (calibrations or {}).items():
            f.write(json.dumps({"set": name, "calibration": msgspec.structs.asdict(c)}) + "\n")
        for name, rows in found.items():
            for e in rows:
                f.write(json.dumps({"set": name, **e.as_dict()}, ensure_ascii=False) + "\n")


def load(path: str | Path) -> tuple[dict[str, list[Evidence]], dict[str, Calibration]]:
    out: dict[str, list[Evidence]] = {}
    calibrations: dict[str, Calibration] = {}
    for row in _rows(Path(path)):
        name = row.pop("set")
        if "calibration" in row:
            calibrations[name] = msgspec.convert(row["calibration"], Calibration)
        else:
            out.setdefault(name, []).append(Evidence.from_dict(row))
    return out, calibrations
