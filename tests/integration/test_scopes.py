"""Scopes (ADRs 0121, 0122) through the real parts: the two-product, two-version corpus of tests/data/scoped built
into LanceDB with the MiniLM embedder, asked over HTTP (uvicorn) with the Ollama test server, read back by the
`openai` and `mcp` clients. A scoped question cites only its scope's pages (and the shared glossary); an unscoped
one may cite every scope; a question only another version answers gets "not in these docs" and the link; a site
key fixed to a scope refuses a visitor asking another."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import anyio
import httpx
import openai
import pytest
from mcp import Client

from assist.aws.clients import client
from assist.build.run import sync_sources
from assist.index.store import connect
from assist.settings import Settings
from assist.sources.resolve import load_file
from assist_dev.doubles.ollama_server import OllamaTestServer
from assist_dev.local.resources import ensure_resources
from tests.integration.conftest import answered, ask, served

pytestmark = pytest.mark.integration
CORPUS = Path(__file__).resolve().parents[1] / "data" / "scoped"
MAIN, LIGHT = "main-model:1b", "light-model:0.5b"
SCOPES = [("cli", "1"), ("cli", "2"), ("server", "1"), ("server", "2")]
#: each topic's page exists in every scope, under the same headings, saying something else in each
QUESTIONS = {
    "configuration": ["Where is the configuration file?", "Which file holds the settings?"],
    "output": ["What is the output format?", "Which output formats can I choose?"],
    "login": ["How do I log in?", "How does authentication work?"],
    "install": ["How do I install it?", "What is the install method?"],
    "cache": ["Where is the cache location?", "Where are cached artefacts kept?"],
}
ONLY_IN_V2 = "How do I add a plugin?"


@pytest.fixture(scope="module")
def built(base_settings: Settings, embedder, tmp_path_factory) -> tuple[Settings, dict]:
    s = base_settings.with_(index={"uri": str(tmp_path_factory.mktemp("scoped-index"))})
    return s, sync_sources(load_file(CORPUS / "sources.yaml"), s, embedder, progress=False)


@pytest.fixture(scope="module")
def llm():
    with OllamaTestServer(models=[MAIN, LIGHT]) as srv:
        yield srv


def answering(built, llm) -> Settings:
    return built[0].with_(ollama={"host": llm.url, "model_name": MAIN, "model_name_conversational": LIGHT})


@pytest.fixture(scope="module")
def base(built, llm):
    with served(answering(built, llm)) as url:
        yield url


def done(streamed: str) -> dict:
    """The stream's `done` event (its lines end in CRLF, as SSE allows)."""
    return json.loads(re.search(r"event: done\r?\ndata: (.+)", streamed).group(1))


def in_scope(doc_id: str, product: str, version: str) -> bool:
    return doc_id.startswith((f"{product}/v{version}/", "shared/"))


def cites_only(sources: list[dict], product: str, version: str) -> None:
    assert sources, "nothing cited"
    assert [s["doc_id"] for s in sources if not in_scope(s["doc_id"], product, version)] == []


def test_every_row_holds_its_scope_and_the_report_counts_pages_per_scope(built):
    s, report = built
    assert report["scopes"] == {"cli/1": 5, "cli/2": 6, "server/1": 5, "server/2": 5, "*/*": 1}
    rows = connect(s.index.uri).open_table(s.index.table).search().select(["doc_id", "product", "version"])
    rows = rows.limit(None).to_list()
    for r in rows:
        if r["doc_id"].startswith("shared/"):
            assert (r["product"], r["version"]) == ("", "")  # no scope: in every scope
        else:
            product, version = r["doc_id"].split("/")[:2]
            assert (r["product"], "v" + r["version"]) == (product, version), r


def test_forty_scoped_questions_cite_only_their_scope_and_their_own_version_answers(base, session_id):
    leaks, answered_by_own_page, asked = [], 0, 0
    for product, version in SCOPES:
        for topic, questions in QUESTIONS.items():
            for n, question in enumerate(questions):
                body = {
                    "message": question,
                    "query_type": "RETRIEVAL",
                    "scope": {"product": product, "version": version},
                }
                a = answered(base, session_id=f"{session_id}-{product}{version}-{topic}-{n}", **body)
                asked += 1
                docs = [src["doc_id"] for src in a["sources"]]
                leaks += [(product, version, question, d) for d in docs if not in_scope(d, product, version)]
                answered_by_own_page += f"{product}/v{version}/{topic}" in docs and not a["uncertain"]
    print(f"scoped questions: {asked}, leaks: {len(leaks)}, answered from their own version's page: "
          f"{answered_by_own_page}")  # fmt: skip
    assert asked == 40
    assert leaks == []
    assert answered_by_own_page >= 36, answered_by_own_page  # the scope's own page, not "not in these docs"


def test_an_unscoped_question_may_cite_every_scope(base, session_id):
    a = answered(base, session_id=session_id, message="Where is the configuration file?", query_type="RETRIEVAL")
    scopes = {tuple(src["doc_id"].split("/")[:2]) for src in a["sources"] if not src["doc_id"].startswith("shared/")}
    assert len(scopes) >= 2, a["sources"]


def test_a_question_only_another_version_answers_is_not_in_these_docs_with_the_link(base, llm, session_id):
    body = {"message": ONLY_IN_V2, "query_type": "RETRIEVAL", "scope": {"product": "cli", "version": "1"}}
    a = answered(base, session_id=session_id, **body)
    assert a["uncertain"] is True
    assert a["answer"].startswith("These docs (cli 1) do not cover this question")
    assert "This is covered in cli 2:" in a["answer"]
    assert "(https://docs.example.com/cli/v2/plugins#plugins)" in a["answer"]
    assert all(in_scope(src["doc_id"], "cli", "1") for src in a["sources"]), a["sources"]  # never cited
    assert not any(ONLY_IN_V2 in str(r) for r in llm.calls("/api/chat"))  # no model was asked to answer it
    # the scope that has it answers it
    v2 = answered(base, session_id=session_id + "-v2", **(body | {"scope": {"product": "cli", "version": "2"}}))
    assert v2["uncertain"] is False
    assert "cli/v2/plugins" in [src["doc_id"] for src in v2["sources"]]


def test_the_stream_openai_and_mcp_take_the_scope(base, session_id):
    body = {
        "session_id": session_id,
        "message": ONLY_IN_V2,
        "query_type": "RETRIEVAL",
        "scope": {"product": "cli", "version": "1"},
    }
    streamed = done(httpx.post(base + "/v1/ask/stream", json=body, timeout=60).text)
    assert "cli/v2/plugins#plugins" in streamed["answer"]
    oai = openai.OpenAI(base_url=base + "/v1", api_key="unused-locally", max_retries=0)
    resp = oai.chat.completions.create(
        model="assist",
        messages=[{"role": "user", "content": "Which file holds the settings?"}],
        metadata={"product": "server", "version": "2"},
        extra_body={"query_type": "RETRIEVAL"},
    )
    sources = resp.model_extra["assist"]["sources"]
    cites_only(sources, "server", "2")
    with pytest.raises(openai.BadRequestError, match="metadata"):
        oai.chat.completions.create(
            model="assist", messages=[{"role": "user", "content": "hi"}], metadata={"version": "2 or 3"}
        )

    async def main():
        async with Client(base + "/mcp", mode="legacy") as mcp:
            found = await mcp.call_tool(
                "search_docs", {"query": "configuration file", "scope": "product=cli,version=2"}
            )
            doc = await mcp.call_tool(
                "get_document", {"doc_id": "cli/v1/configuration", "scope": "product=cli,version=1"}
            )
            listed = await mcp.call_tool("list_documents", {"scope": "product=server,version=1"})
            answer = await mcp.call_tool("ask", {"message": ONLY_IN_V2, "scope": "product=cli,version=1"})
            outside = await mcp.call_tool(
                "get_document", {"doc_id": "cli/v2/plugins", "scope": "product=cli,version=1"}
            )
            assert outside.is_error
            assert "no document 'cli/v2/plugins' in the scope" in outside.content[0].text
            return (
                found.structured_content,
                doc.structured_content,
                listed.structured_content,
                answer.structured_content,
            )

    found, doc, listed, answer = anyio.run(main)
    assert found["passages"]
    assert all(in_scope(p["doc_id"], "cli", "2") for p in found["passages"])
    assert "INI file" in doc["sections"][0]["text"] or any("INI" in s["text"] for s in doc["sections"])
    assert sorted(d["doc_id"] for d in listed["documents"]) == sorted(
        [f"server/v1/{t}" for t in QUESTIONS] + ["shared/glossary"]
    )
    assert answer["uncertain"] is True
    assert "cli/v2/plugins" in answer["answer"]


def test_a_session_remembers_its_scope(base, session_id):
    first = {
        "message": "Where is the cache location?",
        "query_type": "RETRIEVAL",
        "scope": {"product": "server", "version": "1"},
    }
    answered(base, session_id=session_id, **first)
    again = answered(base, session_id=session_id, message="How do clients log in?", query_type="RETRIEVAL")
    cites_only(again["sources"], "server", "1")


def test_a_bad_scope_is_a_400(base, session_id):
    for scope in ({"product": "cli; DROP"}, {"edition": "pro"}, {"version": 2}):
        r = ask(base, session_id=session_id, message="Where is the cache?", scope=scope)
        assert r.status_code == 400, (scope, r.text)


def test_a_site_key_fixed_to_a_scope_refuses_another_scope(base, session_id):
    site = "https://docs.example.com"
    r = httpx.post(base + "/v1/admin/keys", json={"origins": [site], "scope": {"product": "cli"}}, timeout=10)
    assert r.status_code == 201, r.text
    key = r.json()["key"]
    v = httpx.post(base + "/v1/widget/session", json={"key": key}, headers={"origin": site}, timeout=10).json()
    headers = {"authorization": f"Bearer {v['token']}", "origin": site}

    def visit(scope: dict | None) -> httpx.Response:
        body = {"session_id": f"{v['visitor']}.chat", "message": "Where is the configuration file?"}
        return httpx.post(
            base + "/v1/ask/stream", json=body | ({"scope": scope} if scope else {}), headers=headers, timeout=60
        )

    refused = visit({"product": "server", "version": "2"})
    assert refused.status_code == 403, refused.text
    assert "cli only" in refused.text
    narrowed = visit({"version": "2"})  # within the key's product: its version 2
    cites_only(done(narrowed.text)["sources"], "cli", "2")
    unsent = done(visit(None).text)  # the key's scope alone: every version of cli
    assert unsent["sources"]
    assert all(s["doc_id"].startswith(("cli/", "shared/")) for s in unsent["sources"])


def test_the_insights_page_breaks_questions_and_gaps_down_by_scope(built, llm):
    s = answering(built, llm).with_(sessions={"table": "s-scopes", "intent_history_table": "h-scopes"})
    ensure_resources(s, client("dynamodb", s), client("s3", s))  # tables of its own: only these turns counted
    asked = [
        (ONLY_IN_V2, {"product": "cli", "version": "1"}),
        ("Where is the cache location?", {"product": "cli", "version": "1"}),
        ("Where is the cache location?", {"product": "server", "version": "2"}),
        ("Where is the cache location?", None),
    ]
    with served(s) as url:
        for i, (question, scope) in enumerate(asked):
            answered(url, session_id=f"insights-{i}", message=question, query_type="RETRIEVAL", scope=scope)
        r = httpx.get(url + "/insights?days=1", timeout=120)
    assert r.status_code == 200, r.text
    for line in ("cli/1 · 1 of 2", "server/2 · 0 of 1", "*/* · 0 of 1"):
        assert f"<li>{line}</li>" in r.text, line
    assert re.search(r"</b> · 1 questions · cli/1 1<ul><li>How do I add a plugin\?</li>", r.text)


def test_a_moved_scope_rewrites_the_rows_without_embedding_again(base_settings, embedder, tmp_path):
    corpus = shutil.copytree(CORPUS, tmp_path / "corpus")
    s = base_settings.with_(index={"uri": str(tmp_path / "index")})
    sync_sources(load_file(corpus / "sources.yaml"), s, embedder, progress=False)
    text = (corpus / "sources.yaml").read_text().replace("scope: {product: server}", "scope: {product: daemon}")
    (corpus / "sources.yaml").write_text(text)
    again = sync_sources(load_file(corpus / "sources.yaml"), s, embedder, progress=False)
    assert again["embedded"] == 0
    assert again["added_docs"] == 10  # the server's pages: rows rewritten, vectors reused
    assert again["scopes"] == {"cli/1": 5, "cli/2": 6, "daemon/1": 5, "daemon/2": 5, "*/*": 1}
