"""`assist classifier train|eval`, `assist eval routing` and `assist bench classify`."""

from __future__ import annotations

import argparse

from assist.commands.common import emit, report, settings


def register(sub: argparse._SubParsersAction) -> None:
    clf = sub.add_parser("classifier", help="train and evaluate the embedding classifier").add_subparsers(
        dest="classifier_cmd", required=True
    )
    tr = clf.add_parser("train", help="train on {text,label} or routing rows; prints the metrics as JSON")
    tr.add_argument("--data", action="append", required=True, help="JSONL file (repeat for several)")
    tr.add_argument("--out", required=True, help="where to write the model artifact (JSON)")
    tr.add_argument("--holdout", help="JSONL scored by the trained artifact, never trained on")
    tr.add_argument("--c", type=float, help="inverse L2 strength of the logistic regression (default 10)")
    tr.add_argument("--threshold", type=float, help="decision threshold (default CLASSIFIER_CONFIDENCE_THRESHOLD)")
    tr.add_argument("--folds", type=int, default=5, help="cross-validation folds for calibration (default 5)")
    tr.set_defaults(func=run_train)
    ev = clf.add_parser("eval", help="accuracy, coverage and abstention of a model on labelled rows")
    ev.add_argument("--model", required=True, help="model artifact: a path or s3://bucket/key")
    ev.add_argument("--data", required=True, help="JSONL rows; labels outside the model's classes should abstain")
    ev.add_argument("--threshold", type=float, help="override the model's threshold")
    ev.add_argument("--json", action="store_true", help="one JSON object on stdout")
    ev.set_defaults(func=run_classifier_eval)


def register_eval(group: argparse._SubParsersAction) -> None:
    p = group.add_parser("routing", help="the cascade as deployed on routing rows (LLM layer only with OLLAMA_HOST)")
    p.add_argument("--dataset", required=True, help="routing JSONL (data/routing/README.md)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(func=run_eval_routing)


def register_bench(group: argparse._SubParsersAction) -> None:
    p = group.add_parser("classify", help="per-layer warm latency and cold start, beside their budgets")
    p.add_argument("--dataset", default="data/routing/holdout.jsonl", help="messages to time (labels unused)")
    p.add_argument("--repeats", type=int, default=200, help="rules-layer calls")
    p.add_argument("--cold-runs", type=int, default=3, help="fresh processes for the cold start")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(func=run_bench)


def _model_client(path: str, s):
    if not path.startswith("s3://"):
        return None
    from assist.aws.clients import client

    return client("s3", s)


def run_train(args: argparse.Namespace) -> int:
    from assist.classify.data import file_digest, read_examples
    from assist.classify.train import DEFAULT_C, train
    from assist.embed import build_embedder

    s = settings()
    examples, sources = [], []
    for path in args.data:
        rows = read_examples(path)
        examples += rows
        sources.append({"path": path, "rows": len(rows), "sha256": file_digest(path)})
    holdout = read_examples(args.holdout) if args.holdout else None
    model, metrics = train(
        examples,
        build_embedder(s),
        c=args.c or DEFAULT_C,
        threshold=args.threshold if args.threshold is not None else s.classifier_confidence_threshold,
        folds=args.folds,
        holdout=holdout,
        sources=sources,
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
            "training": model.doc["training"],
            **metrics,
        }
    )
    return 0


def run_classifier_eval(args: argparse.Namespace) -> int:
    from assist.classify.data import read_examples
    from assist.classify.evaluate import eval_classifier
    from assist.classify.model import ClassifierModel
    from assist.embed import build_embedder
    from assist.embed.base import check_same

    s = settings()
    model = ClassifierModel.load(args.model, s3=_model_client(args.model, s))
    embedder = build_embedder(s)
    check_same(model.embedder_id, model.embedder_dim, embedder, f"classifier model {args.model}")
    report(eval_classifier(model, embedder, read_examples(args.data), args.threshold), args.json)
    return 0


def run_eval_routing(args: argparse.Namespace) -> int:
    from assist.ask.build import build_cascade
    from assist.classify.data import read_examples
    from assist.classify.evaluate import eval_routing

    s = settings()
    path = s.classifier_model_path
    cascade = build_cascade(s, s3=_model_client(path, s) if path else None)
    result = eval_routing(cascade, read_examples(args.dataset))
    result["layers_on"] = {"embedding": path, "llm": s.classifier_llm_model if s.ollama_host_explicit else None}
    report(result, args.json)
    return 0


def run_bench(args: argparse.Namespace) -> int:
    from assist.classify import bench
    from assist.classify.data import read_examples

    s = settings(log_level="WARNING")  # the figures are decisions, not log I/O
    result = bench.warm(s, read_examples(args.dataset), repeats=args.repeats)
    result["cold_start"] = bench.cold(runs=args.cold_runs)
    result["budgets"] = bench.BUDGETS
    result["ratios"] = bench.ratios(result)
    report(result, args.json)
    return 0
