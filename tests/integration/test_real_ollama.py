"""The engine against an Ollama as strict as Ollama (assist_dev/doubles/ollama_server.py), with the seed's
models: `qwen3:1.7b` main and `qwen3:0.6b` light, both thinking-capable, trained to 40960 tokens (ADRs 0077–0081).

One scenario per host mode — the docs questions of data/, a whole-document question, a corpus listing, a
15-turn conversation, a PLATFORM turn with 15,000 characters of account data and a CODE turn with 30,000 of
editor content, through /v1/ask, the stream, the OpenAI endpoint and MCP — then what the host saw: every call
to a thinking model says `think`, carries `num_predict`, fits its window (nothing cut, the system prompt
evaluated), and no thinking text reaches an answer, a stored turn or the history sent back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import openai
import pytest
from mcp import Client

from assist.settings import Settings
from assist_dev.doubles.ollama_server import OllamaTestServer
from tests.integration.conftest import answered, served

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
MAIN, LIGHT = "qwen3:1.7b", "qwen3:0.6b"
MARK = "THINKING-MARKER"
#: long replies (cut at each slot's num_predict), so that the conversation's prompts outgrow Ollama's default window
LONG_REPLY = "The engine keeps a session's turns and cites its sources [1]. " * 100


def questions() -> list[str]:
    rows = []
    for name in ("queries.jsonl", "queries_es.jsonl"):
        rows += [json.loads(line)["text"] for line in (ROOT / "data/retrieval" / name).open()]
    return rows


def account_data(chars: int) -> str:
    rows, day = [], 0
    while len("\n".join(rows)) < chars:
        day += 1
        rows.append(
            json.dumps(
                {
                    "day": f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}",
                    "calls": 1000 + 37 * day,
                    "errors": day % 13,
                    "cost_usd": round(0.37 * day, 2),
                    "plan": "Pro",
                }
            )
        )
    return "\n".join(rows)[:chars]


def editor_content(chars: int) -> str:
    source = (ROOT / "layers/common/python/assist/ask/engine.py").read_text()
    return (source * (1 + chars // len(source)))[:chars]


def sse(base: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    events, name = [], None
    with httpx.stream("POST", base + "/v1/ask/stream", json=body, timeout=120) as r:
        for line in r.iter_lines():
            if line.startswith("event:"):
                name = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and name:
                events.append((name, json.loads(line.split(":", 1)[1])))
    return events


async def mcp_ask(base: str, message: str) -> dict[str, Any]:
    async with Client(base + "/mcp", mode="legacy") as client:
        return (await client.call_tool("ask", {"message": message})).structured_content


MODES = {
    "default": {},
    "thinking-on": {"think": "true"},  # thinking asked for: shown apart, never in the answer
    "legacy-tags": {"legacy_template": "tags"},  # an old template: `<think>…</think>` in content
    "legacy-close": {"legacy_template": "close"},  # … or only `…</think>`
}


@pytest.fixture(scope="module", params=list(MODES))
def host(request: pytest.FixtureRequest) -> Iterator[tuple[str, OllamaTestServer, dict[str, Any]]]:
    mode = MODES[request.param]
    with OllamaTestServer([MAIN, LIGHT], legacy_template=mode.get("legacy_template")) as srv:
        srv.thinking_text = f"{MARK} let me think about the sources and the question first."
        yield request.param, srv, mode


@pytest.fixture(scope="module")
def run(host, docs_index: Settings) -> dict[str, Any]:
    """The scenario, once per mode: what each way in answered and what the host saw."""
    name, srv, mode = host
    think = mode.get("think", "false")
    settings = docs_index.with_(
        ollama={
            "host": srv.url,
            "host_explicit": True,  # the LLM classifier layer runs too
            "model_name": MAIN,
            "model_name_conversational": LIGHT,
            "think": think,
            "think_conversational": think,
        }
    )
    out: dict[str, Any] = {"answers": [], "sessions": [], "streams": []}
    with served(settings) as base:
        asked = questions() if name == "default" else questions()[::15]
        for i, q in enumerate(asked):
            out["answers"].append(answered(base, session_id=f"{name}-docs-{i}", message=q))
        out["answers"].append(answered(base, session_id=f"{name}-doc", message="What does ADR 0042 decide?"))
        out["answers"].append(answered(base, session_id=f"{name}-corpus", message="List all ADRs."))
        srv.reply(LONG_REPLY)
        convo = f"{name}-convo"
        for turn in range(15):
            message = (
                f"What does the engine do with source number {turn}?"
                if turn % 3 == 0
                else "Tell me more about that, in other words."
            )
            out["answers"].append(answered(base, session_id=convo, message=message))
        out["sessions"].append(convo)
        srv.reply("Your usage is within the plan [account].")
        out["answers"].append(
            answered(
                base,
                session_id=f"{name}-platform",
                message="You are a direct and concise assistant. How much did I spend this month?",
                extra_context=account_data(15_000),
                query_type="PLATFORM",
            )
        )
        srv.reply("Here is the function split in two [1].")
        out["answers"].append(
            answered(
                base,
                session_id=f"{name}-code",
                message="Split this into two functions.",
                editor_content=editor_content(30_000),
                query_type="CODE_GENERATION",
            )
        )
        out["streams"].append(sse(base, {"session_id": f"{name}-stream", "message": "How is the engine configured?"}))
        out["streams"].append(sse(base, {"session_id": convo, "message": "Say that again, shorter."}))
        oai = openai.OpenAI(base_url=base + "/v1", api_key="unused-locally", max_retries=0)
        out["openai"] = (
            oai.chat.completions.create(
                model="assist", messages=[{"role": "user", "content": "How does streaming work?"}]
            )
            .choices[0]
            .message.content
        )
        out["mcp"] = anyio.run(mcp_ask, base, "How are sources cited?")
        out["transcripts"] = [
            httpx.get(f"{base}/v1/sessions/{s}", timeout=30).json() for s in (convo, f"{name}-code", f"{name}-stream")
        ]
    out["chats"] = srv.calls("/api/chat")
    out["evaluations"] = srv.evaluations
    out["reloads"] = srv.reloads
    out["mode"] = name
    return out


def test_every_call_to_a_thinking_model_says_think_and_carries_num_predict(run):
    chats = [c for c in run["chats"] if c.body.get("messages")]
    assert len(chats) > 20
    if run["mode"].startswith("legacy"):  # no `thinking` capability: nothing to turn off, never a think: true
        assert all(c.body.get("think") in (None, False) for c in chats)
    else:
        assert all("think" in c.body for c in chats), [c.body.get("think") for c in chats]
    assert all(c.body["options"].get("num_predict") for c in chats)
    assert all(c.body["options"].get("num_ctx") == 8192 for c in chats)  # one window per model: no reloads
    assert run["reloads"] == 0


def test_no_prompt_is_cut_by_the_host_and_the_system_prompt_is_always_evaluated(run):
    evaluations = run["evaluations"]
    assert evaluations
    assert [e for e in evaluations if e.cut] == []
    assert all(e.system_kept for e in evaluations)
    assert all(e.evaluated_tokens < e.num_ctx for e in evaluations)
    biggest = max(e.prompt_tokens for e in evaluations)
    assert biggest > 4096, "the scenario must need more than Ollama's default window"


def test_long_material_is_trimmed_by_budget_and_says_so(run):
    by_type = {}
    for a in run["answers"]:
        by_type.setdefault(a["route"]["type"], []).append(a)
    code = by_type["CODE_GENERATION"][-1]
    generate = next(s for s in code["trace"]["stages"] if s["name"] == "generate")
    assert "context_trimmed" in code["degraded"]
    assert generate["prompt"]["dropped"]["editor_chars"] > 0
    assert generate["prompt"]["tokens"] <= generate["prompt"]["limit"]
    editor = next(c for c in run["chats"] if "Split this into two functions." in json.dumps(c.body))
    assert "more characters not shown" in editor.body["messages"][-1]["content"]


def test_no_thinking_text_reaches_an_answer_a_stored_turn_or_the_history(run):
    texts = [a["answer"] for a in run["answers"]]
    texts += ["".join(e["text"] for name, e in s if name == "token") for s in run["streams"]]
    texts += [e["answer"] for s in run["streams"] for name, e in s if name == "done"]
    texts += [run["openai"], run["mcp"]["answer"]]
    texts += [t["answer"] for tr in run["transcripts"] for t in tr["turns"]]
    texts += [m.get("content", "") for c in run["chats"] for m in c.body["messages"] if m["role"] == "assistant"]
    assert all(t for t in texts[: len(run["answers"])])
    leaks = [t[:80] for t in texts if MARK in t or "<think>" in t or "</think>" in t]
    assert leaks == []
    thinking_events = [e for s in run["streams"] for name, e in s if name == "thinking"]
    if run["mode"] == "thinking-on":  # asked for: shown apart, as its own event
        assert MARK in "".join(e["text"] for e in thinking_events)
    else:
        assert thinking_events == []
