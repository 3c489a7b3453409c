"""The flywheel's second half through the real parts: training on exported labels, gated promotion into a model
registry on the moto server's S3 (over HTTP) or a directory, rollback, and warm classify paths that pick up the
promoted model (the real ONNX embedder, the classify function's own entry point).

Models are trained on small slices of the seed to keep the module short on two cores; the held-out set is the
real, fixed data/routing/holdout.jsonl."""

from __future__ import annotations

import json
import random
import time
import uuid
from dataclasses import replace
from pathlib import Path

import msgspec
import numpy as np
import pytest
from structlog.testing import capture_logs

from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.classify.artifact import Artifact
from assist.classify.build import build_cascade
from assist.classify.model import ClassifierModel
from assist.classify.registry import Registry
from assist.cli import main
from assist.contracts import AskRequest, QueryType
from assist.export.labels import LabelExporter
from assist.export.sink import S3Sink
from assist.offline.classify.data import Example, read_examples
from assist.offline.classify.promote import promote
from assist.offline.classify.sources import read_sources
from assist.offline.classify.train import train
from assist.serverless.lambda_entry import LambdaFunction
from assist.sessions.backends import open_store
from assist.settings import Settings
from assist_dev.local.resources import ensure_resources

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "data/routing/seed.jsonl"
HOLDOUT = ROOT / "data/routing/holdout.jsonl"
PROBE = "how many API calls have I made this month?"


class CachedEmbedder:
    """The real MiniLM embedder, remembering each text's vector: several models here are trained and scored on
    the same rows, and embedding them once keeps the module fast on two cores."""

    def __init__(self, inner) -> None:
        self._inner, self.id, self.dim = inner, inner.id, inner.dim
        self._vectors: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self._inner.embed(missing), strict=True))
        return np.stack([self._vectors[t] for t in texts])


def per_type(rows: list[Example], n: int) -> list[Example]:
    """The first `n` rows of each label, in file order."""
    seen: dict[str, int] = {}
    out = []
    for e in rows:
        seen[e.label] = seen.get(e.label, 0) + 1
        if seen[e.label] <= n:
            out.append(e)
    return out


def shuffled(rows: list[Example]) -> list[Example]:
    """The same messages with their labels shuffled: a deliberately degraded training set."""
    labels = [e.label for e in rows]
    random.Random(0).shuffle(labels)
    return [replace(e, label=label, tags=()) for e, label in zip(rows, labels, strict=True)]


@pytest.fixture(scope="module")
def cached(embedder) -> CachedEmbedder:
    return CachedEmbedder(embedder)


@pytest.fixture(scope="module")
def holdout() -> list[Example]:
    return read_examples(HOLDOUT)


@pytest.fixture(scope="module")
def models(cached) -> dict[str, ClassifierModel]:
    """small: 8 seed rows per type; larger: 60 per type; degraded: the larger set with shuffled labels."""
    seed = read_examples(SEED)
    larger = per_type(seed, 60)
    return {
        name: train(rows, cached, folds=3)[0]
        for name, rows in (("small", per_type(seed, 8)), ("larger", larger), ("degraded", shuffled(larger)))
    }


@pytest.fixture
def registry(base_settings: Settings) -> Registry:
    """A fresh registry on the moto server's S3."""
    return Registry(
        f"s3://{base_settings.aws.bucket}/models/{uuid.uuid4().hex[:8]}/routing", client("s3", base_settings)
    )


def test_a_better_model_is_promoted_a_worse_one_refused_and_rollback_restores_the_one_before(
    registry: Registry, models, holdout, cached, base_settings: Settings
):
    small, larger, degraded = models["small"], models["larger"], models["degraded"]
    with capture_logs() as logs:
        first = promote(registry, small, holdout, cached, str(HOLDOUT))
        better = promote(registry, larger, holdout, cached, str(HOLDOUT))
        worse = promote(registry, degraded, holdout, cached, str(HOLDOUT))

    assert (first["promoted"], first["current"], first["metrics"]["current"]) == (True, None, None)
    assert (better["promoted"], better["current"], better["reasons"]) == (True, small.version, [])
    cand, cur = better["metrics"]["candidate"], better["metrics"]["current"]
    assert cand["n"] == cur["n"] == len(holdout) == 273
    assert cand["accuracy"] > cur["accuracy"] + 0.1  # 60 rows per type beat 8
    assert all(cand["by_label"][t] >= cur["by_label"][t] - 0.02 for t in cur["by_label"])

    assert (worse["promoted"], worse["current"]) == (False, larger.version)
    assert worse["reasons"][0].startswith(
        f"held-out accuracy {worse['metrics']['candidate']['accuracy']:.4f} < current {cand['accuracy']:.4f}"
    )
    assert any("loses" in r for r in worse["reasons"][1:])
    # both sets of figures are the models' own on the same rows: the current one scores as it did when promoted
    assert worse["metrics"]["current"]["accuracy"] == cand["accuracy"]
    assert registry.current_version() == larger.version

    # the decision is kept beside the model, in the bucket
    bucket, _, prefix = registry.root[5:].partition("/")
    s3 = client("s3", base_settings)
    kept = json.loads(s3.get_object(Bucket=bucket, Key=f"{prefix}/{degraded.version}.decision.json")["Body"].read())
    assert kept["promoted"] is False
    assert kept["metrics"]["candidate"]["by_label"] == worse["metrics"]["candidate"]["by_label"]
    assert kept["holdout"]["n"] == 273
    assert len(kept["holdout"]["sha256"]) == 64
    assert worse["decision"] == f"{registry.root}/{degraded.version}.decision.json"
    assert worse["artifact"] == registry.artifact(degraded.version)  # stored, though never current
    assert ClassifierModel.load(worse["artifact"], s3=s3).version == degraded.version

    # and logged, with both sets of metrics
    events = [e for e in logs if e["event"] == "classify.promotion"]
    assert [(e["promoted"], e["candidate"]) for e in events] == [
        (True, small.version),
        (True, larger.version),
        (False, degraded.version),
    ]
    assert events[2]["current_accuracy"] == cand["accuracy"]
    assert events[2]["candidate_by_label"] == worse["metrics"]["candidate"]["by_label"]
    assert set(events[2]["current_by_label"]) == {t.value for t in QueryType}

    listing = registry.describe()
    assert {(v["version"], v["current"], v["promoted"]) for v in listing["versions"]} == {
        (small.version, False, True),
        (larger.version, True, True),
        (degraded.version, False, False),
    }
    back = registry.rollback()
    assert (back.version, back.replaced, back.previous) == (small.version, larger.version, ())
    assert registry.current_version() == small.version


def test_a_warm_classify_function_serves_the_promoted_model_within_the_interval(
    registry: Registry, models, holdout, cached, base_settings: Settings, session_id: str
):
    interval = 3.0
    small, larger = models["small"], models["larger"]
    promote(registry, small, holdout, cached, str(HOLDOUT))
    # the classify function as a container runs it: its own engine, S3 client and embedder, from the settings
    fn = LambdaFunction(
        "classify",
        base_settings.with_(classifier={"model_path": f"{registry.root}/current", "reload_s": interval}),
    )
    turns = iter(range(1000))
    events: list[dict] = []

    def served() -> str:
        with capture_logs() as logs:
            fn.handler({"request": {"session_id": f"{session_id}-{next(turns)}", "message": PROBE}})
        events.extend(logs)
        return next(e["model_version"] for e in logs if e["event"] == "classify.decided")

    def until(version: str) -> float:
        """Classify every 0.1 s until `version` serves; returns the seconds it took."""
        start = time.monotonic()
        while served() != version:
            assert time.monotonic() - start < interval + 2.0, f"{version} not served within the interval"
            time.sleep(0.1)
        return time.monotonic() - start

    assert served() == small.version
    loaded = time.monotonic()
    assert promote(registry, larger, holdout, cached, str(HOLDOUT))["promoted"]
    assert time.monotonic() - loaded < interval, "promotion took longer than the interval; the next line is moot"
    assert served() == small.version  # the pointer is read at most once per interval
    assert until(larger.version) <= interval + 1.0
    (swap,) = [e for e in events if e["event"] == "classify.model_swapped"]
    assert (swap["serving"], swap["version"], swap["registry"]) == (small.version, larger.version, registry.root)

    registry.rollback()
    assert until(small.version) <= interval + 1.0


DAMAGES = ("truncated", "altered", "other_embedder", "not_routing", "pointer")


def damage(kind: str, registry: Registry, s3, model: ClassifierModel) -> str | None:
    """Store a broken version of `model` and point `current` at it; returns the version the pointer names."""
    bucket, _, prefix = registry.root[5:].partition("/")
    doc = json.loads(model.to_bytes())
    if kind == "pointer":
        s3.put_object(Bucket=bucket, Key=f"{prefix}/current", Body=b'{"versio')
        return None
    if kind in ("truncated", "altered"):  # the bytes under the version's name are not that version any more
        doc["threshold"] = 0.5
        body = model.to_bytes()[:4000] if kind == "truncated" else json.dumps(doc).encode()
        s3.put_object(Bucket=bucket, Key=f"{prefix}/{model.version}.json", Body=body)
        version = model.version
    else:  # a well-formed artifact the classify path cannot serve
        if kind == "other_embedder":
            doc["embedder"]["id"] = "onnx:paraphrase-multilingual-MiniLM-L12-v2"
        else:
            doc["classes"] = [c.lower() for c in doc["classes"]]
            doc["heads"] = [h.lower() for h in doc["heads"]]
        broken = ClassifierModel(msgspec.convert(doc, Artifact))
        registry.add(broken)
        version = broken.version
    registry.make_current(version)
    return version


REASONS = {
    "truncated": "is not JSON",
    "altered": "the artifact was altered",
    "other_embedder": "built with embedder onnx:paraphrase-multilingual",
    "not_routing": "not a routing model",
}


@pytest.mark.parametrize("kind", DAMAGES)
def test_a_broken_model_is_refused_and_the_loaded_one_keeps_serving(
    kind: str, registry: Registry, models, embedder, base_settings: Settings
):
    small, larger = models["small"], models["larger"]
    for m in (small, larger):
        registry.add(m)
    registry.make_current(small.version)
    settings = base_settings.with_(classifier={"model_path": f"{registry.root}/current", "reload_s": 0.0})
    cascade = build_cascade(settings, lambda: embedder, s3=registry.s3)

    logs: list[dict] = []

    def served() -> str:
        with capture_logs() as events:
            cascade.classify(PROBE, [])
        logs.extend(events)
        return next(e["model_version"] for e in events if e["event"] == "classify.decided")

    assert served() == small.version
    broken = damage(kind, registry, registry.s3, larger)
    assert [served(), served(), served()] == [small.version] * 3
    if kind == "pointer":
        failed = [e for e in logs if e["event"] == "classify.model_check_failed"]
        assert len(failed) == 3  # an unreadable pointer is read again at every check
        assert "not a registry pointer" in failed[0]["error"]
        return
    (refused,) = [e for e in logs if e["event"] == "classify.model_refused"]  # once, not at every check
    assert (refused["version"], refused["serving"]) == (broken, small.version)
    assert REASONS[kind] in refused["reason"]

    # a sound model promoted next is picked up as usual
    registry.add(models["degraded"])
    registry.make_current(models["degraded"].version)
    assert served() == models["degraded"].version


def test_training_reads_exported_labels_from_s3_and_leaves_out_the_embedding_layers_own(
    docs_index: Settings, embedder, tmp_path
):
    tag = uuid.uuid4().hex[:8]
    s = docs_index.with_(sessions={"table": f"s-{tag}", "intent_history_table": f"h-{tag}"}, export={"settle_s": 0.0})
    ensure_resources(s, client("dynamodb", s), client("s3", s))
    engine = build_engine(s, client("dynamodb", s))
    asks = [
        ("you are a direct and concise assistant. My usage is 20%, mail me at ana@example.com", None),  # rules
        ("put that in a table", QueryType.CONVERSATIONAL),  # declared
        ("a python function that retries a webhook call", QueryType.CODE_GENERATION),  # declared
        ("how do rate limits work?", None),  # the embedding layer decides: self-labeled
        ("what is the retry policy of webhooks?", None),
    ]
    for i, (message, declared) in enumerate(asks):
        engine.ask(AskRequest(session_id=f"{tag}-{i}", message=message, query_type=declared))
    s3 = client("s3", s)
    labels = f"s3://{s.aws.bucket}/labels-{tag}"
    assert LabelExporter(s, open_store(s), S3Sink(labels, s3)).run(force=True).records == len(asks)
    sink = S3Sink(labels, s3)
    records = [json.loads(ln) for n in sink.names() for ln in sink.read(n).decode().splitlines()]
    own = [r for r in records if r["layer"] in ("embedding", "fallback")]
    kept = [r for r in records if r not in own]
    assert any(r["self_labeled"] for r in own)
    assert {r["layer"] for r in kept} == {"rules", "declared"}

    seed = per_type(read_examples(SEED), 5)
    seed_file = tmp_path / "seed.jsonl"
    seed_file.write_text("".join(json.dumps({"text": e.text, "label": e.label}) + "\n" for e in seed))
    examples, sources = read_sources([str(seed_file), labels], s3, label_weight=0.5)
    skipped = {"self_labeled": sum(r["layer"] == "embedding" for r in own)}
    if any(r["layer"] == "fallback" for r in own):
        skipped["fallback"] = sum(r["layer"] == "fallback" for r in own)
    assert sources[1]["skipped"] == skipped
    assert (sources[1]["exported"], sources[1]["rows"], sources[1]["label_weight"]) == (len(kept), len(kept), 0.5)
    assert sources[0]["rows"] == len(seed)
    assert "exported" not in sources[0]

    texts = {e.text: e for e in examples}
    assert "<EMAIL>" in next(r for r in kept if r["layer"] == "rules")["message"]  # trained on the redacted text
    assert all(r["message"] in texts and texts[r["message"]].weight == 0.5 for r in kept)
    assert not any(r["message"] in texts for r in own)
    model, _ = train(examples, embedder, folds=3, sources=sources)
    assert model.artifact.training.rows == len(seed) + len(kept)
    assert model.artifact.training.sources[1]["skipped"] == skipped


def test_the_cli_trains_on_an_export_directory_promotes_lists_and_rolls_back(
    tmp_path, monkeypatch, capsys, base_settings: Settings
):
    """`assist classifier train|promote|versions|rollback` on local files only: a registry needs no AWS."""
    seed = read_examples(SEED)
    hold = per_type(read_examples(HOLDOUT), 25)

    def write(path: Path, rows: list[dict]) -> str:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return str(path)

    def routing(rows: list[Example]) -> list[dict]:
        return [{"text": e.text, "label": e.label} for e in rows]

    holdout = write(tmp_path / "holdout.jsonl", routing(hold))
    small = write(tmp_path / "small.jsonl", routing(per_type(seed, 3)))
    larger_rows = per_type(seed, 30)
    larger = write(tmp_path / "larger.jsonl", routing(larger_rows[: len(larger_rows) // 2]))
    export = tmp_path / "labels"
    record = {"schema": 1, "session": "s", "turn": 1, "time": "2026-04-10T09:00:00+00:00", "confidence": 1.0}
    write(
        export / "date=2026-04-10/part-0.jsonl",
        [
            {
                **record,
                "id": f"s:{i}",
                "message": e.text,
                "type": e.label,
                "layer": "llm",
                "self_labeled": False,
                "history": [],
            }
            for i, e in enumerate(larger_rows[len(larger_rows) // 2 :])
        ]
        + [
            {
                **record,
                "id": "s:x",
                "message": PROBE,
                "type": "RETRIEVAL",
                "layer": "embedding",
                "self_labeled": True,
                "history": [],
            }
        ],
    )
    degraded = write(tmp_path / "degraded.jsonl", routing(shuffled(larger_rows)))
    monkeypatch.setenv("EMBED_MODEL_DIR", base_settings.embed.model_dir)
    monkeypatch.setenv("CLASSIFIER_MODEL_PATH", str(tmp_path / "registry" / "current"))
    monkeypatch.setenv("LOG_LEVEL", "WARNING")

    def run(*argv: str) -> tuple[int, dict]:
        code = main(list(argv))
        out = capsys.readouterr().out
        return code, json.loads(out) if out.strip() else {}

    code, trained = run(
        "classifier",
        "train",
        "--data",
        larger,
        "--data",
        str(export),
        "--out",
        str(tmp_path / "b.json"),
        "--label-weight",
        "0.8",
        "--folds",
        "3",
    )
    assert code == 0
    src = trained["training"]["sources"][1]
    assert (src["files"], src["exported"], src["label_weight"], src["skipped"]) == (1, 60, 0.8, {"self_labeled": 1})
    assert trained["rows"] == len(larger_rows)
    for name, data in (("a", small), ("c", degraded)):
        assert (
            run("classifier", "train", "--data", data, "--out", str(tmp_path / f"{name}.json"), "--folds", "3")[0] == 0
        )

    outcomes = [
        run("classifier", "promote", "--model", str(tmp_path / f"{m}.json"), "--holdout", holdout, "--json")
        for m in ("a", "b", "c")
    ]
    assert [(code, d["promoted"]) for code, d in outcomes] == [(0, True), (0, True), (1, False)]
    versions = {m: d["candidate"] for m, (_, d) in zip("abc", outcomes, strict=True)}
    assert (tmp_path / "registry" / f"{versions['c']}.decision.json").is_file()

    code, listing = run("classifier", "versions", "--json")
    assert listing["pointer"]["version"] == versions["b"]
    assert {v["version"]: v["promoted"] for v in listing["versions"]} == {versions[m]: m != "c" for m in "abc"}

    code, back = run("classifier", "rollback", "--json")
    assert (code, back["version"], back["replaced"], back["action"]) == (0, versions["a"], versions["b"], "rollback")
    assert main(["classifier", "rollback"]) == 2
    assert "nothing to roll back to" in capsys.readouterr().err
