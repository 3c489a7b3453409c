"""`assist classifier train|cv|eval|promote|rollback|versions` and `assist eval routing`."""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from assist.aws.clients import client
from assist.classify.build import build_cascade
from assist.classify.model import ClassifierModel
from assist.classify.registry import Registry, registry_root
from assist.commands import HELP
from assist.commands.common import emit, group, report, settings
from assist.embed import build_embedder
from assist.embed.base import check_same
from assist.errors import AssistError
from assist.offline.classify.baseline import plain_lr
from assist.offline.classify.compare import compare
from assist.offline.classify.data import convert_clinc, read_examples
from assist.offline.classify.evaluate import eval_classifier, eval_routing
from assist.offline.classify.gate import Targets
from assist.offline.classify.promote import promote
from assist.offline.classify.sources import LABEL_WEIGHT, USER_LABEL_WEIGHT, read_sources
from assist.offline.classify.train import DEFAULT_C, cross_validate, train

if TYPE_CHECKING:
    from assist.settings import Settings


# 120 lines: the `assist classifier` subcommands' argparse declarations, flat, one after another
def register(sub: argparse._SubParsersAction) -> None:
    clf = sub.add_parser(
        "classifier",
        help=HELP["classifier"],
    ).add_subparsers(dest="classifier_cmd", required=True)
    tr = clf.add_parser(
        "train", help="train on {text,label} rows, routing rows or exported labels; prints the metrics as JSON"
    )
    tr.add_argument(
        "--data",
        action="append",
        required=True,
        help="JSONL file, or a directory or s3:// prefix of *.jsonl such as the label export's (repeat for several)",
    )
    tr.add_argument("--out", required=True, help="where to write the model artifact (JSON)")
    tr.add_argument("--holdout", help="JSONL scored by the trained artifact, never trained on")
    tr.add_argument(
        "--guard-data",
        action="append",
        help="out-of-scope messages (JSONL, labels ignored): they never become a class, they only set the novelty "
        "guard's threshold (ADR 0041; repeat for several)",
    )
    tr.add_argument(
        "--label-weight", type=float, help="weight of an exported label record; a seed row weighs 1 (default 0.5)"
    )
    tr.add_argument(
        "--include-visitors",
        action="store_true",
        help="train on widget visitors' exported turns too (records with a site_key); left out by default: "
        "anyone can script a public page's questions (ADR 0093)",
    )
    tr.add_argument(
        "--user-label-weight",
        type=float,
        help="weight of an exported record whose type a person gave through feedback (default 1.0, a seed row's)",
    )
    tr.add_argument("--c", type=float, help="inverse L2 strength of the logistic regression (default 10)")
    tr.add_argument("--threshold", type=float, help="decision threshold (default CLASSIFIER_CONFIDENCE_THRESHOLD)")
    tr.add_argument("--folds", type=int, default=5, help="cross-validation folds for calibration (default 5)")
    tr.add_argument(
        "--target-selective",
        type=float,
        help="with --guard-data and --target-abstain: choose the probability and guard thresholds together by "
        "cross-validation, for the highest coverage at this selective accuracy (ADR 0056)",
    )
    tr.add_argument("--target-abstain", type=float, help="... and this share of the guard rows abstained on")
    tr.add_argument(
        "--far-share",
        type=float,
        help="with the targets: set the margin on this share of the training rows least like the others (their "
        "nearest other training row furthest), held out, instead of on all of them (ADR 0085)",
    )
    tr.set_defaults(func=run_train)
    cv = clf.add_parser(
        "cv", help="cross-validation of training without a held-out set: message-grouped and topic-clustered folds"
    )
    cv.add_argument("--data", action="append", required=True, help="as for train (repeat for several)")
    cv.add_argument("--c", type=float, help="inverse L2 strength of the logistic regression (default 10)")
    cv.add_argument("--topics", type=int, default=30, help="k-means clusters of the topic-clustered CV (default 30)")
    cv.add_argument("--seeds", type=int, default=3, help="clusterings averaged (default 3)")
    cv.add_argument(
        "--cluster-rows",
        type=int,
        help="fit the clusters on the first N rows and report those rows too (compares two versions of a seed)",
    )
    cv.add_argument("--json", action="store_true", help="one JSON object on stdout")
    cv.set_defaults(func=run_cv)
    bl = clf.add_parser(
        "baseline",
        help="plain logistic regression on the embeddings, threshold chosen by the gate's cross-validation (ADR 0056)",
    )
    bl.add_argument("--data", action="append", required=True, help="training JSONL (repeat for several)")
    bl.add_argument("--guard-data", action="append", required=True, help="out-of-scope JSONL (labels ignored)")
    bl.add_argument("--eval", action="append", required=True, help="JSONL scored (repeat: e.g. val and oos_val)")
    bl.add_argument("--target-selective", type=float, required=True, help="selective accuracy to meet")
    bl.add_argument("--target-abstain", type=float, required=True, help="share of guard rows to abstain on")
    bl.add_argument("--c", type=float, default=1.0, help="inverse L2 strength (default 1)")
    bl.add_argument("--json", action="store_true", help="one JSON object on stdout")
    bl.set_defaults(func=run_baseline)
    cm = clf.add_parser(
        "compare",
        help="a seed or model change before/after: routing holdout and topic-clustered CV; exit 1 if either drops",
    )
    cm.add_argument("--before", default="main", help="git revision whose seed and model are 'before' (default main)")
    cm.add_argument("--seed", default="data/routing/seed.jsonl", help="the seed, at the revision and as it is now")
    cm.add_argument("--model", default="data/models/routing-classifier.json", help="the artifact, likewise")
    cm.add_argument("--holdout", default="data/routing/holdout.jsonl", help="report-only held-out rows")
    cm.add_argument("--tolerance", type=float, default=0.0, help="a drop up to this passes (default 0)")
    cm.add_argument("--json", action="store_true", help="one JSON object on stdout")
    cm.set_defaults(func=run_compare)
    ev = clf.add_parser("eval", help="accuracy, coverage and abstention of a model on labelled rows")
    ev.add_argument("--model", required=True, help="model artifact: a path or s3://bucket/key")
    ev.add_argument(
        "--data",
        action="append",
        required=True,
        help="JSONL rows; labels outside the model's classes (such as `oos`) should abstain (repeat for several)",
    )
    ev.add_argument("--threshold", type=float, help="override the model's threshold")
    ev.add_argument("--json", action="store_true", help="one JSON object on stdout")
    ev.set_defaults(func=run_classifier_eval)
    cc = clf.add_parser(
        "convert-clinc", help="CLINC150's JSON ({split: [[text, intent], ...]}) as one {text,label} JSONL per split"
    )
    cc.add_argument("file", help="the CLINC150 JSON file (e.g. data_full.json)")
    cc.add_argument("--out", required=True, help="directory to write <split>.jsonl into")
    cc.set_defaults(func=run_convert_clinc)
    registry_help = (
        "registry root: s3://bucket/prefix or a directory (default: the root of CLASSIFIER_MODEL_PATH=<root>/current)"
    )
    pr = clf.add_parser(
        "promote", help="store a model in the registry; it becomes current only if it passes the held-out gate"
    )
    pr.add_argument("--model", required=True, help="the candidate artifact: a path or s3://bucket/key")
    pr.add_argument("--holdout", required=True, help="the fixed held-out JSONL both models are scored on")
    pr.add_argument("--registry", help=registry_help)
    pr.add_argument("--json", action="store_true", help="one JSON object on stdout")
    pr.set_defaults(func=run_promote)
    rb = clf.add_parser("rollback", help="point the registry's current model back at the one before it")
    rb.add_argument("--to", help="an earlier current version to return to (default: the one just before)")
    rb.add_argument("--registry", help=registry_help)
    rb.add_argument("--json", action="store_true", help="one JSON object on stdout")
    rb.set_defaults(func=run_rollback)
    vs = clf.add_parser("versions", help="the registry's models, the current pointer and each promotion decision")
    vs.add_argument("--registry", help=registry_help)
    vs.add_argument("--json", action="store_true", help="one JSON object on stdout")
    vs.set_defaults(func=run_versions)
    p = group(sub, "eval").add_parser(
        "routing", help="the cascade as deployed on routing rows (LLM layer only with OLLAMA_HOST)"
    )
    p.add_argument("--dataset", required=True, help="routing JSONL (data/routing/README.md)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(func=run_eval_routing)


def _s3(s: Settings, *paths: str | None) -> Any:
    """An S3 client when any of the paths is on S3."""
    if not any(p and p.startswith("s3://") for p in paths):
        return None

    return client("s3", s)


def run_train(args: argparse.Namespace) -> int:
    s = settings()
    s3 = _s3(s, args.holdout, *args.data)
    weight = LABEL_WEIGHT if args.label_weight is None else args.label_weight
    user_weight = USER_LABEL_WEIGHT if args.user_label_weight is None else args.user_label_weight
    examples, sources = read_sources(args.data, s3, weight, user_weight, visitors=args.include_visitors)
    holdout = read_sources([args.holdout], s3)[0] if args.holdout else None
    guard = read_sources(args.guard_data, s3)[0] if args.guard_data else None
    targets = None
    if (args.target_selective is None) != (args.target_abstain is None) or (args.target_selective and not guard):
        raise AssistError("--target-selective and --target-abstain go together, with --guard-data")
    if args.target_selective is not None:
        targets = Targets(args.target_selective, args.target_abstain)
    model, metrics = train(
        examples,
        build_embedder(s),
        c=args.c or DEFAULT_C,
        threshold=args.threshold if args.threshold is not None else s.classifier.confidence_threshold,
        folds=args.folds,
        holdout=holdout,
        sources=sources,
        guard=guard,
        targets=targets,
        far_share=args.far_share,
    )
    model.save(args.out)
    emit(
        {
            "out": args.out,
            "version": model.version,
            "classes": list(model.classes),
            "heads": list(model.heads),
            "rows": len(examples),
            "temperature": model.temperature,
            "threshold": model.threshold,
            "guard_threshold": model.guard_threshold,
            "training": msgspec.to_builtins(model.artifact.training),
            **metrics,
        }
    )
    return 0


def run_cv(args: argparse.Namespace) -> int:
    s = settings()
    examples, _ = read_sources(args.data, _s3(s, *args.data))
    result = cross_validate(
        examples,
        build_embedder(s),
        c=args.c or DEFAULT_C,
        threshold=s.classifier.confidence_threshold,
        topics=args.topics,
        seeds=args.seeds,
        cluster_rows=args.cluster_rows,
    )
    report(result, args.json)
    return 0


def run_baseline(args: argparse.Namespace) -> int:
    s = settings()
    result = plain_lr(
        [e for path in args.data for e in read_examples(path)],
        [e for path in args.guard_data for e in read_examples(path)],
        [e for path in args.eval for e in read_examples(path)],
        build_embedder(s),
        Targets(args.target_selective, args.target_abstain),
        c=args.c,
    )
    report(result, args.json)
    return 0


def run_compare(args: argparse.Namespace) -> int:
    s = settings(logs={"level": "WARNING"})
    with tempfile.TemporaryDirectory(prefix="assist-compare-") as tmp:
        old: list[str] = []
        for path in (args.seed, args.model):
            shown = subprocess.run(["git", "show", f"{args.before}:{path}"], capture_output=True)
            if shown.returncode:
                raise AssistError(f"git show {args.before}:{path}: {shown.stderr.decode().strip()}")
            old.append(str(Path(tmp) / Path(path).name))
            Path(old[-1]).write_bytes(shown.stdout)
        result = compare(  # the seed read as `classifier train` and `cv` read it (one revision per exported turn)
            (read_sources([old[0]])[0], old[1]),
            (read_sources([args.seed])[0], args.model),
            read_examples(args.holdout),
            s,
            build_embedder(s),
            args.tolerance,
        )
    result["before"]["revision"] = args.before
    if args.json:
        report(result, True)
    else:
        b, a = result["before"], result["after"]
        print(f"{'':<36}{'before (' + args.before + ')':>18}{'after':>12}")
        for section, name in (
            ("holdout", "accuracy"),
            ("cv", "topic_clustered_accuracy"),
            ("cv", "message_grouped_accuracy"),
        ):
            print(f"{section + ' ' + name:<36}{b[section][name]:>18}{a[section][name]:>12}")
        fb, fa = b["holdout"]["by_layer"].get("fallback", {}), a["holdout"]["by_layer"].get("fallback", {})
        print(
            f"{'holdout fallback layer n / accuracy':<36}{str(fb.get('n')) + ' / ' + str(fb.get('accuracy')):>18}"
            f"{str(fa.get('n')) + ' / ' + str(fa.get('accuracy')):>12}"
        )
        print(
            f"CV on the {result['shared_rows']} rows both seeds start with;"
            f" seeds {b['seed_rows']} → {a['seed_rows']} rows"
        )
        print("\n".join(["DROPPED: " + d for d in result["drops"]]) or "no drop")
    return 1 if result["drops"] else 0


def run_classifier_eval(args: argparse.Namespace) -> int:
    s = settings()
    model = ClassifierModel.load(args.model, s3=_s3(s, args.model))
    embedder = build_embedder(s)
    check_same(model.embedder_id, model.embedder_dim, embedder, f"classifier model {args.model}")
    examples = [e for path in args.data for e in read_examples(path)]
    report(eval_classifier(model, embedder, examples, args.threshold), args.json)
    return 0


def run_convert_clinc(args: argparse.Namespace) -> int:
    emit(convert_clinc(args.file, args.out))
    return 0


def _registry(s: Settings, root: str | None, *paths: str) -> Registry:
    root = registry_root(root, s)
    return Registry(root, _s3(s, root, *paths))


def run_promote(args: argparse.Namespace) -> int:
    s = settings()
    registry = _registry(s, args.registry, args.model, args.holdout)
    model = ClassifierModel.load(args.model, s3=registry.s3)
    holdout = read_sources([args.holdout], registry.s3)[0]
    decision = promote(registry, model, holdout, build_embedder(s), args.holdout)
    report(decision, args.json)
    return 0 if decision["promoted"] else 1  # a refused candidate is an outcome a pipeline must see


def run_rollback(args: argparse.Namespace) -> int:
    registry = _registry(settings(), args.registry)
    report({"registry": registry.root, **asdict(registry.rollback(args.to))}, args.json)
    return 0


def run_versions(args: argparse.Namespace) -> int:
    report(_registry(settings(), args.registry).describe(), args.json)
    return 0


def run_eval_routing(args: argparse.Namespace) -> int:
    s = settings()
    path = s.classifier.model_path
    cascade = build_cascade(s, s3=_s3(s, path))
    result = eval_routing(cascade, read_examples(args.dataset))
    result["layers_on"] = {"embedding": path, "llm": s.ollama.classifier_model if s.ollama.host_explicit else None}
    report(result, args.json)
    return 0
