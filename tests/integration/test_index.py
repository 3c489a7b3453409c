"""Index lifecycle through real LanceDB: local directory and S3 on the moto server."""

from __future__ import annotations

import shutil

import pytest

from assist.aws.clients import client
from assist.build.run import ingest
from assist.index.store import IndexUnavailable, open_table
from assist.retrieve.search import Retriever
from tests.conftest import DOCS

CONFIDENCES = {"very_high", "high", "medium", "low", "speculative", "none"}

pytestmark = pytest.mark.integration


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "limits.md").write_text(
        "# Rate limits\n\n## Burst window\n\nThe burst window allows 50 calls per second.\n"
    )
    (root / "keys.md").write_text("# API keys\n\n## Rotation\n\nRotate keys every 90 days with `rotateKey`.\n")
    return root


def test_reingest_is_incremental_by_content(corpus, base_settings, embedder, tmp_path):
    s = base_settings.with_(index={"uri": str(tmp_path / "idx")})
    first = ingest(corpus, s, embedder, progress=False)
    assert (first.added_docs, first.unchanged_docs) == (2, 0)
    again = ingest(corpus, s, embedder, progress=False)
    assert (again.added_docs, again.removed_docs, again.unchanged_docs) == (0, 0, 2)

    (corpus / "keys.md").write_text("# API keys\n\n## Rotation\n\nRotate keys every 30 days.\n")
    (corpus / "limits.md").unlink()
    (corpus / "webhooks.md").write_text("# Webhooks\n\nWebhooks retry five times.\n")
    third = ingest(corpus, s, embedder, progress=False)
    assert (third.added_docs, third.removed_docs, third.unchanged_docs) == (2, 1, 0)
    table = open_table(s, embedder)
    rows = table.search().select(["doc_id", "text"]).limit(None).to_list()
    assert sorted({r["doc_id"] for r in rows}) == ["keys", "webhooks"]
    assert any("30 days" in r["text"] for r in rows)
    assert not any("90 days" in r["text"] for r in rows)


def test_search_finds_the_right_section_and_handles_hostile_text(corpus, base_settings, embedder, tmp_path):
    s = base_settings.with_(index={"uri": str(tmp_path / "idx")})
    ingest(corpus, s, embedder, progress=False)
    r = Retriever(open_table(s, embedder), embedder)
    top = r.search("how many calls per second in a burst?", k=2)
    assert top.chunks[0].doc_id == "limits"
    for hostile in ['"unbalanced', "-", "rotate's key", "AND OR NOT (", "***", "a:b OR", "'"]:
        result = r.search(hostile, k=2)
        assert result.confidence in CONFIDENCES
        assert result.chunks or result.suggestions, f"{hostile!r}: a true miss still suggests something"


def test_missing_index_is_a_clear_error(base_settings, embedder, tmp_path):
    with pytest.raises(IndexUnavailable, match="assist index docs"):
        open_table(base_settings.with_(index={"uri": str(tmp_path / "nothing")}), embedder)


def test_index_on_s3_via_the_moto_server(base_settings, embedder, tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs, ignore=shutil.ignore_patterns("adr"))
    s = base_settings.with_(index={"uri": "s3://assist-data/test-index"})
    s3 = client("s3", s)
    stats = ingest(docs, s, embedder, progress=False, s3=s3)
    assert stats.chunks > 20
    assert ingest(docs, s, embedder, progress=False, s3=s3).changed is False
    result = Retriever(open_table(s, embedder), embedder).search("Which environment variable sets the light model?")
    assert result.chunks
    assert "configuration" in {c.doc_id for c in result.chunks}


def test_the_first_use_builds_a_missing_index_and_leaves_an_existing_one(base_settings, embedder, tmp_path):
    from assist.build.run import ensure_index

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Quotas\n\nEach plan has a monthly quota of calls.\n")
    s = base_settings.with_(index={"uri": str(tmp_path / "index")})
    built = []
    stats = ensure_index(s, lambda: built.append(1) or embedder, docs)
    assert stats is not None
    assert stats.chunks >= 1
    assert open_table(s, embedder).count_rows() == stats.chunks
    (docs / "b.md").write_text("# Later\n\nAdded after the first use.\n")
    assert ensure_index(s, lambda: built.append(1) or embedder, docs) is None  # present: `assist index` refreshes
    assert built == [1]  # the embedder is built only when there is something to index
