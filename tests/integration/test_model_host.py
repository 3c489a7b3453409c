"""The model host's rules met by the engine (ADRs 0077–0081), each through the real parts: a thinking model and the
budgets of the classifier and the rewrite, the output limit, a model not pulled, the window one model is loaded
with, and `assist doctor` / `GET /healthz?deep=1`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from assist.answer.phrases import phrase
from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.contracts import AskRequest, Layer, QueryType
from assist.llm.slots import ModelSlots
from assist.settings import Settings
from assist_dev.doubles.ollama_server import ModelSpec, OllamaTestServer
from tests.integration.conftest import answered, served

pytestmark = pytest.mark.integration
MAIN, LIGHT = "qwen3:1.7b", "qwen3:0.6b"
ASSIST = Path(sys.executable).with_name("assist")


@pytest.fixture
def host():
    with OllamaTestServer([MAIN, LIGHT]) as srv:
        yield srv


def on(settings: Settings, srv: OllamaTestServer, ollama: dict | None = None, **sections: dict) -> Settings:
    """`settings` on the double's seed models, with more fields of `ollama` and of other sections."""
    slots = {"host": srv.url, "model_name": MAIN, "model_name_conversational": LIGHT}
    return settings.with_(ollama=slots | (ollama or {}), **sections)


def generate_stage(body: dict) -> dict:
    """The generate stage of an answer's trace, as the wire has it."""
    return next(s for s in body["trace"]["stages"] if s["name"] == "generate")


def test_the_classifier_and_the_rewrite_stay_within_budget_against_a_model_that_thinks_for_3_s(
    docs_index: Settings, host: OllamaTestServer, session_id: str
):
    host.think_s = 3.0  # what thinking costs on a small host, when a call does not say otherwise
    s = on(docs_index, host, {"host_explicit": True}, classifier={"confidence_threshold": 1.01})
    engine = build_engine(s, client("dynamodb", s))
    host.reply("RETRIEVAL", model=MAIN)
    engine.ask(AskRequest(session_id=session_id, message="How do I configure the light model slot?"))
    host.queue_replies(["configure the light model slot on another Ollama host"], model=LIGHT)

    started = time.perf_counter()
    second = engine.ask(AskRequest(session_id=session_id, message="and how do I do that on another host?"))
    took = time.perf_counter() - started

    stages = {st.name: st for st in second.trace.stages}
    assert (second.route.layer, stages["rewrite"].by) == (Layer.LLM, "llm")
    assert stages["classify"].ms < 1000 * s.classifier.llm_timeout_s
    assert stages["rewrite"].ms < 1000 * s.classifier.llm_timeout_s
    assert took < 3.0  # not one call thought
    assert [e.thinking for e in host.evaluations] == [False] * len(host.evaluations)
    assert all(c.body["think"] is False for c in host.calls("/api/chat"))

    # the control: the same classifier asked to think misses its budget and the fallback decides
    thinking = build_engine(s.with_(classifier={"llm_think": "true", "llm_timeout_s": 2.0}), client("dynamodb", s))
    route = thinking.ask(AskRequest(session_id=session_id + "-t", message="How are the slots configured?")).route
    assert route.layer == "fallback"
    assert "over its 2 s budget" in route.reason


@pytest.mark.parametrize(
    ("message", "lang"),
    [("How is the engine configured?", "en"), ("¿Cómo se configura el motor de asistencia?", "es")],
)
def test_a_reply_cut_at_num_predict_is_answer_truncated_and_says_so(
    docs_index: Settings, host: OllamaTestServer, session_id: str, message: str, lang: str
):
    host.reply("The engine reads its settings from the environment [1] " * 20)
    with served(on(docs_index, host, {"num_predict": 12})) as base:
        body = answered(base, session_id=session_id, message=message, query_type="RETRIEVAL")
        events = []
        with httpx.stream(
            "POST",
            base + "/v1/ask/stream",
            json={"session_id": session_id, "message": message, "query_type": "RETRIEVAL"},
            timeout=60,
        ) as r:
            events = [json.loads(x[5:]) for x in r.iter_lines() if x.startswith("data:")]

    assert "answer_truncated" in body["degraded"]
    assert body["answer"].endswith(phrase("truncated", lang))
    assert generate_stage(body)["usage"]["done_reason"] == "length"
    assert host.calls("/api/chat")[-1].body["options"]["num_predict"] == 12
    streamed = "".join(e.get("text", "") for e in events[1:-1])
    assert streamed.endswith(phrase("truncated", lang))
    assert events[-1]["answer"] == streamed


def test_a_model_the_host_does_not_have_is_model_missing_and_named(
    docs_index: Settings, host: OllamaTestServer, session_id: str
):
    host.set_models([MAIN])  # the light model was never pulled
    host.reply("From main.")
    with served(on(docs_index, host)) as base:
        light = answered(
            base,
            session_id=session_id,
            message="How much did I use?",
            query_type="PLATFORM",
            extra_context="usage: 20%",
        )
        host.set_models([])
        neither = answered(base, session_id=session_id, message="What is a slot?", query_type="RETRIEVAL")

    assert light["answer"] == "From main."
    assert light["degraded"] == ["model_missing", "slot_fallback"]
    assert generate_stage(light)["missing"] == [LIGHT]
    assert {"model_missing", "llm_unavailable"} <= set(neither["degraded"])
    assert generate_stage(neither)["missing"] == [MAIN]
    assert generate_stage(neither)["answered_by"] == "extractive"


def test_warm_up_the_answers_and_the_classifier_load_each_model_once(docs_index: Settings, host: OllamaTestServer):
    host.load_s = 0.2
    s = on(docs_index, host, {"host_explicit": True}, classifier={"confidence_threshold": 1.01})
    assert ModelSlots(s).warm_up() == {MAIN: True, LIGHT: True}
    host.reply("RETRIEVAL")
    engine = build_engine(s, client("dynamodb", s))
    engine.ask(AskRequest(session_id="warm-1", message="How do slots work?"))
    account = AskRequest(
        session_id="warm-2", message="What did I use?", query_type=QueryType.PLATFORM, extra_context="usage: 20%"
    )
    engine.ask(account)  # the light slot's answer

    assert host.reloads == 0
    assert not any(e.reloaded for e in host.evaluations)


def test_a_trained_length_below_the_setting_caps_the_window_and_the_prompt(docs_index: Settings, session_id: str):
    with OllamaTestServer([ModelSpec(MAIN, context_length=2048), LIGHT]) as srv, served(on(docs_index, srv)) as base:
        body = answered(
            base,
            session_id=session_id,
            message="Split this in two.",
            query_type="CODE_GENERATION",
            editor_content="def f():\n    return 1\n" * 800,
        )
    (call,) = srv.calls("/api/chat")
    assert call.body["options"]["num_ctx"] == 2048
    assert generate_stage(body)["prompt"]["num_ctx"] == 2048
    assert "context_trimmed" in body["degraded"]
    assert not srv.evaluations[0].cut


def doctor(settings: Settings, url: str, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "OLLAMA_HOST": url,
        "OLLAMA_MODEL_NAME": MAIN,
        "OLLAMA_MODEL_NAME_CONVERSATIONAL": LIGHT,
        "INDEX_URI": settings.index.uri,
        "EMBED_MODEL_DIR": settings.embed.model_dir,
        "OLLAMA_CONNECT_TIMEOUT_S": "0.5",
    }
    return subprocess.run([str(ASSIST), "doctor", *args], capture_output=True, text=True, env=env, timeout=120)


def test_assist_doctor_names_a_missing_model_and_passes_a_healthy_host(docs_index: Settings, host: OllamaTestServer):
    healthy = doctor(docs_index, host.url)
    host.set_models([MAIN])
    missing = doctor(docs_index, host.url, "--json")

    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert healthy.stdout.splitlines()[0].split()[:3] == ["use", "host", "model"]
    assert "answer:main" in healthy.stdout
    assert "all good" in healthy.stdout
    assert f"Ollama {host.version}" in healthy.stdout
    assert missing.returncode == 1
    report = json.loads(missing.stdout)
    light = next(r for r in report["models"] if r["use"] == "answer:light")
    assert (light["present"], light["ok"]) == (False, False)
    assert f"ollama pull {LIGHT}" in light["problem"]
    main = next(r for r in report["models"] if r["use"] == "answer:main")
    assert main["capabilities"] == ["completion", "thinking"]
    assert (main["context_length"], main["num_ctx"], main["think"]) == (40960, 8192, False)
    assert report["index"]["state"] == "ready"
    assert report["index"]["chunks"] > 0


def test_deep_health_is_for_admins_and_reports_the_models(docs_index: Settings, host: OllamaTestServer):
    with served(on(docs_index, host, api={"local_mode": False})) as base:
        plain = httpx.get(base + "/healthz", timeout=10)
        refused = httpx.get(base + "/healthz?deep=1", timeout=10)
    with served(on(docs_index, host)) as base:  # the local stack: the developer is the admin
        deep = httpx.get(base + "/healthz?deep=1", timeout=30)

    assert plain.json() == {"status": "ok"}
    assert refused.status_code == 403
    assert deep.status_code == 200, deep.text
    assert deep.json()["status"] == "ok"
    assert {r["use"] for r in deep.json()["models"]} == {"answer:main", "answer:light", "classifier", "rewrite"}


def test_bench_ollama_short_mode_shows_answers_queueing_past_their_deadline(base_settings: Settings):
    from assist_dev.bench import ollama
    from assist_dev.bench.figures import render
    from assist_dev.commands.bench import ollama_table

    result = ollama.run(base_settings, parallel=1, concurrency=8, **ollama.SHORT)

    by = {r["concurrency"]: r for r in result["levels"]}
    assert list(by) == [1, 2, 4, 8]
    assert by[1]["answered"] == 1
    assert by[1]["fell_back"] == 0
    assert all(r["answered"] + r["fell_back"] == c for c, r in by.items())
    assert all(r["max_active"] == 1 for r in by.values())  # one slot: the rest queued
    assert by[8]["fell_back"] >= 3  # at most 1.5 s / T ≈ 0.3 s of them fit before the deadline
    assert by[8]["p95_s"] < ollama.SHORT["deadline_s"]  # a queued call gives up by the deadline, not after
    assert "answered by model" in render(ollama_table(result))


def test_bench_tokens_counts_against_qwen3_and_every_fallback_over_counts():
    """`assist bench tokens` as a user runs it: the figures ADRs 0077 and 0079 quote come from this command."""
    out = subprocess.run(
        [str(Path(sys.executable).with_name("assist")), "bench", "tokens", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout)
    assert result["tokenizer"].startswith("qwen3")
    for kind, row in result["kinds"].items():
        assert 0.85 <= row["double_rule"] <= 1.05, kind  # the double counts as qwen3 does, within its rule's error
        assert min(row["minilm_x1.35"], row["chars_1.8"]) >= 1.0, kind  # a fallback never under-counts
    assert all(0.95 <= p["estimate_over_qwen3"] <= 1.05 for p in result["prompts"])
