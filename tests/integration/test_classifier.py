"""The embedding and LLM layers through the real parts: the shipped artifact with the ONNX embedder, S3 on the moto
server, the LLM classifier against the Ollama test server, and the `classifier` CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from assist.aws.clients import client
from assist.classify.build import build_cascade
from assist.classify.llm import RETRY
from assist.classify.model import ClassifierModel
from assist.contracts import IntentEntry, QueryType
from assist.embed.base import EmbedderMismatch
from assist.offline.classify.data import examples_digest, read_examples
from assist.offline.classify.evaluate import eval_routing
from assist.settings import DEFAULT_CLASSIFIER_MODEL, SHIPPED_CLASSIFIER_MODEL, Settings

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
MODEL = Path(DEFAULT_CLASSIFIER_MODEL)
SEED = ROOT / "data/routing/seed.jsonl"
HOLDOUT = ROOT / "data/routing/holdout.jsonl"


@pytest.fixture(scope="module")
def settings(base_settings: Settings) -> Settings:
    return base_settings.with_(classifier={"model_path": str(MODEL)})


@pytest.fixture
def llm_settings(settings: Settings, ollama) -> Settings:
    """The LLM layer on (as with OLLAMA_HOST set), and an embedding layer that never decides on its own."""
    return settings.with_(
        ollama={"host": ollama.url, "host_explicit": True, "model_name": "main-model:1b"},
        classifier={"confidence_threshold": 1.01, "llm_timeout_s": 2.0},
    )


def test_the_shipped_model_was_trained_on_the_current_seed():
    doc = json.loads(MODEL.read_text())
    assert doc["training"]["data_sha256"] == examples_digest(read_examples(SEED)), (
        "data/routing/seed.jsonl changed: retrain with `assist classifier train --data data/routing/seed.jsonl "
        f"--holdout data/routing/holdout.jsonl --out {SHIPPED_CLASSIFIER_MODEL}`"
    )
    assert doc["classes"] == sorted(t.value for t in QueryType)
    assert doc["heads"][4:] == ["@inherit:CODE_GENERATION", "@inherit:PLATFORM", "@inherit:RETRIEVAL"]
    assert set(doc["features"]["history"]["prior"]) == {"CODE_GENERATION", "PLATFORM", "RETRIEVAL"}
    assert "holdout" in doc["metrics"]


def test_the_shipped_model_on_the_holdout_keeps_its_recorded_figures(settings: Settings, embedder):
    """Regression floors just below the figures measured when the artifact was committed (ADR 0013, ADR 0015):
    accuracy 0.952, anchoring 1.0, deictic 0.914, the embedding layer deciding 0.799 of the rows at 0.986."""
    result = eval_routing(build_cascade(settings, lambda: embedder), read_examples(HOLDOUT))
    assert result["n"] == 273
    assert result["by_tag"]["prefix"] == 1.0
    assert result["by_layer"]["rules"] == {"n": 14, "accuracy": 1.0}
    assert result["by_tag"]["anchoring"] >= 0.96
    assert result["accuracy"] >= 0.945
    assert result["by_tag"]["deictic"] >= 0.90
    assert set(result["by_layer"]) == {"rules", "embedding", "fallback"}  # no LLM without OLLAMA_HOST
    assert result["by_layer"]["embedding"]["n"] / result["n"] >= 0.79
    assert result["by_layer"]["embedding"]["accuracy"] >= 0.98


def test_retraining_from_the_seed_reproduces_the_shipped_model(embedder, tmp_path):
    from assist.offline.classify.train import train

    model, metrics = train(read_examples(SEED), embedder, holdout=read_examples(HOLDOUT))
    shipped = json.loads(MODEL.read_text())
    assert model.artifact.training.data_sha256 == shipped["training"]["data_sha256"]
    assert model.temperature == pytest.approx(shipped["calibration"]["temperature"], abs=0.02)
    for key in ("accuracy", "coverage", "selective_accuracy"):
        assert metrics["holdout"][key] == pytest.approx(shipped["metrics"]["holdout"][key], abs=0.01), key
    # calibrated: on rows the model never saw, the reliability bins' accuracy tracks their mean probability
    assert metrics["cv"]["calibrated"]["ece"] < metrics["cv"]["uncalibrated"]["ece"]
    assert metrics["cv"]["calibrated"]["ece"] < 0.03


def test_history_resolves_references_without_anchoring_self_contained_messages(settings: Settings, embedder):
    cascade = build_cascade(settings, lambda: embedder)
    code = [IntentEntry(QueryType.CODE_GENERATION, "write a python handler that returns an order by id")] * 2
    docs = [IntentEntry(QueryType.RETRIEVAL, "how does the retry policy of webhooks work")] * 5
    assert cascade.classify("explain this", code).type is QueryType.CODE_GENERATION
    assert cascade.classify("explain this", docs).type is QueryType.RETRIEVAL
    assert cascade.classify("en menos palabras", code).type is QueryType.CONVERSATIONAL
    usage = cascade.classify("cuántas llamadas llevo este mes?", docs)
    assert usage.type is QueryType.PLATFORM
    assert usage.type is cascade.classify("cuántas llamadas llevo este mes?", []).type


def test_a_model_on_s3_is_loaded_with_the_injected_client_and_logged(settings: Settings, embedder):
    s3 = client("s3", settings)
    s3.put_object(Bucket=settings.aws.bucket, Key="models/routing.json", Body=MODEL.read_bytes())
    s3_settings = settings.with_(classifier={"model_path": f"s3://{settings.aws.bucket}/models/routing.json"})
    with capture_logs() as logs:
        route = build_cascade(s3_settings, lambda: embedder, s3=s3).classify("how do rate limits work?", [])
    assert route.layer == "embedding"
    loaded = [e for e in logs if e["event"] == "classify.model_loaded"]
    assert loaded[0]["path"] == s3_settings.classifier.model_path
    assert loaded[0]["version"] == ClassifierModel.load(str(MODEL)).version
    assert loaded[0]["embedder"] == "onnx:all-MiniLM-L6-v2"
    decided = next(e for e in logs if e["event"] == "classify.decided")
    assert {"type", "layer", "confidence"} <= set(decided)


def test_a_model_of_another_embedder_is_refused(settings: Settings, embedder, tmp_path):
    doc = json.loads(MODEL.read_text())
    doc["embedder"]["id"] = "onnx:paraphrase-multilingual-MiniLM-L12-v2"  # same width, another vector space
    other = tmp_path / "multilingual.json"
    other.write_text(json.dumps(doc))
    cascade = build_cascade(settings.with_(classifier={"model_path": str(other)}), lambda: embedder)
    with pytest.raises(EmbedderMismatch, match=r"built with embedder onnx:paraphrase-multilingual.*is onnx:all-MiniLM"):
        cascade.classify("how do rate limits work?", [])


def test_a_low_confidence_message_goes_to_the_llm_with_the_intent_history(llm_settings: Settings, embedder, ollama):
    ollama.reply("PLATFORM", model="main-model:1b")
    history = [IntentEntry(QueryType.RETRIEVAL, "what is a connector and how do I configure one for my project")]
    with capture_logs() as logs:
        route = build_cascade(llm_settings, lambda: embedder).classify("cuántas llamadas llevo este mes?", history)
    assert (route.layer, route.type, route.confidence) == ("llm", QueryType.PLATFORM, 1.0)
    assert route.reason.startswith("llm: PLATFORM (history 1 entries); embedding best ")
    assert any(e["event"] == "classify.embedding_abstained" and e["threshold"] == 1.01 for e in logs)
    (call,) = ollama.calls("/api/chat")
    assert call.model == "main-model:1b"
    system, user = call.body["messages"]
    assert "<history_rule>" in system["content"]
    assert "<platform_priority_rule>" in system["content"]
    assert '[RETRIEVAL] "what is a connector and how do I configure one for my projec"' in user["content"]
    assert "configure one for my project" not in user["content"]  # 60 characters, never the raw message


def test_an_invalid_reply_gets_one_retry(llm_settings: Settings, embedder, ollama):
    ollama.queue_replies(["I think this is about code", "CODE_GENERATION"], model="main-model:1b")
    route = build_cascade(llm_settings, lambda: embedder).classify("explain this", [])
    assert (route.layer, route.type) == ("llm", QueryType.CODE_GENERATION)
    assert "after a retry" in route.reason
    _, second = ollama.calls("/api/chat")
    assert second.body["messages"][-1]["content"] == RETRY
    assert second.body["messages"][-2] == {"role": "assistant", "content": "I think this is about code"}


def test_two_invalid_replies_fall_back_to_the_embedding_best_class(llm_settings: Settings, embedder, ollama):
    ollama.reply("CLARIFY", model="main-model:1b")
    route = build_cascade(llm_settings, lambda: embedder).classify("how do rate limits work?", [])
    assert (route.layer, route.type) == ("fallback", QueryType.RETRIEVAL)
    assert route.reason.startswith("fallback: llm gave no valid label in 2 replies; embedding best p=")
    assert len(ollama.calls("/api/chat")) == 2


def test_an_llm_error_or_a_slow_llm_falls_back_within_the_budget(llm_settings: Settings, embedder, ollama):
    cascade = build_cascade(llm_settings.with_(classifier={"llm_timeout_s": 0.5}), lambda: embedder)
    cascade.warm()
    ollama.fail_next(1, status=500)
    failed = cascade.classify("how do rate limits work?", [])
    assert failed.layer == "fallback"
    assert failed.reason.startswith("fallback: llm unavailable (ResponseError)")
    ollama.first_token_delay_s = 2.0
    start = time.perf_counter()
    slow = cascade.classify("how do rate limits work?", [])
    assert time.perf_counter() - start < 1.0
    assert slow.reason.startswith("fallback: llm over its 0.5 s budget")
    assert slow.type is QueryType.RETRIEVAL


def test_a_dedicated_classifier_model_is_used_when_configured(llm_settings: Settings, embedder, ollama):
    ollama.reply("RETRIEVAL")
    cascade = build_cascade(llm_settings.with_(ollama={"model_name_classifier": "light-model:0.5b"}), lambda: embedder)
    assert cascade.classify("how do rate limits work?", []).layer == "llm"
    assert [c.model for c in ollama.calls("/api/chat")] == ["light-model:0.5b"]


#: a two-label set that is not routing: the CLI trains any label set
BILLING_AND_WEATHER = [
    {"text": t.format(w=w), "label": label}
    for label, ws in {
        "billing": ["invoice", "charge", "refund", "receipt"],
        "weather": ["rain", "storm", "snow", "wind"],
    }.items()
    for w in ws
    for t in ("tell me about the {w}", "a question on my {w}", "what about the {w} today")
]


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_cli_trains_and_evaluates_a_classifier_on_any_label_set(tmp_path, base_settings: Settings):
    write_jsonl(tmp_path / "train.jsonl", BILLING_AND_WEATHER)
    test = [{"text": "any news on the refund", "label": "billing"}, {"text": "play some jazz", "label": "music"}]
    write_jsonl(tmp_path / "test.jsonl", test)
    env = {**os.environ, "EMBED_MODEL_DIR": base_settings.embed.model_dir, "LOG_LEVEL": "WARNING"}
    run = [sys.executable, "-m", "assist.cli"]
    out = tmp_path / "clf.json"
    trained = subprocess.run(
        [*run, "classifier", "train", "--data", str(tmp_path / "train.jsonl"), "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert json.loads(trained.stdout)["classes"] == ["billing", "weather"]
    assert out.read_bytes()[:1] == b"{"
    ev = subprocess.run(
        [*run, "classifier", "eval", "--model", str(out), "--data", str(tmp_path / "test.jsonl"), "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    figures = json.loads(ev.stdout)
    assert {"accuracy", "threshold", "coverage", "selective_accuracy", "abstain_recall", "p50_ms"} <= set(figures)
    assert (figures["n_known"], figures["n_unknown"]) == (1, 1)


def test_the_guard_abstains_on_messages_unlike_the_training_rows_through_the_cli(tmp_path, base_settings: Settings):
    """Two classes and threshold 0.5: the top probability is always ≥ 0.5, so the probability never abstains and
    every abstention below is the novelty guard's (ADR 0041), with the real MiniLM embedder."""
    write_jsonl(tmp_path / "train.jsonl", BILLING_AND_WEATHER)
    outside = ["play some jazz", "who won the football match", "recommend a novel to read"]
    write_jsonl(tmp_path / "oos_train.jsonl", [{"text": t, "label": "oos"} for t in outside])
    test = [
        {"text": "any news on the refund", "label": "billing"},
        {"text": "is it going to snow", "label": "weather"},
        {"text": "translate good morning into italian", "label": "oos"},
        {"text": "how many legs does a spider have", "label": "oos"},
    ]
    write_jsonl(tmp_path / "test.jsonl", test)
    env = {**os.environ, "EMBED_MODEL_DIR": base_settings.embed.model_dir, "LOG_LEVEL": "WARNING"}
    run = [sys.executable, "-m", "assist.cli", "classifier"]
    for guard in ([], ["--guard-data", str(tmp_path / "oos_train.jsonl")]):
        out = tmp_path / f"clf{len(guard)}.json"
        train_args = ["train", "--data", str(tmp_path / "train.jsonl"), "--threshold", "0.5", "--out", str(out)]
        trained = json.loads(
            subprocess.run([*run, *train_args, *guard], capture_output=True, text=True, env=env, check=True).stdout
        )
        assert trained["classes"] == ["billing", "weather"]  # out-of-scope rows never become a class
        assert trained["guard"]["out_of_scope_rows" if guard else "rule"]
        ev = subprocess.run(
            [*run, "eval", "--model", str(out), "--data", str(tmp_path / "test.jsonl"), "--json"],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        figures = json.loads(ev.stdout)
        assert (figures["n_known"], figures["n_unknown"]) == (2, 2)
        assert figures["abstain_recall"] == 1.0, figures["guard"]
        assert figures["guard"]["unknown_abstained"] == 2  # abstentions the probability alone would not make
        assert (figures["accuracy"], figures["coverage"], figures["guard"]["known_abstained"]) == (1.0, 1.0, 0)


def test_targets_choose_both_thresholds_by_cross_validation_and_the_baseline_runs_on_the_same_rows(
    tmp_path, base_settings: Settings
):
    """ADR 0056 through the CLI with the real embedder: the gate's choice is written into the artifact that ships,
    with its cross-validated figures, and the plain logistic regression is scored on the same rows."""
    write_jsonl(tmp_path / "train.jsonl", BILLING_AND_WEATHER)
    outside = ["play some jazz", "who won the football match", "recommend a novel to read", "bake a cake"]
    write_jsonl(tmp_path / "oos_train.jsonl", [{"text": t, "label": "oos"} for t in outside])
    write_jsonl(tmp_path / "test.jsonl", [{"text": "is it going to snow", "label": "weather"}])
    env = {**os.environ, "EMBED_MODEL_DIR": base_settings.embed.model_dir, "LOG_LEVEL": "WARNING"}
    run = [sys.executable, "-m", "assist.cli", "classifier"]
    data = ["--data", str(tmp_path / "train.jsonl"), "--guard-data", str(tmp_path / "oos_train.jsonl")]
    targets = ["--target-selective", "0.9", "--target-abstain", "0.75"]
    out = tmp_path / "gated.json"
    trained = json.loads(
        subprocess.run(
            [*run, "train", *data, *targets, "--folds", "2", "--out", str(out)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stdout
    )
    gate = trained["gate"]
    assert gate["targets"] == {"selective_accuracy": 0.9, "abstention": 0.75}
    assert (trained["threshold"], trained["guard_threshold"]) == (gate["threshold"], gate["guard_threshold"])
    assert gate["on_all_rows"]["met"] is True
    assert gate["on_all_rows"]["abstention"] >= 0.75
    assert {"coverage", "selective_accuracy", "abstention"} <= set(gate["cross_validated"])
    shipped = json.loads(out.read_text())
    assert (shipped["threshold"], shipped["guard"]["threshold"]) == (gate["threshold"], gate["guard_threshold"])
    half = subprocess.run([*run, "train", *data, "--target-selective", "0.9", "--out", str(out)], env=env)
    assert half.returncode == 2  # one target without the other is refused
    baseline = json.loads(
        subprocess.run(
            [*run, "baseline", *data, *targets, "--eval", str(tmp_path / "test.jsonl"), "--json"],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stdout
    )
    assert baseline["evaluation"]["n_known"] == 1
    assert baseline["on_training_rows"]["met"] is True
