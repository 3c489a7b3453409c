"""The OpenAI-compatible routes and the MCP server, driven by their own official clients (`openai`,
`mcp`) and by raw HTTP/JSON-RPC, against the local stack's parts: the app whose plain answers run
the ask state machine (moto), LanceDB with docs/, the ONNX embedder, the Ollama test server."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import httpx
import openai
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from assist.api.app import create_app
from assist_dev.doubles.ollama_server import OllamaTestServer
from assist_dev.local.statemachine import ServerlessStack
from tests.support.folder_urls import in_folder
from tests.support.http import serve

pytestmark = pytest.mark.integration
MAIN, LIGHT = "main-model:1b", "light-model:0.5b"
QUESTION = "How does the engine decide that a message is about billing?"
TOOLS = {"search_docs", "get_document", "list_documents", "ask"}


@pytest.fixture(scope="module")
def llm():
    with OllamaTestServer(models=[MAIN, LIGHT]) as srv:
        yield srv


@pytest.fixture(scope="module")
def stack(docs_index, llm):
    s = docs_index.with_(ollama={"host": llm.url, "model_name": MAIN, "model_name_conversational": LIGHT})
    st = ServerlessStack(s, s.aws.endpoint_url, name="assist-ask-ways-in").start()
    st.warm()
    yield st
    st.stop()


@pytest.fixture(scope="module")
def base(stack):
    """The local stack's app: /v1/ask and plain completions through the state machine."""
    with serve(create_app(stack.functions["answer"].engine.get(), ask_via=stack.ask)) as url:
        yield url


@pytest.fixture
def oai(base):
    return openai.OpenAI(base_url=base + "/v1", api_key="unused-locally", max_retries=0)


# -- OpenAI wire format --------------------------------------------------------------------


def test_plain_completion_carries_citations_and_the_engine_fields(oai, llm, session_id):
    llm.reply("Routing runs layers, cheapest first [1].", model=MAIN)
    resp = oai.chat.completions.create(
        model="assist", messages=[{"role": "user", "content": QUESTION}], user=session_id
    )
    assert resp.object == "chat.completion"
    text = resp.choices[0].message.content
    assert text.startswith("Routing runs layers, cheapest first [1].\n\nSources:\n[1] ")
    assert resp.choices[0].finish_reason == "stop"
    assert resp.usage.completion_tokens > 0
    extra = resp.model_extra["assist"]
    assert extra["session_id"] == session_id
    assert extra["turn"] == 1
    assert extra["route"]["type"] == "RETRIEVAL"
    assert extra["sources"][0]["id"] in text
    assert in_folder(extra["sources"][0]["url"])  # where a reader finds it: its path in docs/ (ADR 0112)
    assert extra["sources"][0]["url"] in text
    assert extra["trace"]["execution"]["states"][-1] == "Answer"  # answered by the state machine, as /v1/ask


def test_streamed_completion_is_chunks_then_done(oai, llm, session_id):
    llm.reply("Streaming sends the route first [1].", model=MAIN)
    stream = oai.chat.completions.create(
        model="assist",
        messages=[{"role": "user", "content": "How are answers streamed?"}],
        stream=True,
        stream_options={"include_usage": True},
        extra_headers={"X-Assist-Session": session_id},
    )
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[0].model_extra["assist"]["route"]["type"] == "RETRIEVAL"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.startswith("Streaming sends the route first [1].\n\nSources:\n[1] ")
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 3  # token by token
    finish = next(c for c in chunks if c.choices and c.choices[0].finish_reason == "stop")
    assert finish.model_extra["assist"]["session_id"] == session_id
    assert finish.model_extra["assist"]["turn"] == 1
    assert chunks[-1].choices == []
    assert chunks[-1].usage.completion_tokens > 0


def test_a_conversation_resent_whole_is_one_session_of_three_turns(oai, base, llm, session_id):
    first = f"What is a model slot? ({session_id})"
    history: list[dict[str, str]] = []
    sessions, turns = set(), []
    for i, message in enumerate([first, "Which model does the light slot use?", "Say that in fewer words"]):
        llm.reply(f"answer {i}", model=None)
        history.append({"role": "user", "content": message})
        resp = oai.chat.completions.create(
            model="assist", messages=[{"role": "system", "content": "Be brief."}, *history]
        )
        history.append({"role": "assistant", "content": resp.choices[0].message.content})
        sessions.add(resp.model_extra["assist"]["session_id"])
        turns.append(resp.model_extra["assist"]["turn"])
    assert len(sessions) == 1
    assert turns == [1, 2, 3]
    (session,) = sessions
    stored = httpx.get(f"{base}/v1/sessions/{session}", timeout=10).json()
    assert [t["message"] for t in stored["turns"]] == [m["content"] for m in history if m["role"] == "user"]
    # the same first message from another caller is another conversation
    other = oai.chat.completions.create(
        model="assist", messages=[{"role": "user", "content": first}], extra_headers={"X-Assist-User": "someone-else"}
    )
    assert other.model_extra["assist"]["session_id"] != session


def test_platform_with_account_data_through_extra_body(oai, llm, session_id):
    llm.reply("You have used 80% of your quota.", model=LIGHT)
    resp = oai.chat.completions.create(
        model="assist",
        messages=[{"role": "user", "content": "You are a direct and concise assistant. How much quota is left?"}],
        user=session_id,
        extra_body={"extra_context": "plan=pro; usage=80% of 10k requests"},
    )
    extra = resp.model_extra["assist"]
    assert extra["route"]["type"] == "PLATFORM"
    assert extra["sources"] == []
    assert resp.choices[0].message.content == "You have used 80% of your quota."
    prompt = json.dumps(llm.calls(model=LIGHT)[-1].body)
    assert "usage=80% of 10k requests" in prompt


def test_errors_use_openais_shape(oai, base):
    with pytest.raises(openai.NotFoundError) as nf:
        oai.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert nf.value.body["code"] == "model_not_found"
    assert nf.value.body["param"] == "model"
    with pytest.raises(openai.BadRequestError) as bad:
        oai.chat.completions.create(model="assist", messages=[{"role": "user", "content": "hi"}], n=2)
    assert bad.value.body["param"] == "n"
    assert bad.value.body["type"] == "invalid_request_error"
    with pytest.raises(openai.BadRequestError) as last:
        oai.chat.completions.create(model="assist", messages=[{"role": "assistant", "content": "hello"}])
    assert last.value.body["param"] == "messages"
    with pytest.raises(openai.BadRequestError) as blank:
        oai.chat.completions.create(model="assist", messages=[{"role": "user", "content": "   "}])
    assert "blank" in blank.value.body["message"]
    with pytest.raises(openai.BadRequestError) as session:
        oai.chat.completions.create(model="assist", messages=[{"role": "user", "content": "hi"}], user="me@example")
    assert session.value.body["param"] == "user"
    raw = httpx.post(base + "/v1/chat/completions", content=b"{not json", timeout=10)
    assert raw.status_code == 400
    assert set(raw.json()["error"]) == {"message", "type", "param", "code"}
    # ignored, as documented: sampling knobs do not change what the engine does
    ok = oai.chat.completions.create(
        model="assist", messages=[{"role": "user", "content": QUESTION}], temperature=0.1, max_tokens=5
    )
    assert ok.choices[0].message.content


def test_models_lists_the_one_model(oai):
    assert [m.id for m in oai.models.list()] == ["assist"]
    assert oai.models.retrieve("assist").owned_by == "assist"


def test_raw_http_speaks_the_chat_completions_wire_format(base, llm, session_id):
    llm.reply("Raw answer [1].", model=MAIN)
    body = {"model": "assist", "messages": [{"role": "user", "content": QUESTION}], "stream": True, "user": session_id}
    with httpx.stream("POST", base + "/v1/chat/completions", json=body, timeout=30) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in resp.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line[6:]) for line in lines[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


# -- MCP ------------------------------------------------------------------------------------


async def exercise(client: Client) -> dict[str, object]:
    """Every tool once, and a bad argument to each that takes one; the results by name."""
    out: dict[str, object] = {"tools": {t.name: t for t in (await client.list_tools()).tools}}
    found = await client.call_tool("search_docs", {"query": "model slot configuration", "k": 3})
    out["search"] = found
    doc_id = found.structured_content["passages"][0]["doc_id"]
    out["document"] = await client.call_tool("get_document", {"doc_id": doc_id})
    out["listing"] = await client.call_tool("list_documents", {"filter": doc_id})
    out["ask"] = await client.call_tool("ask", {"message": QUESTION})
    out["bad"] = [
        await client.call_tool("search_docs", {"query": "slots", "k": 0}),
        await client.call_tool("search_docs", {"query": "   "}),
        await client.call_tool("get_document", {"doc_id": "no/such-document"}),
        await client.call_tool("ask", {"message": "hi", "session_id": "not a valid id!"}),
        await client.call_tool("ask", {}),
    ]
    out["after"] = await client.call_tool("search_docs", {"query": "streaming"})
    return out


def check(out: dict, llm_reply: str) -> None:
    tools = out["tools"]
    assert set(tools) == TOOLS
    assert "search_docs" in tools["ask"].description  # descriptions tell an agent when to use which
    search = out["search"].structured_content
    assert not out["search"].is_error
    assert search["confidence"] in {"very_high", "high", "medium", "low", "speculative"}
    assert len(search["passages"]) == 3
    assert set(search["passages"][0]) == {"id", "doc_id", "title", "text", "score", "url"}
    assert all(in_folder(p["url"]) for p in search["passages"])  # docs/ with no base URL (ADR 0112)
    doc = out["document"].structured_content
    assert doc["doc_id"] == search["passages"][0]["doc_id"]
    assert doc["sections"]
    assert search["passages"][0]["id"] in {s["id"] for s in doc["sections"]} or doc["truncated"]
    listing = out["listing"].structured_content
    assert doc["doc_id"] in {d["doc_id"] for d in listing["documents"]}
    ask = out["ask"].structured_content
    assert ask["answer"].startswith(llm_reply)
    assert "Sources:" in ask["answer"]
    assert ask["route"]["type"] == "RETRIEVAL"
    assert ask["sources"]
    assert all(s["url"] for s in ask["sources"])
    assert ask["turn"] == 1
    assert all(r.is_error for r in out["bad"]), [r.content for r in out["bad"]]
    assert "list_documents" in out["bad"][2].content[0].text  # the error says how to recover
    assert not out["after"].is_error


def test_mcp_over_streamable_http_with_the_sdk_client(base, llm):
    llm.reply("Over HTTP [1].", model=MAIN)

    async def main() -> dict:
        async with Client(base + "/mcp", mode="legacy") as client:  # legacy: the initialize handshake
            assert client.server_info.name == "assist"
            return await exercise(client)

    check(anyio.run(main), "Over HTTP [1].")


def test_mcp_over_stdio_with_the_sdk_client(stack, llm):
    llm.reply("Over stdio [1].", model=MAIN)
    s = stack.settings
    env = {
        **{k: v for k, v in os.environ.items() if k in {"PATH", "PYTHONPATH", "HOME", "HF_HUB_OFFLINE"}},
        **s.env_lines(),
        "OLLAMA_HOST": s.ollama.host,
        "OLLAMA_MODEL_NAME": MAIN,
        "OLLAMA_MODEL_NAME_CONVERSATIONAL": LIGHT,
        "LOG_LEVEL": "WARNING",
    }
    params = StdioServerParameters(command=str(Path(sys.executable).with_name("assist")), args=["mcp"], env=env)

    async def main() -> dict:
        async with Client(params) as client:
            return await exercise(client)

    check(anyio.run(main), "Over stdio [1].")


def test_raw_json_rpc_over_http(base):
    h = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

    def rpc(payload: dict) -> httpx.Response:
        return httpx.post(base + "/mcp", json=payload, headers=h, timeout=60)

    init = rpc(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        }
    )
    assert init.status_code == 200
    assert init.json()["result"]["serverInfo"]["name"] == "assist"
    listed = rpc({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).json()
    assert {t["name"] for t in listed["result"]["tools"]} == TOOLS
    called = rpc(
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "search_docs", "arguments": {"k": 0}}}
    ).json()
    assert called["result"]["isError"] is True  # a bad argument is the tool's error, not a protocol failure
    unknown = rpc({"jsonrpc": "2.0", "id": 4, "method": "no/such-method"}).json()
    assert unknown["error"]["code"] == -32601
