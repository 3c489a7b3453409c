"""Identifier-aware retrieval and hub damping (ADR 0038, 0040) on the made-up architecture corpus: real
LanceDB, the real embedder, the manifest written by the same ingest a user runs."""

from __future__ import annotations

import pytest

from assist.ask.build import lazy_retriever
from tests.support import adr_corpus

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def retriever(adr_index):
    return lazy_retriever(adr_index)()


def slug(n: int) -> str:
    return adr_corpus.adr_title(n).lower().replace(" ", "-").replace(".", "")


@pytest.mark.parametrize(
    ("doc", "spellings"),
    [
        # nav_order: ADR.12 in the front matter, file 0012-…
        (f"decisions/0012-{slug(12)}", ["ADR-12", "adr 0012", "ADR.0012", "What does ADR-012 decide?"]),
        # only the file name carries it: ADR-002-…
        (f"decisions/ADR-002-{slug(2)}", ["ADR-2", "adr 0002", "ADR.0002"]),
        # only the first heading: `# ADR-0027: …`
        (f"decisions/0027-{slug(27)}", ["ADR-27", "adr 027", "ADR.0027 status"]),
        # `id: ADR-0010` in the front matter
        (f"decisions/0010-{slug(10)}", ["ADR-10", "adr 0010", "ADR.10"]),
    ],
)
def test_a_named_document_comes_first_whatever_the_spelling(retriever, doc, spellings):
    for q in spellings:
        top = retriever.search(q, k=5).chunks[0]
        assert top.doc_id == doc, (q, [c.doc_id for c in retriever.search(q, k=5).chunks])
        assert top.found_by[0] == "identifier"


def test_an_approval_record_is_not_its_decision(retriever):
    top = retriever.search("ADR.12D", k=3).chunks[0]
    assert top.doc_id.startswith("decisions/0012D-")


def test_an_id_no_document_has_names_nothing(retriever):
    result = retriever.search("What does ADR-0050 decide?", k=5)
    assert all("identifier" not in c.found_by for c in result.chunks)


DECISIONS = {
    1: ("Use Kafka for grid events", "Grid events are published on Kafka topics so that consumers can replay them."),
    2: ("Use Postgres for the asset registry", "The asset registry is stored in Postgres with row level security."),
    3: ("Use OAuth2 for authentication", "Services authenticate users with OAuth2 and short lived tokens."),
    4: ("Use Terraform for infrastructure", "Infrastructure is declared in Terraform modules reviewed like code."),
    5: ("Use TLS 1.3 for all traffic", "All network traffic is encrypted with TLS 1.3, older versions are refused."),
    6: ("Use Rust for edge agents", "Edge agents are written in Rust for memory safety on small devices."),
    7: ("Use S3 for raw measurements", "Raw measurements land in S3 buckets partitioned by day."),
    8: ("Use OpenAPI contracts first", "Every HTTP API starts from an OpenAPI contract before code."),
}


@pytest.fixture(scope="module")
def overview_index(base_settings, embedder, tmp_path_factory):
    """Eight short decisions and an overview that links each and repeats its summary: the overview holds
    every question's words."""
    from assist.build.run import ingest

    root = tmp_path_factory.mktemp("hub-corpus")
    (root / "decisions").mkdir()
    lines = []
    for n, (title, summary) in DECISIONS.items():
        stem = f"{n:04d}-{title.lower().replace(' ', '-').replace('.', '')}"
        (root / "decisions" / f"{stem}.md").write_text(
            f"---\nnav_order: ADR.{n}\n---\n# {title}\n\n## Context\n\nWe needed a decision. {summary}\n\n"
            f"## Decision\n\n{title}.\n\n## Consequences\n\nTeams follow it.\n"
        )
        lines.append(f"- [ADR.{n}](decisions/{stem}.md) {title}: {summary}")
    (root / "overview.md").write_text("# Architecture overview\n\nEvery decision in one place.\n\n" + "\n".join(lines))
    s = base_settings.with_(index={"uri": str(tmp_path_factory.mktemp("hub-index"))})
    ingest(root, s, embedder, progress=False)
    return s


def test_an_overview_linking_every_decision_is_a_hub_and_is_damped(overview_index):
    """Measured, not assumed: how often the overview takes one of the two first places (documents) for a
    question on one decision, with the default damping and with none (ADR 0040: 8 of 8 → 6 of 8)."""
    questions = [f"how is it decided that {s[0].lower()}{s[1:]}" for _, s in DECISIONS.values()]

    def overview_in_top_two(damping: float) -> int:
        r = lazy_retriever(overview_index.with_(retrieve={"hub_damping": damping}))()
        assert r.catalog().hubs == {"overview": 1.0}
        return sum("overview" in list(dict.fromkeys(c.doc_id for c in r.search(q, k=10).chunks))[:2] for q in questions)

    undamped = overview_in_top_two(0.0)
    assert undamped == len(questions), "the overview holds every question's words: it crowds in undamped"
    assert overview_in_top_two(overview_index.retrieve.hub_damping) < undamped


def test_the_registry_of_the_architecture_corpus_is_its_only_hub(retriever):
    hubs = retriever.catalog().hubs
    assert set(hubs) == {"decisions/index"}, hubs
