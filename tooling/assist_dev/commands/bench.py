"""`assist bench …`: every benchmark, measured by its module in assist_dev/bench/ and printed the one
way (assist_dev/bench/figures.py): `--json` gives the module's JSON object; without it, a table of
the same figures beside their baseline or budget. The layouts live here with the commands."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assist.commands.common import group, settings
from assist.deadline import PERSIST_RESERVE_S

if TYPE_CHECKING:
    from assist_dev.bench.figures import Table

JSON_HELP = "one JSON object on stdout"


def register(sub: argparse._SubParsersAction) -> None:
    b = group(sub, "bench")

    p = b.add_parser("classify", help="per-layer warm latency and cold start, beside their budgets")
    p.add_argument("--dataset", default="data/routing/holdout.jsonl", help="messages to time (labels unused)")
    p.add_argument("--repeats", type=int, default=200, help="rules-layer calls")
    p.add_argument("--cold-runs", type=int, default=3, help="fresh processes for the cold start")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=run_classify)

    p = b.add_parser(
        "cost", help="serverless $ per 1,000 questions of each type, x86 beside arm64, and the model host's"
    )
    p.add_argument("--rounds", type=int, default=5, help="timed questions per type (median; default 5)")
    p.add_argument("--docs", default="docs", help="folder indexed for the retrieval stages (default: docs)")
    p.add_argument("--price", action="append", default=[], metavar="NAME=USD", help="override a price (see --json)")
    p.add_argument("--model-s", action="append", default=[], metavar="SLOT=S", help="generation seconds per slot")
    p.add_argument("--model-host-slots", type=int, default=4, help="generations the model host serves at once")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=run_cost)

    p = b.add_parser("retrieval", help="fts, vector, LanceDB rrf and adaptive latency on N generated chunks")
    p.add_argument("--rows", type=int, default=10_000, help="chunks in the generated corpus (default 10,000)")
    p.add_argument("--docs", default="docs", help="folder whose vocabulary the generated texts use")
    p.add_argument(
        "--s3-direct-queries", type=int, help="searches per strategy on S3 directly (50; 10 over 20k rows; 0: none)"
    )
    p.add_argument(
        "--scope-fraction",
        type=float,
        default=0.0,
        metavar="F",
        help="rows in scopes of share F each (0.1: ten); also time the searches inside one of them (ADR 0121)",
    )
    p.add_argument(
        "--scopes-interleaved",
        action="store_true",
        help="each row in the next scope, not a scope's rows together as a build writes them (the worst case)",
    )
    p.add_argument("--local-only", action="store_true", help="no S3 figures: the local index only")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=run_retrieval)

    p = b.add_parser("answer", help="our overhead per type, time to the route event and to the first token")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--token-delay-ms", type=float, default=10.0)
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=run_answer)

    p = b.add_parser(
        "ollama", help="answers queueing on a model host of N parallel slots: answered / fell back / p50 / p95"
    )
    p.add_argument("--parallel", type=int, default=1, help="requests the host serves at once per model (default 1)")
    p.add_argument("--concurrency", type=int, default=8, help="the highest number of answers at once (default 8)")
    p.add_argument("--token-rate", type=float, help="generated tokens per second (default 40)")
    p.add_argument("--reply-tokens", type=int, help="tokens per answer (default 250)")
    p.add_argument("--deadline", type=float, help="seconds an answer may take (default 16: the Answer task's)")
    p.add_argument("--short", action="store_true", help="a fast host and a short deadline: the same shape in seconds")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=run_ollama)

    p = b.add_parser("tokens", help="the prompt budget's token counts against the model's (qwen3) and the double's")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=run_tokens)

    p = b.add_parser("export", help="label export over N history entries: time and read units vs a full scan")
    p.add_argument("--entries", type=int, default=100_000)
    p.add_argument("--sessions", type=int, default=20_000)
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=run_export)

    p = b.add_parser("load", help="concurrent sessions against the API, then a lost/duplicated audit")
    p.add_argument("--url", help="a running stack (default: start one on 127.0.0.1)")
    p.add_argument("--sessions", type=int, default=50)
    p.add_argument("--turns", type=int, default=20)
    p.add_argument("--workers", type=int, default=16, help="sessions in flight at once")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=run_load)

    p = b.add_parser(
        "widget", help="widget visitors asking at once through several app processes on one store, then an audit"
    )
    p.add_argument("--visitors", type=int, default=20)
    p.add_argument("--questions", type=int, default=50, help="questions per visitor, all visitors at once")
    p.add_argument("--limit", type=int, default=20, help="questions per visitor per 10 minutes (the site key's)")
    p.add_argument("--processes", type=int, default=4, help="app processes sharing the store")
    p.add_argument("--store", action="append", choices=("dynamodb", "file"), help="default: both, one after the other")
    p.add_argument("--workers", type=int, default=48, help="requests in flight at once")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=run_widget)

    p = b.add_parser(
        "cold-start", help="per function, in fresh processes: import and first-call time against budgets, image size"
    )
    p.add_argument("--runs", type=int, default=5, help="fresh processes per function (median; default 5)")
    p.add_argument("--docs", default="docs", help="folder indexed for the retrieve function (default: docs)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=run_cold_start)

    p = b.add_parser("deferred", help="what each deferred import of the runtime saves: its module's import time")
    p.add_argument("--runs", type=int, default=3, help="fresh processes per module (median; default 3)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=run_deferred)

    p = b.add_parser("sessions", help="the session store's calls per turn: the embedded file beside DynamoDB (moto)")
    p.add_argument("--turns", type=int, default=200, help="turns of one session per store (median; default 200)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=run_sessions)

    p = b.add_parser(
        "statemachine", help="the local Lambda endpoint's per-hop cost and a state machine ask against in-process"
    )
    p.add_argument("--runs", type=int, default=20, help="timed repetitions (median; default 20)")
    p.add_argument("--docs", default="docs", help="folder to index (default: docs)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=run_statemachine)

    p = b.add_parser(
        "corpus", help="corpus manifest size (docs/, N generated documents) and added latency per question"
    )
    p.add_argument("--rounds", type=int, default=3, help="passes over the questions (default 3)")
    p.add_argument("--documents", type=int, default=1000, help="documents in the generated folder (default 1,000)")
    p.add_argument("--index-dir", help="where the docs/ index is built (default: a throw-away directory)")
    p.set_defaults(func=run_corpus)

    p = b.add_parser("report", help="insights report over N history entries: time and read units vs a full scan")
    p.add_argument("--entries", type=int, default=100_000)
    p.add_argument("--sessions", type=int, default=20_000)
    p.add_argument("--days", type=int, default=7, help="the report's window (default 7)")
    p.add_argument("--span-days", type=int, default=30, help="the seeded entries cover this many days (default 30)")
    p.set_defaults(func=run_report)

    p = b.add_parser("mcp", help="p50/p95 of the MCP tools search_docs and ask over streamable HTTP, beside /v1/ask")
    p.add_argument("--rounds", type=int, default=20, help="timed calls per measure (default 20)")
    p.add_argument("--token-delay-ms", type=float, default=0.0, help="the Ollama test double's delay per token")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=run_mcp)

    p = b.add_parser("embed", help="CPU ms per chunk and chunks/s per core, fp32 beside int8, against the FLOP limit")
    p.add_argument("--chunks", type=int, default=256, help="generated passages of about 240 tokens (default 256)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=run_embed)

    p = b.add_parser("index", help="the sharded build's wall time at 1, 2, … workers: chunks/s and speed-up")
    p.add_argument("--chunks", type=int, default=2000, help="generated chunks of about 240 tokens (default 2,000)")
    p.add_argument("--workers", default="1,2,4", help="worker counts, comma-separated (default 1,2,4)")
    p.add_argument("--shard-chunks", type=int, help="chunks per shard (default: INDEX_SHARD_CHUNKS)")
    p.add_argument("--commit-rows", type=int, default=0, help="also time the commit step alone on N generated rows")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=run_index)

    p = b.add_parser("crawl", help="a generated docs site on loopback: crawl pages/s, first and unchanged sync times")
    p.add_argument("--pages", type=int, default=300, help="pages in the generated site (default 300)")
    p.add_argument("--concurrency", type=int, help="requests in flight (default: CRAWL_CONCURRENCY)")
    p.add_argument("--delay", type=float, help="seconds each request slot waits (default: CRAWL_DELAY_S)")
    p.set_defaults(func=run_crawl)


def _show(result: dict[str, Any], args: argparse.Namespace, table: Any) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.figures import show

    show(result, args.json, table)
    return 0


def run_cost(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist.build.run import ingest
    from assist.embed import build_embedder
    from assist_dev.bench import cost

    s = settings(logs={"level": "WARNING"})
    ingest(Path(args.docs), s, build_embedder(s), progress=False)  # incremental: a no-op when current
    prices = cost.PRICES | _pairs(args.price, cost.PRICES, "--price")
    model_s = cost.MODEL_S | _pairs(args.model_s, cost.MODEL_S, "--model-s")
    return _show(cost.run(s, args.rounds, prices, model_s, args.model_host_slots), args, cost_table)


def _pairs(items: list[str], known: dict[str, float], flag: str) -> dict[str, float]:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist.errors import AssistError

    out = {}
    for item in items:
        name, _, value = item.partition("=")
        if name not in known:
            raise AssistError(f"{flag} {item!r}: name one of {', '.join(known)}")
        try:
            out[name] = float(value)
        except ValueError as exc:
            raise AssistError(f"{flag} {item!r}: the value must be a number") from exc
    return out


def cost_table(result: dict[str, Any]) -> Table:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.figures import Table

    columns = ("type", "tasks ms", "serverless x86 $", "arm64 $", "of it Lambda x86 $", "model host $", "host share")
    rows = [
        (
            t,
            " + ".join(f"{v:g}" for v in r["measured_ms"].values()),
            r["serverless_x86"],
            r["serverless_arm64"],
            r["lambda_x86"],
            r["model_host"],
            r["model_host_share_x86"],
        )
        for t, r in result["per_1000_questions_usd"].items()
    ]
    model = ", ".join(f"{slot} {s:g} s" for slot, s in result["model_s"].items())
    notes = [
        f"per 1,000 questions; tasks (classify + retrieve + answer without the model) measured here, median of "
        f"{result['rounds']}; model time assumed ({model}); memory from template.yaml",
    ]
    return Table(columns, rows, notes)


def run_classify(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist.offline.classify.data import read_examples
    from assist_dev.bench import classify as bench

    s = settings(logs={"level": "WARNING"})  # the figures are decisions, not log I/O
    result = bench.warm(s, read_examples(args.dataset), repeats=args.repeats)
    result["cold_start"] = bench.cold(runs=args.cold_runs)
    result["budgets"] = bench.BUDGETS
    result["ratios"] = bench.ratios(result)
    return _show(result, args, classify_table)


def classify_table(result: dict[str, Any]) -> Table:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.figures import Table, ratio

    budgets = result["budgets"]
    per_layer = {"rules": budgets["rules_p50_ms"], "embedding": budgets["embedding_p50_ms"]}
    rows: list[tuple[Any, ...]] = []
    notes = []
    for name, r in result["layers"].items():
        if "skipped" in r:
            notes.append(f"{name} layer skipped: {r['skipped']}")
            continue
        budget = per_layer.get(name)
        rows.append((name, r["n"], r["p50_ms"], r["p95_ms"], budget, ratio(r["p50_ms"], budget, 3)))
    for name, r in result["cascade_by_deciding_layer"].items():
        rows.append((f"cascade, decided by {name}", r["n"], r["p50_ms"], r["p95_ms"], None, None))
    seed = budgets["seed_regex_ms"]
    timed = {k: r["p50_ms"] for k, r in result["layers"].items() if "p50_ms" in r}
    notes.append(
        f"p50 against the seeds' regex budget ({seed} ms): "
        + ", ".join(f"{k} ×{ratio(v, seed, 3)}" for k, v in timed.items())
    )
    cold = result["cold_start"]
    cold_s = cold["median"]["in_process_s"]
    notes.append(
        f"cold start, median of {cold['runs']} fresh processes: {cold_s} s in process ({cold['median']['wall_s']} s "
        f"wall), budget {budgets['cold_start_s']} s, ×{ratio(cold_s, budgets['cold_start_s'], 3)}; "
        f"sklearn loaded: {cold['sklearn_loaded']}"
    )
    return Table(("layer", "n", "p50 ms", "p95 ms", "budget p50 ms", "× budget"), rows, notes)


def run_retrieval(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.retrieval import run

    if not 0 <= args.scope_fraction <= 1:
        raise SystemExit("assist bench retrieval: --scope-fraction is a share, 0 to 1")
    result = run(
        settings(logs={"level": "WARNING"}),
        args.rows,
        Path(args.docs),
        args.s3_direct_queries,
        args.scope_fraction,
        args.local_only,
        args.scopes_interleaved,
    )
    return _show(result, args, retrieval_table)


def retrieval_table(result: dict[str, Any]) -> Table:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.figures import Table, ratio
    from assist_dev.bench.retrieval import SCOPED, STRATEGIES

    places = {"local": "local", "s3": "s3 copy", "s3_direct": "s3 direct"}
    rows = [
        (f"{label} {name}", r[name]["p50_ms"], r[name]["p95_ms"], ratio(r[name]["p50_ms"], r["rrf"]["p50_ms"]))
        for where, label in places.items()
        if where in result
        for r in [result[where]]
        for name in (*STRATEGIES, *SCOPED)
        if name in r
    ]
    budget, local, emb = result["budget"], result["local"], result["query_embedding"]
    notes = [f"{result['rows']:,} chunks; vector index: {result['vector_index']}; build: local {local['build_s']} s"]
    if "adaptive_scoped" in local:
        notes.append(
            f"scoped ({result['scope_fraction']:.0%} of the rows in the scope asked, "
            f"{'interleaved' if result.get('scopes_interleaved') else 'together'}): adaptive p50 "
            f"×{local['adaptive_scoped']['ratio_to_unscoped']} unscoped, "
            f"fts ×{local['fts_scoped']['ratio_to_unscoped']}, "
            f"vector ×{local['vector_scoped']['ratio_to_unscoped']} (at most ×{budget['scoped_ratio_to_unscoped']})"
        )
    if "s3" in result:
        notes += _s3_notes(result)
    notes += [
        f"query embedding, not included above: p50 {emb['p50_ms']} ms, p95 {emb['p95_ms']} ms",
        f"budgets: local adaptive p50 {budget['adaptive_p50_ms']} ms "
        f"(×{ratio(local['adaptive']['p50_ms'], budget['adaptive_p50_ms'])}); "
        f"adaptive / rrf at most ×{budget['adaptive_ratio_to_rrf']}",
    ]
    return Table(("search", "p50 ms", "p95 ms", "× rrf p50"), rows, notes)


def _s3_notes(result: dict[str, Any]) -> list[str]:
    budget, local, s3 = result["budget"], result["local"], result["s3"]
    fetch = s3["fetch"]
    return [
        f"s3 build {s3['build_s']} s (of which upload {s3['upload_s']} s)",
        f"s3 copy (what the retrieve function reads): {fetch.get('mb')} MB fetched in {fetch.get('s')} s "
        f"({fetch.get('s_per_mb')} s/MB); first question after the publish {s3['first_question_ms']} ms (the copy "
        f"{s3['pointer_and_copy_ms']} ms, then the table opened and searched {s3['first_search_ms']} ms; "
        f"a local table's first search {local['first_search_ms']} ms); "
        f"adaptive p50 ×{s3['adaptive']['ratio_to_local']} local (at most ×{budget['s3_adaptive_ratio_to_local']})",
    ]


def run_answer(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.answer import run

    result = run(settings(logs={"level": "WARNING"}), rounds=args.rounds, token_delay_ms=args.token_delay_ms)
    return _show(result, args, answer_table)


def answer_table(result: dict[str, Any]) -> Table:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.figures import Table

    rows = [
        (t, r["n"], r["overhead_p50_ms"], r["overhead_p95_ms"], r["route_event_p50_ms"], r["first_token_p50_ms"])
        for t, r in result["by_type"].items()
    ]
    notes = [
        f"{result['requests']} requests, {result['reply_tokens']} tokens each at {result['token_delay_ms']} ms; "
        f"routed as intended: {result['routed_as_intended']:.1%}",
        "against the budgets: "
        + (", ".join(f"{k} ×{v}" for k, v in result["ratio_to_budget"].items()) or "(no budgeted type measured)"),
    ]
    columns = ("type", "n", "overhead p50 ms", "overhead p95 ms", "route event p50 ms", "first token p50 ms")
    return Table(columns, rows, notes)


def run_ollama(args: argparse.Namespace) -> int:
    from assist_dev.bench import ollama

    given = {"token_rate": args.token_rate, "reply_tokens": args.reply_tokens, "deadline_s": args.deadline}
    chosen = (ollama.SHORT if args.short else {}) | {k: v for k, v in given.items() if v is not None}
    result = ollama.run(
        settings(logs={"level": "WARNING"}), parallel=args.parallel, concurrency=args.concurrency, **chosen
    )
    return _show(result, args, ollama_table)


def ollama_table(result: dict[str, Any]) -> Table:
    from assist_dev.bench.figures import Table

    rows = [
        (r["concurrency"], r["answered"], r["fell_back"], r["p50_s"], r["p95_s"], r["max_active"])
        for r in result["levels"]
    ]
    notes = [
        f"host: {result['parallel']} slot(s) per model, {result['token_rate']:g} tokens/s, {result['reply_tokens']} "
        f"tokens an answer; one answer alone takes T = {result['answer_s']} s; deadline {result['deadline_s']:g} s",
        f"sizing rule: parallel × floor((deadline − {PERSIST_RESERVE_S:g} s) / T) = {result['useful_concurrency']} "
        "answers in time at once; past that they queue into their deadline and fall back (docs/operations.md)",
    ]
    return Table(("at once", "answered by model", "fell back", "p50 s", "p95 s", "busiest slots"), rows, notes)


def run_tokens(args: argparse.Namespace) -> int:
    from assist_dev.bench.tokens import run

    return _show(run(settings(logs={"level": "WARNING"})), args, tokens_table)


def tokens_table(result: dict[str, Any]) -> Table:
    from assist_dev.bench.figures import Table

    rows = [(k, r["qwen3"], r["double_rule"], r["minilm_x1.35"], r["chars_1.8"]) for k, r in result["kinds"].items()]
    notes = [f"counted by {result['tokenizer']}; the other columns are ratios to it (1 = the model's own count)"]
    notes += [
        f"a prompt of {p['chars']:,} characters: budget estimate {p['budget_estimate']}, qwen3 template "
        f"{p.get('qwen3_template', '-')} (×{p.get('estimate_over_qwen3', '-')}), the double's prompt_eval_count "
        f"{p['double_prompt_eval']} (×{p['estimate_over_double']})"
        for p in result["prompts"]
    ]
    return Table(("text", "qwen3 tokens", "double's rule", "MiniLM ×1.35", "chars / 1.8"), rows, notes)


def run_export(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.export import run

    return _show(
        run(settings(logs={"level": "WARNING"}), entries=args.entries, sessions=args.sessions), args, export_table
    )


def export_table(result: dict[str, Any]) -> Table:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.figures import Table

    first, later, scan = result["first_export"], result["incremental_export"], result["baseline_full_scan"]
    rows = [
        ("first export", first["seconds"], first["read_units"], first["records"], first["records_per_s"]),
        ("incremental export", later["seconds"], later["read_units"], later["records"], later["records_per_s"]),
        ("baseline: full scan", scan["seconds"], scan["read_units"], None, None),
    ]
    r = result["ratio_incremental_to_scan"]
    notes = [
        f"{result['entries']:,} entries in {result['sessions']:,} sessions (written in {result['load_s']} s); "
        f"{later['new_entries']:,} new before the incremental run",
        f"incremental / full scan: read units ×{r['read_units']}, seconds ×{r['seconds']}",
    ]
    return Table(("run", "seconds", "read units", "records", "records/s"), rows, notes)


def run_load(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.load import run

    if args.url and not args.url.startswith(("http://127.", "http://localhost", "http://[::1]")):
        print("assist: bench load sends traffic only to loopback addresses", flush=True)
        return 2
    result = run(args.url, args.sessions, args.turns, settings(logs={"level": "WARNING"}), workers=args.workers)
    return _show(result, args, load_table)


def load_table(result: dict[str, Any]) -> Table:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.figures import Table

    rows = [
        (
            f"{result['sessions']} sessions × {result['turns']} turns",
            result["requests"],
            result["errors"],
            result["lost"],
            result["duplicated"],
            result["rps"],
            result["p50_ms"],
            result["p95_ms"],
            result["p99_ms"],
        )
    ]
    notes = [f"{result['seconds']} s; errors by kind: {result['error_kinds'] or 'none'}"]
    if (cpu := result.get("container_cpu_ms_per_request")) is not None:
        notes.append(
            f"CPU ms per request: the answer container (its own process, no model) {cpu}, "
            f"the bench (clients, emulated store) {result['bench_cpu_ms_per_request']}"
        )
    columns = ("run", "requests", "errors", "lost", "duplicated", "rps", "p50 ms", "p95 ms", "p99 ms")
    return Table(columns, rows, notes)


def run_widget(args: argparse.Namespace) -> int:
    from assist_dev.bench import widget

    settings(logs={"level": "WARNING"})
    stores = tuple(args.store or ("dynamodb", "file"))
    result = widget.run(args.visitors, args.questions, args.limit, args.processes, stores, workers=args.workers)
    return _show(result, args, widget.table)


def run_cold_start(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.coldstart import measure

    return _show(measure(settings(), Path(args.docs), runs=args.runs), args, cold_start_table)


def run_deferred(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.deferred import measure

    return _show(measure(runs=args.runs), args, deferred_table)


def deferred_table(result: dict[str, Any]) -> Table:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.figures import Table

    rows = [(d["at"], d["module"], d["seconds"], (d["reason"] or "(none given)")[:80]) for d in result["deferrals"]]
    note = (
        f"{result['count']} deferrals; s: median of {result['runs']} fresh processes importing the modules after the "
        "module that defers them ('-': not installed here)"
    )
    return Table(["deferral", "module", "s", "the reason it gives"], rows, [note])


def cold_start_table(result: dict[str, Any]) -> Table:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.figures import Table

    rows = [
        (
            name,
            r["import_s"],
            r["first_call_s"],
            r["total_s"],
            r["budget_s"],
            r["ratio"],
            r["installed_mb"] + r["model_mb"],
            "" if r["within_budget"] else "over budget",
        )
        for name, r in result.items()
        if isinstance(r, dict)
    ]
    notes = [
        f"(interpreter start-up, not counted: {result['interpreter_s']} s; MB = packages of the extra + model)",
        f"answer / classify: ×{result['answer_to_classify']} (at most ×0.7)",
        "imports by top-level package, one run under -X importtime (s, self times, first call included):",
        *(
            f"  {name}: " + ", ".join(f"{pkg} {s}" for pkg, s in r["imports_s"].items())
            for name, r in result.items()
            if isinstance(r, dict)
        ),
    ]
    columns = ("function", "import s", "first call s", "total s", "budget s", "× budget", "MB", "")
    return Table(columns, rows, notes)


def run_statemachine(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.statemachine import measure

    return _show(measure(settings(), Path(args.docs), runs=args.runs), args, statemachine_table)


def statemachine_table(result: dict[str, Any]) -> Table:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.figures import Table

    hop = result["invoke_hop_ms"]
    base = hop["in_process"]
    rows: list[tuple[Any, ...]] = [
        (f"one Lambda invoke hop, Nagle {on}", hop[key], base, round(hop[key] - base, 2), None)
        for on, key in (("off", "nodelay"), ("on", "nagle"))
    ]
    rows += [
        (f"ask {qtype}", r["state_machine_ms"], r["in_process_ms"], r["overhead_ms"], r["ratio"])
        for qtype, r in result["ask"].items()
    ]
    notes = [f"medians of {result['runs']} runs"]
    return Table(("path", "local stack ms", "in-process ms", "overhead ms", "× in-process"), rows, notes)


def run_sessions(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.sessions import run

    return _show(run(settings(logs={"level": "WARNING"}), turns=args.turns), args, sessions_table)


def sessions_table(result: dict[str, Any]) -> Table:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.figures import Table

    file, dynamodb, ratio = result["file"], result["dynamodb"], result["ratio_file_to_dynamodb"]
    rows = [(k.removesuffix("_p50_ms"), file[k], dynamodb[k], ratio[k]) for k in file]
    notes = [f"medians of {result['turns']} turns of one session, in one process"]
    return Table(("call", "file p50 ms", "DynamoDB (moto) p50 ms", "× DynamoDB"), rows, notes)


def run_corpus(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist.commands.common import emit
    from assist_dev.bench.corpus import run

    emit(
        run(settings(logs={"level": "WARNING"}), rounds=args.rounds, documents=args.documents, index_dir=args.index_dir)
    )
    return 0


def run_report(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist.commands.common import emit
    from assist_dev.bench.report import run

    emit(run(settings(logs={"level": "WARNING"}), args.entries, args.sessions, args.days, args.span_days))
    return 0


def run_mcp(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist.commands.common import report
    from assist_dev.bench.ways_in import run

    report(run(settings(logs={"level": "WARNING"}), rounds=args.rounds, token_delay_ms=args.token_delay_ms), args.json)
    return 0


def run_crawl(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist.commands.common import emit
    from assist.embed import build_embedder
    from assist_dev.bench.sources import crawl

    s = settings(logs={"level": "WARNING"}, crawl={"concurrency": args.concurrency, "delay_s": args.delay})
    emit(crawl(s, build_embedder(s), args.pages))
    return 0


def run_embed(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench import embed

    return _show(embed.run(settings(logs={"level": "WARNING"}), args.chunks), args, embed_table)


def embed_table(result: dict[str, Any]) -> Table:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.figures import Table, ratio

    limit = result["limit_ms_per_chunk"]
    rows = [
        (name, r["cpu_ms_per_chunk"], r["chunks_per_s_per_core"], r["gflops_achieved"], r["share_of_fp32_peak"],
         r["model_mb"], ratio(r["cpu_ms_per_chunk"], limit))
        for name, r in ((n, result[n]) for n in ("fp32", "int8"))
    ]  # fmt: skip
    notes = [
        f"{result['chunks']} passages of {result['mean_tokens']} tokens on average, one thread, CPU time",
        f"limit: {result['gflop_per_chunk']} GFLOP a chunk at one core's fp32 peak of {result['peak']['gflops']} "
        f"GFLOP/s ({result['peak']['assumed']}; assumed) = {limit} ms a chunk",
        f"int8 / fp32 CPU per chunk: ×{result['int8_vs_fp32_cpu']} (VNNI: {result['peak']['vnni']})",
    ]
    columns = ("model", "CPU ms/chunk", "chunks/s/core", "GFLOP/s", "of fp32 peak", "MB", "× limit")
    return Table(columns, rows, notes)


def run_index(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench import index_build

    workers = [int(w) for w in args.workers.split(",") if w.strip()]
    s = settings(logs={"level": "WARNING"})
    if args.shard_chunks:
        s = s.with_(index={"shard_chunks": args.shard_chunks})
    return _show(index_build.run(s, args.chunks, workers, args.commit_rows), args, index_table)


def index_table(result: dict[str, Any]) -> Table:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.bench.figures import Table

    rows = [
        (r["workers"], r["wall_s"], r["embed_s"], r["commit_s"], r["chunks_per_s"], r["speedup"], r["embed_speedup"])
        for r in result["runs"]
    ]
    notes = [
        f"{result['chunks']} generated chunks of {result['mean_tokens']} tokens on average, embedder "
        f"{result['embedder']}, shards of {result['shard_chunks']}; one worker = one process, one thread"
    ]
    if "commit" in result:
        notes.append(f"commit step alone: {result['commit']['rows']:,} rows in {result['commit']['seconds']} s")
    columns = ("workers", "wall s", "embed s", "commit s", "chunks/s", "speed-up", "embed speed-up")
    return Table(columns, rows, notes)
