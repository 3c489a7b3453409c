"""The uncertainty verdict (ADR 0055) through the real parts: HTTP (uvicorn) → engine → LanceDB with docs/,
the MiniLM embedder, moto DynamoDB, the Ollama test server; read back by the `openai` and `mcp` clients.
An off-topic question is answered "not in the docs" without a model call; a docs question is not. The model's
own verdict (ADR 0083: a reply beginning with the marker) is uncertain too, on every way in, marker stripped;
`force_answer` asks the model anyway (ADR 0084)."""

from __future__ import annotations

import json
import re

import anyio
import httpx
import openai
import pytest
from mcp import Client

from assist.answer.marker import MARKER
from assist.aws.clients import client
from assist.settings import Settings
from assist_dev.doubles.ollama_server import OllamaTestServer
from tests.integration.conftest import answered, served
from tests.support.folder_urls import in_folder

pytestmark = pytest.mark.integration
MAIN, LIGHT = "main-model:1b", "light-model:0.5b"
OFF_TOPIC = "What is a good recipe for lemon cake?"
ON_TOPIC = "How is the engine configured?"


@pytest.fixture(scope="module")
def llm():
    with OllamaTestServer(models=[MAIN, LIGHT]) as srv:
        yield srv


@pytest.fixture(scope="module")
def settings(docs_index: Settings, llm) -> Settings:
    # local mode: the developer at the keyboard may read /insights
    return docs_index.with_(
        ollama={"host": llm.url, "model_name": MAIN, "model_name_conversational": LIGHT}, api={"local_mode": True}
    )


@pytest.fixture(scope="module")
def base(settings: Settings):
    with served(settings) as url:
        yield url


def ask(base: str, session_id: str, message: str) -> dict:
    return answered(base, session_id=session_id, message=message, query_type="RETRIEVAL")


def test_an_off_topic_question_says_the_docs_do_not_cover_it_without_a_model(base, llm, settings, session_id):
    before = len(llm.calls(model=MAIN))
    a = ask(base, session_id, OFF_TOPIC)
    assert a["uncertain"] is True
    assert a["uncertain_reason"] == "out_of_scope"
    assert a["answer"].startswith("The documentation does not cover this question")
    topics = a["retrieval"]["suggestions"]
    assert topics
    assert all(
        re.search(rf"- \[{re.escape(t)}\]\([\w./-]+\.md#", a["answer"]) for t in topics
    )  # each near miss: its page
    near_misses(a["sources"], a["retrieval"])  # and the passages found are its sources, each marked (ADR 0102)
    assert len(llm.calls(model=MAIN)) == before  # no model was asked
    verdict = next(s for s in a["trace"]["stages"] if s["name"] == "retrieve")["verdict"]
    assert verdict["reason"] == "out_of_scope"
    assert verdict["score"] < settings.uncertain.threshold
    # stored as a documentation gap for the insights page
    item = client("dynamodb", settings).get_item(
        TableName=settings.sessions.intent_history_table, Key={"session_id": {"S": session_id}, "turn": {"N": "1"}}
    )["Item"]
    assert item["uncertain"] == {"S": "out_of_scope"}
    # stored once, its text with the near misses' links; near misses are not kept as sources the answer cited
    (turn,) = httpx.get(f"{base}/v1/sessions/{session_id}", timeout=10).json()["turns"]
    assert (turn["answer"], turn["sources"]) == (a["answer"], [])


def near_misses(sources: list[dict], retrieval: dict) -> None:
    """An uncertain answer's sources: the passages the search found, each a near miss with its page, and the
    sections the answer's text names among them."""
    assert len(sources) == retrieval["n"] > 0
    assert all(s["near_miss"] is True and in_folder(s["url"]) for s in sources)
    topics = {f"{s['title']} › {s['heading']}" if s["heading"] not in ("", s["title"]) else s["title"] for s in sources}
    assert set(retrieval["suggestions"]) <= topics


def test_a_docs_question_is_answered_by_the_model(base, llm, session_id):
    llm.reply("Settings come from the environment [1].", model=MAIN)
    a = ask(base, session_id, ON_TOPIC)
    assert a["uncertain"] is False
    assert a["uncertain_reason"] is None
    assert a["answer"] == "Settings come from the environment [1]."
    assert a["sources"]
    assert not any("near_miss" in s for s in a["sources"])  # a covered answer's sources are as before


def streamed(base: str, body: dict) -> list[tuple[str, dict]]:
    events = []
    with httpx.stream("POST", base + "/v1/ask/stream", json=body, timeout=60) as resp:
        name = None
        for line in resp.iter_lines():
            if line.startswith("event:"):
                name = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                events.append((name, json.loads(line.split(":", 1)[1])))
    return events


def test_the_stream_says_uncertain_in_route_and_done(base, session_id):
    events = streamed(base, {"session_id": session_id, "message": OFF_TOPIC, "query_type": "RETRIEVAL"})
    assert [n for n, _ in events] == ["route", "token", "done"]
    route, token, done = (d for _, d in events)
    assert route["uncertain"] is True
    assert route["uncertain_reason"] == "out_of_scope"
    near_misses(route["sources"], done["retrieval"])  # the passages found, at once, with their text (ADR 0102)
    assert all(s["passage"] for s in route["sources"])
    assert token["text"].startswith("The documentation does not cover this question")
    assert re.search(r"\]\([\w./-]+\.md#", token["text"])  # the near misses, each a link to its page (ADR 0084)
    assert done["uncertain"] is True
    assert done["answer"] == token["text"]
    assert done["sources"] == [{k: v for k, v in s.items() if k != "passage"} for s in route["sources"]]


def test_openai_and_mcp_carry_the_verdict(base, llm):
    oai = openai.OpenAI(base_url=base + "/v1", api_key="unused-locally", max_retries=0)
    resp = oai.chat.completions.create(
        model="assist",
        messages=[{"role": "user", "content": OFF_TOPIC}],
        extra_body={"query_type": "RETRIEVAL"},
    )
    assert resp.choices[0].message.content.startswith("The documentation does not cover this question")
    assert re.search(r"\]\([\w./-]+\.md#", resp.choices[0].message.content)  # near misses as Markdown links
    assert "Sources:" not in resp.choices[0].message.content  # listed once: near misses are no citations
    extra = resp.model_extra["assist"]
    assert extra["uncertain"] is True
    assert extra["uncertain_reason"] == "out_of_scope"
    near_misses(extra["sources"], extra["retrieval"])
    llm.reply("Through MCP [1].", model=MAIN)

    async def main():
        async with Client(base + "/mcp", mode="legacy") as mcp:
            off = await mcp.call_tool("ask", {"message": OFF_TOPIC})
            return off.structured_content, (await mcp.call_tool("ask", {"message": ON_TOPIC})).structured_content

    off, out = anyio.run(main)
    assert (off["uncertain"], "Sources:" in off["answer"]) == (True, False)
    near_misses(off["sources"], off["retrieval"])
    assert out["uncertain"] is False
    assert out["uncertain_reason"] is None


def test_a_reader_gone_after_the_route_event_leaves_the_uncertain_turn_once(base, settings, session_id):
    body = {"session_id": session_id, "message": OFF_TOPIC, "query_type": "RETRIEVAL"}
    with httpx.stream("POST", base + "/v1/ask/stream", json=body, timeout=60) as resp:
        assert next(line for line in resp.iter_lines() if line.startswith("event:")) == "event: route"
    db = client("dynamodb", settings)
    for table in (settings.sessions.table, settings.sessions.intent_history_table):
        items = db.query(
            TableName=table,
            KeyConditionExpression="session_id = :s AND turn > :header",
            ExpressionAttributeValues={":s": {"S": session_id}, ":header": {"N": "0"}},
            ConsistentRead=True,
        )["Items"]
        assert len(items) == 1, table
    assert items[0]["uncertain"] == {"S": "out_of_scope"}


EXPLANATION = "The sources describe how the engine routes and searches, not how it is configured for production."
DECLINED = "What settings does the engine need for production?"


def test_the_models_marker_is_an_uncertain_answer_on_every_way_in(base, llm, settings, session_id):
    llm.queue_replies([f"{MARKER} {EXPLANATION}"] * 4, model=MAIN)
    a = ask(base, session_id, DECLINED)
    assert (a["uncertain"], a["uncertain_reason"]) == (True, "model_not_covered")
    assert a["answer"] == EXPLANATION  # the marker stripped, the model's explanation kept
    assert a["sources"]  # the passages it was shown
    generate = next(s for s in a["trace"]["stages"] if s["name"] == "generate")
    assert generate["verdict"] == "model_not_covered"
    retrieve = next(s for s in a["trace"]["stages"] if s["name"] == "retrieve")
    assert retrieve["verdict"]["uncertain"] is False  # the evidence passed it

    events = streamed(base, {"session_id": session_id, "message": DECLINED, "query_type": "RETRIEVAL"})
    tokens = [d["text"] for n, d in events if n == "token"]
    done = events[-1][1]
    assert events[-1][0] == "done"
    assert not any("[[" in t or "covered]]" in t for t in tokens)  # no piece of the marker reaches the reader
    assert "".join(tokens) == done["answer"] == EXPLANATION
    assert (done["uncertain"], done["uncertain_reason"]) == (True, "model_not_covered")

    oai = openai.OpenAI(base_url=base + "/v1", api_key="unused-locally", max_retries=0)
    resp = oai.chat.completions.create(
        model="assist", messages=[{"role": "user", "content": DECLINED}], extra_body={"query_type": "RETRIEVAL"}
    )
    assert resp.choices[0].message.content.startswith(EXPLANATION)  # with its Sources footer after
    assert MARKER not in resp.choices[0].message.content
    assert resp.model_extra["assist"]["uncertain_reason"] == "model_not_covered"

    async def main():
        async with Client(base + "/mcp", mode="legacy") as mcp:
            return (await mcp.call_tool("ask", {"message": DECLINED})).structured_content

    out = anyio.run(main)
    assert (out["uncertain"], out["uncertain_reason"]) == (True, "model_not_covered")
    assert MARKER not in out["answer"]

    item = client("dynamodb", settings).get_item(
        TableName=settings.sessions.intent_history_table, Key={"session_id": {"S": session_id}, "turn": {"N": "1"}}
    )["Item"]
    assert item["uncertain"] == {"S": "model_not_covered"}
    page = httpx.get(base + "/insights?days=1", timeout=120)
    assert page.status_code == 200
    assert DECLINED in page.text  # a documentation gap


def test_force_answer_asks_the_model_and_the_trace_says_so(base, llm, session_id):
    llm.queue_replies(["Lemon cake needs lemons [1]."], model=MAIN)
    before = len(llm.calls(model=MAIN))
    a = answered(base, session_id=session_id, message=OFF_TOPIC, query_type="RETRIEVAL", force_answer=True)
    assert len(llm.calls(model=MAIN)) == before + 1
    assert (a["uncertain"], a["answer"]) == (False, "Lemon cake needs lemons [1].")
    stages = {s["name"]: s for s in a["trace"]["stages"]}
    assert stages["retrieve"]["verdict"]["reason"] == "out_of_scope"  # what the evidence said, kept
    assert stages["retrieve"]["verdict"]["forced"] is True
    assert stages["generate"]["forced"] is True
