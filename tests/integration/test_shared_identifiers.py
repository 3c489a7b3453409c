"""One Manifest, one rule for identifier keys (ADR 0062), through the real parts: a corpus ingested into
LanceDB with the real embedder, the retriever, the corpus answer's `<corpus>` section and the MCP server
driven by the real `mcp` client. A key a few documents share names the same first document everywhere;
a key more than three documents share names none of them anywhere."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from assist.answer.corpus import section
from assist.api.mcp_server import build_server
from assist.ask.build import build_engine, lazy_corpus, lazy_retriever
from assist.retrieve.corpus import recognize

pytestmark = pytest.mark.integration

#: two documents carry ADR-8 (a decision and a later note on it); five carry RFC-7 (a topic, not a name)
DOCS = {
    "decisions/0008-use-openapi-contracts.md": "---\nnav_order: ADR.8\n---\n# Use OpenAPI contracts first\n\n"
    "Every HTTP API starts from an OpenAPI contract before any code is written.\n",
    "notes/adr-8-review.md": "---\nid: ADR-8\n---\n# A review of the contract decision\n\n"
    "Two years on, contract-first still holds; the linter runs in CI.\n",
    "decisions/0009-use-kafka.md": "---\nnav_order: ADR.9\n---\n# Use Kafka for grid events\n\n"
    "Grid events are published on Kafka topics so that consumers can replay them.\n",
    **{
        f"guides/guide-{n}.md": f"---\nid: RFC-7\n---\n# Guide {n} on HTTP caching\n\nCaching rule number {n}.\n"
        for n in range(5)
    },
}


@pytest.fixture(scope="module")
def shared_index(base_settings, embedder, tmp_path_factory):
    from assist.build.run import ingest

    root = tmp_path_factory.mktemp("shared-corpus")
    for path, text in DOCS.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    s = base_settings.with_(index={"uri": str(tmp_path_factory.mktemp("shared-index"))})
    ingest(root, s, embedder, progress=False)
    return s


def mcp_documents(settings, names: list[str]) -> list[dict]:
    server = build_server(build_engine(settings))

    async def main() -> list[dict]:
        async with Client(server) as client:
            return [(await client.call_tool("get_document", {"doc_id": n})) for n in names]

    return [{"error": r.is_error, **(r.structured_content or {})} for r in anyio.run(main)]


@pytest.mark.parametrize("question", ["What does ADR-8 decide?", "status of adr 0008", "tell me about ADR.8"])
def test_a_key_a_few_documents_share_names_the_same_first_document_everywhere(shared_index, question):
    retriever = lazy_retriever(shared_index)()
    assert sorted(retriever.catalog().keys["adr-8"]) == [
        "decisions/0008-use-openapi-contracts",
        "notes/adr-8-review",
    ]
    top = retriever.search(question, k=5).chunks[0]
    assert top.found_by[0] == "identifier"

    corpus = lazy_corpus(shared_index)()
    match = recognize(question, lambda: corpus, shared_index.retrieve.corpus_chars)
    assert match is not None
    assert match.kind == "document"
    assert match.documents[0] == top.doc_id
    lines = section(match, corpus.by_id).splitlines()
    assert corpus.by_id[top.doc_id].title in lines[2]  # the first entry after the header facts

    (doc,) = mcp_documents(shared_index, ["ADR-8"])
    assert not doc["error"]
    assert doc["doc_id"] == top.doc_id


def test_a_key_more_than_three_documents_share_names_none_of_them_anywhere(shared_index):
    retriever = lazy_retriever(shared_index)()
    assert len(retriever.catalog().keys["rfc-7"]) == 5
    result = retriever.search("What does RFC-7 say?", k=5)
    assert all("identifier" not in c.found_by for c in result.chunks)

    corpus = lazy_corpus(shared_index)()
    match = recognize("What does RFC-7 say?", lambda: corpus, shared_index.retrieve.corpus_chars)
    assert match is None or (match.kind != "document" and not match.missing)

    by_key, by_id = mcp_documents(shared_index, ["RFC-7", "guides/guide-3"])
    assert by_key["error"]
    assert (by_id["error"], by_id["doc_id"]) == (False, "guides/guide-3")


def test_the_manifest_follows_the_index_a_reader_opens(shared_index, base_settings, embedder, tmp_path):
    """Cached per index location and manifest version: another index, or a new build of the same one, is
    read anew (the seam a warm reader refreshing the live index goes through)."""
    from assist.build.run import ingest
    from assist.index.store import connect
    from assist.retrieve.manifest import load

    db = connect(shared_index.index.uri)
    first = load(db, shared_index.index.uri, shared_index.index.table)
    assert first is load(db, shared_index.index.uri, shared_index.index.table)  # read once

    root = tmp_path / "docs"
    root.mkdir()
    (root / "adr-8-other.md").write_text("---\nid: ADR-8\n---\n# Another corpus's ADR-8\n\nSomething else.\n")
    other = base_settings.with_(index={"uri": str(tmp_path / "index")})
    ingest(root, other, embedder, progress=False)
    switched = load(connect(other.index.uri), other.index.uri, other.index.table)
    assert switched is not None
    assert switched.keys["adr-8"] == ("adr-8-other",)

    (root / "adr-9.md").write_text("---\nid: ADR-9\n---\n# A ninth decision\n\nAdded later.\n")
    ingest(root, other, embedder, progress=False)
    rebuilt = load(connect(other.index.uri), other.index.uri, other.index.table)
    assert rebuilt is not switched
    assert rebuilt.owners("adr-9") == ("adr-9",)
