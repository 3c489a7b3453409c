"""Questions about the corpus itself (ADR 0042) through the real parts: a made-up architecture corpus
with front matter indexed in LanceDB (local and on moto S3), the HTTP API, streaming, the state
machine's tasks, and the Ollama test server recording what the model was given."""

from __future__ import annotations

import json

import httpx
import msgspec
import pytest

from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.build.run import ingest
from assist.index import manifest
from assist.index.store import connect
from assist.serverless import tasks
from assist.serverless.payload import STEP_FUNCTIONS_LIMIT
from assist.serverless.routes import retrieve_app
from assist.settings import Settings
from tests.integration.conftest import answered
from tests.support import adr_corpus
from tests.support.http import serve

pytestmark = pytest.mark.integration
ADR_12 = "decisions/0012-use-sign-convention-for-current"


@pytest.fixture
def corpus_index(adr_index: Settings) -> Settings:
    """The made-up architecture corpus's index, built once per session (conftest) and only read here."""
    return adr_index


@pytest.fixture
def llm(corpus_index: Settings, ollama) -> Settings:
    return corpus_index.with_(
        ollama={"host": ollama.url, "model_name": "main-model:1b", "model_name_conversational": "light-model:0.5b"}
    )


@pytest.fixture
def api_settings(llm: Settings) -> Settings:
    return llm


def ask(base: str, session_id: str, message: str) -> dict:
    return answered(base, session_id=session_id, message=message, query_type="RETRIEVAL")


def prompt_of(ollama) -> tuple[str, str]:
    call = ollama.calls("/api/chat")[-1]
    return call.body["messages"][0]["content"], call.body["messages"][-1]["content"]


def corpus_stage(reply: dict) -> dict:
    return next(s for s in reply["trace"]["stages"] if s["name"] == "corpus")


def test_the_manifest_is_written_with_the_index_and_follows_it(corpus_index, embedder, tmp_path):
    entries = manifest.read(connect(corpus_index.index.uri), corpus_index.index.table)
    assert len(entries) == 18 * 2 + 31 + 1
    root = adr_corpus.write(tmp_path / "c")
    s = corpus_index.with_(index={"uri": str(tmp_path / "ix")})
    ingest(root, s, embedder, progress=False)
    (root / "principles" / "0010-data-is-reliable-by-design.md").unlink()
    (root / "principles" / "0099-new.md").write_text("---\nnav_order: PCP.99\ntitle: A new principle\n---\nText.\n")
    ingest(root, s, embedder, progress=False)
    ids = {e.id: e for e in manifest.read(connect(s.index.uri), s.index.table)}
    assert "principles/0010-data-is-reliable-by-design" not in ids
    assert ids["principles/0099-new"].title == "A new principle"
    assert "pcp-99" in ids["principles/0099-new"].identifiers


def test_count_question_gives_the_model_every_matching_title(api, ollama, session_id):
    ollama.reply("There are 18 ADRs.", model="main-model:1b")
    reply = ask(api, session_id, "How many ADRs are there?")
    system, user = prompt_of(ollama)
    assert "<corpus>" in user
    assert "<corpus> section lists documents" in system
    assert "18 of them are ADR documents" in user
    assert all(adr_corpus.adr_title(n) in user for n in adr_corpus.ADR_NUMBERS)
    st = corpus_stage(reply)
    assert (st["kind"], st["matched"], st["entries"]) == ("count", 18, 18)
    assert 0 < st["corpus_chars"] <= 12_000
    assert reply["answer"] == "There are 18 ADRs."


def test_list_question_in_spanish_gives_every_principle(api, ollama, session_id):
    ollama.reply("Estos son los principios…", model="main-model:1b")
    reply = ask(api, session_id, "Lista todos los principios de arquitectura")
    _, user = prompt_of(ollama)
    assert all(adr_corpus.principle_title(n) in user for n in adr_corpus.PRINCIPLE_NUMBERS)
    assert corpus_stage(reply)["kind"] == "enumerate"


def test_existence_of_a_missing_id_carries_the_manifest_and_is_not_invented(api, ollama, session_id):
    ollama.reply("No, ADR.0050 does not exist.", model="main-model:1b")
    reply = ask(api, session_id, "Does ADR.0050 exist?")
    _, user = prompt_of(ollama)
    assert "No document has the identifier ADR-50." in user
    assert all(adr_corpus.adr_title(n) in user for n in adr_corpus.ADR_NUMBERS)
    st = corpus_stage(reply)
    assert (st["kind"], st["missing"]) == ("existence", ["adr-50"])
    assert not any("0050" in s["doc_id"] for s in reply["sources"])  # no source pretends to be it


def test_a_named_document_arrives_whole_and_first(api, ollama, session_id, corpus_index):
    ollama.reply("ADR.12 is accepted [1].", model="main-model:1b")
    reply = ask(api, session_id, "Who approved ADR.0012 and what is its status?")
    _, user = prompt_of(ollama)
    sources = reply["sources"]
    table = connect(corpus_index.index.uri).open_table(corpus_index.index.table)
    n_chunks = table.count_rows(f"doc_id = '{ADR_12}'")
    assert [s["doc_id"] for s in sources[:n_chunks]] == [ADR_12] * n_chunks  # every chunk, first
    assert sources[n_chunks]["doc_id"] == ADR_12.replace("0012-", "0012D-")  # then its approval record
    for h in ("Context and Problem Statement", "Considered Options", "Decision Outcome", "Consequences"):
        assert f"— {h}" in user
    assert user.index("[1] Use sign convention for current") < user.index("Approvers | Architect 12")
    assert "ADR.12 — Use sign convention for current (status: accepted" in user  # its front-matter fields
    st = corpus_stage(reply)
    assert (st["kind"], st["found_by"], st["documents"][0]) == ("document", "identifier", ADR_12)
    assert st["document_chunks"] == n_chunks + 1


def test_streaming_carries_the_corpus_too(api, ollama, session_id):
    ollama.reply("18.", model="main-model:1b")
    body = {"session_id": session_id, "message": "How many ADRs are there?", "query_type": "RETRIEVAL"}
    with httpx.stream("POST", api + "/v1/ask/stream", json=body, timeout=30) as resp:
        lines = [line for line in resp.iter_lines() if line.startswith("data:")]
    done = json.loads(lines[-1][5:])
    assert corpus_stage(done)["kind"] == "count"
    _, user = prompt_of(ollama)
    assert all(adr_corpus.adr_title(n) in user for n in adr_corpus.ADR_NUMBERS)


def test_the_state_machine_tasks_pass_ids_and_the_answer_task_fetches_the_text(llm, ollama, session_id):
    ollama.reply("ADR.12 [1].", model="main-model:1b")
    retrieving = build_engine(llm, client("dynamodb", llm))
    answering = build_engine(llm, client("dynamodb", llm))  # another process: nothing cached from retrieve
    request = {"session_id": session_id, "message": "Tell me about ADR-12", "query_type": "RETRIEVAL"}
    state = msgspec.to_builtins(tasks.retrieve(retrieving, tasks.classify(retrieving, tasks.execution(request))))
    payload = json.dumps(state)
    assert len(payload) < STEP_FUNCTIONS_LIMIT // 8
    assert state["corpus"]["documents"][0] == ADR_12
    answer = msgspec.to_builtins(tasks.answer(answering, tasks.decode(json.loads(payload), tasks.CaughtTurn)))
    assert answer["sources"][0]["doc_id"] == ADR_12
    _, user = prompt_of(ollama)
    assert "Decision Outcome" in user


def test_the_retrieve_function_api_returns_the_corpus_match(llm, session_id):
    engine = build_engine(llm, client("dynamodb", llm))
    request = {"session_id": session_id, "message": "How many principles are there?", "query_type": "RETRIEVAL"}
    state = msgspec.to_builtins(tasks.classify(engine, tasks.execution(request)))
    with serve(retrieve_app(engine)) as base:
        r = httpx.post(base + "/v1/retrieve", json=state, timeout=30)
    assert r.status_code == 200, r.text
    corpus = r.json()["corpus"]
    assert (corpus["kind"], corpus["matched"], len(corpus["entries"])) == ("count", 31, 31)


def test_without_a_model_the_count_and_list_come_from_the_manifest(corpus_index, session_id):
    engine = build_engine(corpus_index, client("dynamodb", corpus_index))  # OLLAMA_HOST refuses: no model
    count = engine.ask(
        tasks.decode({"session_id": session_id, "message": "How many ADRs are there?"}, tasks.AskRequest)
    )
    assert "llm_unavailable" in count.degraded
    assert "There are 18 ADR documents" in count.answer
    assert "manifest" in count.answer
    listing = engine.ask(
        tasks.decode(
            {"session_id": f"{session_id}-2", "message": "List all principles", "query_type": "RETRIEVAL"},
            tasks.AskRequest,
        )
    )
    assert all(adr_corpus.principle_title(n) in listing.answer for n in adr_corpus.PRINCIPLE_NUMBERS)
    assert "31" in listing.answer


def test_the_manifest_lives_beside_an_s3_index(base_settings, embedder, tmp_path):
    s3 = client("s3", base_settings)
    s = base_settings.with_(index={"uri": f"s3://{base_settings.aws.bucket}/corpus-index"})
    ingest(adr_corpus.write(tmp_path), s, embedder, progress=False, s3=s3)
    entries = manifest.read(connect(s.index.uri, s.storage_options()), s.index.table)
    assert len(entries) == 18 * 2 + 31 + 1


def test_a_code_request_that_says_list_is_not_a_corpus_question(api, ollama, session_id):
    ollama.reply("def list_documents(): ...", model="main-model:1b")
    body = {
        "session_id": session_id,
        "message": "Write a Python function to list all documents",
        "query_type": "CODE_GENERATION",
    }
    r = httpx.post(api + "/v1/ask", json=body, timeout=30)
    assert r.status_code == 200, r.text
    assert "corpus" not in [s["name"] for s in r.json()["trace"]["stages"]]
    _, user = prompt_of(ollama)
    assert "<corpus>" not in user
