"""Query-adaptive retrieval through real LanceDB and the real embedder: fusion against LanceDB's own RRF,
four defects found in review (ADR 0020), cold-embedder degradation, never-zero, the index lifecycle."""

from __future__ import annotations

import time

import numpy as np
import pytest

from assist.aws.clients import client
from assist.build.run import ingest
from assist.embed.base import EmbedderError
from assist.index.chunking import DocChunk
from assist.index.lock import LOCK_NAME, IndexBusy, writer_lease
from assist.index.scope import KEYS as SCOPE_KEYS
from assist.index.store import FTS_COLUMN, ChunkRow, connect, open_table, refresh_indexes, schema
from assist.retrieve import strategies as st
from assist.retrieve.analysis import analyze
from assist.retrieve.fusion import WeightedRRFReranker
from assist.retrieve.search import Retriever, SearchOptions

pytestmark = pytest.mark.integration


class SlowOnce:
    """The real embedder behind a delay on its first call: a cold model (docs/retrieval.md)."""

    def __init__(self, inner, delay_s: float) -> None:
        self.inner, self.delay_s, self.id, self.dim, self.calls = inner, delay_s, inner.id, inner.dim, 0

    def embed(self, texts):
        self.calls += 1
        if self.calls == 1:
            time.sleep(self.delay_s)
        return self.inner.embed(texts)


class Down:
    """An embedder whose service is gone."""

    def __init__(self, inner) -> None:
        self.id, self.dim = inner.id, inner.dim

    def embed(self, texts):
        raise EmbedderError("connection refused")


@pytest.fixture(scope="module")
def table(docs_index, embedder):
    return open_table(docs_index, embedder)


def test_equal_weights_reproduce_lancedb_rrf_exactly(table, embedder):
    from lancedb.rerankers import RRFReranker

    q = "how does the engine stream answers"
    vec = embedder.embed([q])[0]

    def hybrid(reranker):
        query = table.search(query_type="hybrid", fts_columns=FTS_COLUMN).vector(vec).text("engine stream answers")
        return [(r["id"], r["_relevance_score"]) for r in query.rerank(reranker).select(["id"]).limit(20).to_list()]

    theirs, ours = hybrid(RRFReranker()), hybrid(WeightedRRFReranker(0.5, 0.5))
    assert dict(ours) == dict(theirs)
    assert [s for _, s in ours] == [s for _, s in theirs]
    assert [i for i, _ in hybrid(WeightedRRFReranker(0.95, 0.05))] != [i for i, _ in ours]


def test_the_fusion_weights_reach_the_fusion(table, embedder):
    """Peer audit: the weights never reached the fusion (a default overwrote them)."""
    q = "how are answers streamed to the client"
    semantic = Retriever(table, embedder, SearchOptions(semantic_weight=0.95)).search(q, k=8)
    lexical = Retriever(table, embedder, SearchOptions(semantic_weight=0.05)).search(q, k=8)
    assert semantic.weights["semantic"] == 0.95
    assert lexical.weights == {"semantic": 0.05, "lexical": 0.95, "exact": 0.2}
    assert [c.id for c in semantic.chunks] != [c.id for c in lexical.chunks]
    default = Retriever(table, embedder).search(q, k=8)
    assert default.query_kind == "conceptual"
    assert default.weights == {"semantic": 0.5, "lexical": 0.5, "exact": 0.2}


def test_an_apostrophe_is_searched_as_words_not_as_a_quote(table, embedder):
    result = Retriever(table, embedder).search("what's the engine's light model?", k=3)
    assert result.query_kind != "exact_quote"
    assert result.strategies["fts_relaxed"] > 0
    assert result.chunks


def test_bm25_lists_are_best_first(table):
    hits = st.lexical(analyze("session memory window"))[-1].run(table, 20)
    scores = [h.score for h in hits]
    assert len(scores) > 3
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("hostile", ["-", "--", "- -", '"', "AND OR NOT (", "a:b", "*", "'"])
def test_operators_and_a_bare_hyphen_never_crash_the_fts_query(table, embedder, hostile):
    """Peer audit: a bare hyphen crashed the FTS query."""
    result = Retriever(table, embedder).search(hostile, k=3)
    assert result.chunks or (result.confidence == "none" and result.suggestions)


def test_quoted_phrase_is_matched_as_a_phrase(table, embedder):
    result = Retriever(table, embedder).search('where does it say "the light slot"', k=5)
    assert result.query_kind == "exact_quote"
    assert result.strategies["fts_exact"] > 0
    top = result.chunks[0]
    assert "fts_exact" in top.found_by
    assert "light slot" in top.text.lower()


def test_cold_embedder_degrades_to_full_text_and_the_next_search_recovers(table, embedder):
    slow = SlowOnce(embedder, delay_s=1.0)
    r = Retriever(table, slow, SearchOptions(embed_timeout_s=0.3))
    started = time.perf_counter()
    first = r.search("which variable sets the light model", k=5)
    assert time.perf_counter() - started < 0.9, "the search does not wait for the cold embedder"
    assert first.degraded == ["embedder_timeout"]
    assert "vector" not in first.strategies
    assert first.chunks
    assert all(set(c.found_by) <= {"fts_exact", "fts_relaxed"} for c in first.chunks)
    time.sleep(0.8)  # the cold call finishes in the background
    second = r.search("which variable sets the light model", k=5)
    assert second.degraded == []
    assert second.strategies["vector"] > 0


def test_embedder_failure_degrades_and_says_so(table, embedder):
    result = Retriever(table, Down(embedder)).search("how are sessions stored", k=3)
    assert result.degraded == ["embedder_unavailable"]
    assert result.chunks
    assert result.confidence in {"high", "low"}  # never very_high without the vector strategy


def test_never_zero_fallback_cascade(table, embedder):
    r = Retriever(table, Down(embedder))
    typo = r.search("embeddr tmeout", k=3)
    assert (typo.confidence, typo.strategies["fts_relaxed"]) == ("low", 0)
    assert typo.strategies["fts_fuzzy"] > 0
    assert "embedder" in typo.chunks[0].id
    partial = r.search("OllamaHostz", k=3)
    assert partial.confidence == "speculative"
    assert partial.note.startswith("partial word matching")
    miss = r.search("zzqxv wqpl", k=3)
    assert miss.chunks == []
    assert miss.confidence == "none"
    assert miss.note
    assert len(miss.suggestions) == 5


def test_floor_and_confidence_with_the_vector(table, embedder):
    r = Retriever(table, embedder)
    good = r.search("OLLAMA_MODEL_NAME_CONVERSATIONAL", k=3)
    assert good.query_kind == "identifier"
    assert good.confidence == "very_high"
    assert good.chunks[0].agreement == 3
    nonsense = r.search("zzqxv wqpl", k=3, analysis=None)
    assert nonsense.confidence in {"medium", "low"}  # the vector always finds neighbours; never "very_high"


def test_vector_index_appears_at_its_threshold_and_no_row_stays_unindexed(base_settings, tmp_path):
    class Space:
        id, dim = "test:random", 16

    rng = np.random.default_rng(1)
    rows = [
        ChunkRow.of(
            DocChunk(
                id=f"c{i}:0", doc_id=f"c{i}", title="t", heading="", source="", ordinal=0, text=f"word{i % 7} text"
            ),
            doc_hash="",
            vector=(v := rng.normal(size=16).astype(np.float32)) / np.linalg.norm(v),
        ).row()
        for i in range(400)
    ]
    db = connect(str(tmp_path / "idx"))
    table = db.create_table("chunks", data=rows[:300], schema=schema(Space()))
    refresh_indexes(table, base_settings.with_(index={"vector_index_rows": 1000}))
    # the scope columns' bitmaps (ADR 0121) are there from the start; the vector index waits for its threshold
    assert sorted(ix.columns[0] for ix in table.list_indices()) == sorted([FTS_COLUMN, *SCOPE_KEYS])
    table.add(rows[300:])
    refresh_indexes(table, base_settings.with_(index={"vector_index_rows": 350}))
    indices = {ix.columns[0]: ix.name for ix in table.list_indices()}
    assert set(indices) == {FTS_COLUMN, "vector", *SCOPE_KEYS}
    for name in indices.values():
        assert table.index_stats(name).num_unindexed_rows == 0
    assert table.search(rows[0]["vector"]).limit(1).to_list()[0]["id"] == "c0:0"


def test_an_fts_index_is_never_built_on_an_empty_table(base_settings, tmp_path):
    class Space:
        id, dim = "test:random", 4

    table = connect(str(tmp_path / "idx")).create_table("chunks", schema=schema(Space()))
    refresh_indexes(table, base_settings.with_(index={"vector_index_rows": 1}))
    assert table.list_indices() == []


def test_one_writer_at_a_time_locally(base_settings, embedder, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe alpha section.\n")
    s = base_settings.with_(index={"uri": str(tmp_path / "idx")})
    with writer_lease(s.index.uri), pytest.raises(IndexBusy, match="another writer"):
        ingest(docs, s, embedder, progress=False)
    assert ingest(docs, s, embedder, progress=False).added_docs == 1  # released, so the next writer goes on
    assert not (tmp_path / "idx" / LOCK_NAME).exists()


def test_one_writer_at_a_time_on_s3_and_a_stale_lease_is_taken_over(base_settings, embedder, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe alpha section.\n")
    s = base_settings.with_(index={"uri": f"s3://{base_settings.aws.bucket}/lease-{tmp_path.name}"})
    s3 = client("s3", s)
    with writer_lease(s.index.uri, s3), pytest.raises(IndexBusy):
        ingest(docs, s, embedder, progress=False, s3=s3)
    with writer_lease(s.index.uri, s3, ttl_s=-1):  # a writer that died: its lease has expired
        assert ingest(docs, s, embedder, progress=False, s3=s3).added_docs == 1
    assert Retriever(open_table(s, embedder), embedder).search("alpha section", k=1).chunks[0].doc_id == "a"


def test_the_rerank_hook_sees_the_query_and_orders_the_result(table, embedder):
    seen = []

    def reverse(query, chunks):
        seen.append(query)
        return list(reversed(chunks))

    q = "how are sessions stored"
    plain = [c.id for c in Retriever(table, embedder).search(q, k=4).chunks]
    hooked = [c.id for c in Retriever(table, embedder, rerank=reverse).search(q, k=4).chunks]
    assert seen == [q]
    assert hooked == list(reversed(plain))


def test_mmr_reads_vectors_only_when_on_and_diversifies(table, embedder):
    q = "how does streaming work"
    plain = Retriever(table, embedder, SearchOptions(mmr_lambda=1.0)).search(q, k=5).chunks
    diverse = Retriever(table, embedder, SearchOptions(mmr_lambda=0.3)).search(q, k=5).chunks
    assert len(diverse) == len(plain) == 5
    assert diverse[0].id == plain[0].id  # the most relevant chunk always leads
    assert [c.id for c in diverse] != [c.id for c in plain]
    # what MMR trades relevance for: passages less alike (distinct documents are only a proxy of it, which the
    # docs/ corpus moves as it grows: two unlike passages of one document are diverse too)
    assert closest_pair(table, diverse) < closest_pair(table, plain)


def closest_pair(table, chunks) -> float:
    """The highest cosine similarity between two of these chunks, from the vectors the index stores."""
    ids = {c.id for c in chunks}
    vectors = np.array([r["vector"] for r in table.to_arrow().select(["id", "vector"]).to_pylist() if r["id"] in ids])
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return float(np.max((unit @ unit.T)[np.triu_indices(len(unit), 1)]))


def test_passages_returned_lately_are_fetched_from_memory_as_cited_sources(table, embedder):
    retriever = Retriever(table, embedder)
    found = retriever.search("how does streaming work", k=3).chunks
    ids = [c.id for c in found]
    retriever._table = None  # from here any index read would fail: the lookup must not need one
    cited = retriever.fetch(list(reversed(ids)))
    assert [c.id for c in cited] == list(reversed(ids))
    assert [c.text for c in cited] == [c.text for c in reversed(found)]
    assert all(c.score == 0.0 and c.found_by == ["memory"] for c in cited)
    assert found[0].found_by != ["memory"], "the search's own chunks are left as they were"


def test_rank_orders_documents_as_the_search_does_without_reading_passages(table, embedder):
    r = Retriever(table, embedder)
    q = "how are answers streamed to the client"
    assert r.rank(q, 10) == [c.doc_id for c in r.search(q, k=10).chunks]
