"""What `assist eval retrieval`, `uncertain`, `everyday`, `scoped-verdict` and `docs-corpus` run (their arguments:
`commands/retrieval.py`)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from assist.aws.clients import index_s3
from assist.commands.common import report, settings
from assist.embed import build_embedder
from assist.errors import AssistError
from assist.offline.retrieve import evaluate_everyday, evaluate_scoped
from assist.offline.retrieve.beir import docs_corpus
from assist.offline.retrieve.evaluate import METRICS, evaluate
from assist.offline.retrieve.evaluate_verdict import DataSet, gather, load, save
from assist.offline.retrieve.evaluate_verdict import report as verdict_report
from assist.offline.retrieve.verdict_fit import Targets
from assist.retrieve.verdict import Weights


def run_eval(args: argparse.Namespace) -> int:
    s = settings(logs={"level": "WARNING"})  # not a log line per query
    s3 = index_s3(s.with_(index={"uri": args.index_dir}))
    vs = {"auto": "rrf" if args.strategy == "adaptive" else None, "none": None}.get(args.vs, args.vs)
    result = evaluate(
        args.corpus,
        args.queries,
        args.qrels,
        args.strategy,
        args.index_dir,
        s,
        build_embedder(s),
        s3=s3,
        baseline=vs,
        per_query=args.per_query,
    )
    if args.json or "baseline" not in result:
        report(result, args.json)
        return 0
    base = result["baseline"]
    print(f"{result['queries']} queries over {result['docs']} documents")
    print(f"{'':<12}{args.strategy:>10}{vs:>10}{'delta':>10}")
    for key in (*METRICS, "p50_ms", "p95_ms"):
        delta = result["delta"].get(key, "")
        print(f"{key:<12}{result[key]:>10}{base[key]:>10}{delta:>10}")
    print(f"p50 ratio {args.strategy}/{vs}: ×{result['p50_ratio']}")
    return 0


def _sets(specs: list[list[str]]) -> list[DataSet]:
    for spec in specs:
        if len(spec) < 4:
            raise AssistError(f"--set {' '.join(spec)}: expected NAME CORPUS QRELS QUERIES [QUERIES ...]")
    return [DataSet(spec[0], spec[1], spec[2], tuple(spec[3:])) for spec in specs]


def run_everyday(args: argparse.Namespace) -> int:
    s = settings(logs={"level": "WARNING"})
    result = evaluate_everyday.run(
        _sets(args.set), args.everyday, args.recall, args.index_root, s, build_embedder(s), args.limit
    )
    if args.json:
        report(result, True)
        return 0
    for name, per in result["sets"].items():
        print(f"\n{name}: threshold {per['threshold']} (calibrated: {per['calibrated']}), {per['seconds']} s")
        print(f"{'':<34}{'baseline':>10}{'first turn':>12}")
        for engine in evaluate_everyday.ENGINES:
            got = per[engine]
            for kind, what in (("everyday", "flagged"), ("answerable", "flagged")):
                row = got[kind]
                label = f"{engine} {kind} {what} (n={row['n']})"
                print(f"{label:<34}{row['flagged_baseline']:>10}{row['flagged_first_turn']:>12}")
            rec = got["recall"]
            label = f"{engine} recall CONVERSATIONAL (n={rec['n']})"
            print(f"{label:<34}{rec['conversational_baseline']:>10}{rec['conversational_first_turn']:>12}")
            print(f"  everyday by language {got['everyday']['by_language']}; missed: {got['everyday']['missed']}")
            print(f"  answerable flagged: {got['answerable']['flagged']}")
    return 0


def run_scoped(args: argparse.Namespace) -> int:
    s = settings(logs={"level": "WARNING"})
    offtopic = args.offtopic or ["data/uncertain/offtopic.jsonl"]
    result = evaluate_scoped.run(_sets(args.set), offtopic, args.scopes, args.index_root, s, build_embedder(s))
    if args.json:
        report(result, True)
        return 0
    print(scoped_text(result))
    return 0


def scoped_text(result: dict[str, Any]) -> str:
    """`assist eval scoped-verdict`'s report as a person reads it: per set and scope, each threshold's figures."""
    lines = [f"{result['offtopic']} off-topic questions; {result['k']} scopes per set"]
    for name, per in result["sets"].items():
        each = ", ".join(f"{k} {f['calibration_s']}" for k, f in per["scopes"].items())
        lines += [
            f"\n{name}: documents per scope {per['documents']}; calibrated in "
            f"{per['corpus_calibration_s']} s (corpus), {each} s (scopes)",
            f"{'scope':<8}{'sections':>9}{'threshold':>16}{'answerable flagged':>22}{'off-topic caught':>20}",
        ]
        for scope, f in per["scopes"].items():
            for which in ("scope", "corpus"):
                g = f[which]
                flagged, caught = (
                    f"{g['answerable_flagged']}/{f['answerable']}",
                    f"{g['offtopic_caught']}/{f['offtopic']}",
                )
                lines.append(f"{scope:<8}{f['sections']:>9}{which:>8} {g['threshold']:<7}{flagged:>22}{caught:>20}")
        a = per["all"]
        for which in ("scope", "corpus"):
            got = a[which]
            lines.append(
                f"every scope, the {which}'s threshold: answerable flagged {got['answerable_flagged']} "
                f"(n={a['answerable']}), off-topic caught {got['offtopic_caught']} (n={a['offtopic']})"
            )
    return "\n".join(lines)


def run_uncertain(args: argparse.Namespace) -> int:
    s = settings(logs={"level": "WARNING"})
    targets = Targets(margin=args.margin)
    if args.from_evidence:
        (found, calibrations), cost = load(args.from_evidence), None
    else:
        if not args.set or not args.index_root:
            raise AssistError("--set and --index-root are needed (or --from-evidence FILE)")
        sets = _sets(args.set)
        for name, _ in args.absent:
            if name not in {ds.name for ds in sets}:
                raise AssistError(f"--absent {name}: no --set is named {name!r}")
        sets = [replace(ds, absent=tuple(f for n, f in args.absent if n == ds.name)) for ds in sets]

        found, cost, calibrations = gather(sets, args.offtopic, args.index_root, s, build_embedder(s))
        if args.evidence:
            save(found, args.evidence, calibrations)
    result = verdict_report(found, Weights.from_settings(s), targets, cost, calibrations)
    if args.json:
        report(result, True)
        return 0
    print_uncertain(result)
    return 0


def print_uncertain(result: dict) -> None:
    def weights(w: dict) -> str:
        return (
            f"similarity + {w['centrality']} × centrality + {w['coverage']} × coverage − {w['absent']} × absent"
            f" − {w['named']} × named < {w['threshold']}"
        )

    t = result["targets"]
    print(f"targets: answerable flagged ≤ {t['answerable']}, off-topic ≥ {t['off_topic']}, absent ≥ {t['absent']}")
    print(f"configured: {weights(result['configured'])}")
    print(f"fitted on every set: {weights(result['fitted'])}")
    for name, w in result["held_out_weights"].items():
        print(f"fitted without {name}: {weights(w)}")
    print(
        "\nshare flagged uncertain: configured | fitted on every set | held out (fitted without the set) | "
        "calibrated on the set's own documents (ADR 0096)"
    )
    print(
        f"{'':<12}{'kind':<12}{'n':>6}{'configured':>12}{'fitted':>10}{'held out':>10}{'calibrated':>12}"
        f"{'(own sec.)':>12}{'goal':>8}{'weak conf.':>12}"
    )
    goals = {"answerable": f"≤{t['answerable']}", "off-topic": f"≥{t['off_topic']}", "absent": f"≥{t['absent']}"}
    for name, per in result["sets"].items():
        for kind in ("answerable", "off-topic", "absent"):
            if kind in per:
                r = per[kind]
                cal, own = (f"{r[k]:.3f}" if k in r else "—" for k in ("calibrated", "calibrated_own_section"))
                print(
                    f"{name:<12}{kind:<12}{r['n']:>6}{r['configured']:>12.3f}{r['fitted']:>10.3f}"
                    f"{r['held_out']:>10.3f}{cal:>12}{own:>12}{goals[kind]:>8}{r['weak_confidence']:>12.3f}"
                )
    for name, per in result["sets"].items():
        print(f"\n{name}:")
        if "cost" in per:
            c = per["cost"]
            print(
                f"  cost: verdict p50 {c['verdict_p50_ms']} ms, p95 {c['verdict_p95_ms']} ms beside search p50"
                f" {c['search_p50_ms']} ms; centroid read once {c['centroid_ms']} ms ({c['chunks']} chunks)"
            )
        if "calibration" in per:
            c = per["calibration"]
            bound = f"false-flag rate expected {c['expected_rate']}, ≤ {c['bound']} with probability {c['confidence']}"
            if c.get("conflict"):
                bound = f"the probes' own cut {c['probe_threshold']} had {bound}"
            print(
                f"  calibration: threshold {c['threshold']} from {c['probes']} probes over {c['sections']} sections"
                f" ({c['probes_flagged']} flagged; {bound}); off-topic bank caught {c['offtopic_caught']}"
                f" (en {c['offtopic_caught_en']}, es {c['offtopic_caught_es']}); {c['seconds']} s"
                + ("" if c["calibrated"] else f"; not calibrated: {c['why']}")
                + (f"; conflict: {c['why']}" if c.get("conflict") else "")
            )
            if "calibration_own_section" in per:
                print(f"  with own sections searchable: threshold {per['calibration_own_section']['threshold']}")
            print(f"  flagged answerable (calibrated): {per['flagged_answerable_calibrated'][:6]}")
        print(f"  missed off-topic (held out): {per['missed_held_out']['off-topic'][:6]}")
        print(f"  missed absent (held out): {per['missed_held_out']['absent'][:6]}")
        print(f"  flagged answerable (held out): {per['flagged_answerable_held_out'][:6]}")


def run_docs_corpus(args: argparse.Namespace) -> int:
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in docs_corpus(args.path))
    if args.out == "-":
        sys.stdout.write(text)
    else:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0
