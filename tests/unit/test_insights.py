"""The insights page's pure parts: k-means on unit vectors, cluster labels, the page's HTML (docs/insights.md)."""

from __future__ import annotations

import itertools
import re
from collections import Counter

import msgspec
import numpy as np
import pytest

from assist.insights.gaps import clusters, kmeans, label
from assist.insights.gather import Gathered, scope_of
from assist.insights.render import DATE_W, page
from assist.sessions.store import HistoryRecord, records


class TopicEmbedder:
    """Messages about invoices point one way, about Android another (with a little noise)."""

    def embed(self, texts: list[str]) -> np.ndarray:
        rng = np.random.default_rng(1)
        out = []
        for t in texts:
            base = np.array([1.0, 0, 0]) if "invoice" in t.lower() else np.array([0, 1.0, 0])
            out.append(base + rng.normal(0, 0.05, 3))
        return np.array(out)


def test_kmeans_finds_two_separated_groups_the_same_way_twice():
    rng = np.random.default_rng(0)
    x = np.vstack([rng.normal([5, 0], 0.1, (20, 2)), rng.normal([0, 5], 0.1, (10, 2))])
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    a, _ = kmeans(x, 2)
    b, _ = kmeans(x, 2)
    assert sorted(Counter(a.tolist()).values()) == [10, 20]
    assert len(set(a[:20].tolist())) == len(set(a[20:].tolist())) == 1
    assert (a == b).all()


def test_a_cluster_is_labelled_by_its_distinctive_words():
    members = ["export invoices to SAP", "SAP invoice export"]
    df = Counter({"export": 2, "invoices": 1, "sap": 2, "invoice": 1, "android": 5})
    assert label(members, df, 7).split(" · ")[:2] == ["export", "sap"]


def test_gap_clusters_are_sized_labelled_redacted_and_show_three_distinct_examples():
    qs = [f"invoice export {i} mail a{i}@corp.example" for i in range(5)] + ["android offline"] * 4
    gaps = clusters(qs, TopicEmbedder(), k=2)
    assert [g.size for g in gaps] == [5, 4]
    assert set(gaps[0].label.split(" · ")) == {"export", "invoice", "mail"}  # not "email" from <EMAIL>
    assert len(gaps[0].examples) == 3
    assert all("<EMAIL>" in q for q in gaps[0].examples)
    assert gaps[1].examples == ["android offline"]  # the same question asked four times is one example


def test_the_page_escapes_what_people_typed_and_needs_nothing_from_elsewhere():
    g = Gathered(days=1, since="2026-04-10T00:00:00.000+00:00", until="2026-04-11T00:00:00.000+00:00")
    item = {
        "created_at": "2026-04-10T10:00:00.000+00:00",
        "type": "RETRIEVAL",
        "layer": "llm",
        "message": "<script>alert(1)</script>",
        "retrieval_confidence": "none",
        "degraded": ["llm_timeout"],
    }
    g.entries = records([item], HistoryRecord)
    html = page(g, clusters([e.message for e in g.gaps()], TopicEmbedder()))
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert "llm_timeout" in html
    assert "100.0%" in html  # the LLM layer decided every question


def test_answers_the_docs_did_not_cover_count_as_gaps_by_reason():
    g = Gathered(days=1, since="2026-04-10T00:00:00.000+00:00", until="2026-04-11T00:00:00.000+00:00")
    base = {"created_at": "2026-04-10T10:00:00.000+00:00", "type": "RETRIEVAL", "layer": "embedding"}
    items = [
        {**base, "message": "a", "retrieval_confidence": "high", "uncertain": "out_of_scope"},
        {**base, "message": "b", "retrieval_confidence": "high", "uncertain": None},
        {**base, "message": "c", "retrieval_confidence": "none", "uncertain": "no_relevant_passage"},
    ]
    g.entries = records(items, HistoryRecord)
    assert [e.message for e in g.gaps()] == ["a", "c"]  # "a" had confidence high: only the verdict says it
    assert g.summary()["uncertain"] == {"out_of_scope": 1, "no_relevant_passage": 1}
    assert "<b>2</b>answered “not in the docs”</div>" in page(g, [])


def test_questions_and_gaps_break_down_by_the_scope_asked():
    g = Gathered(days=1, since="2026-04-10T00:00:00.000+00:00", until="2026-04-11T00:00:00.000+00:00")
    base = {"created_at": "2026-04-10T10:00:00.000+00:00", "type": "RETRIEVAL", "layer": "embedding"}
    v1, v2 = {"product": "cli", "version": "1"}, {"product": "cli", "version": "2"}
    rows = [
        {**base, "message": "plugin add", "scope": v1, "uncertain": "out_of_scope"},
        {**base, "message": "plugin list", "scope": v1, "uncertain": "out_of_scope"},
        {**base, "message": "config file", "scope": v1, "retrieval_confidence": "high"},
        {**base, "message": "invoice plugin", "scope": v2, "retrieval_confidence": "high"},
        {**base, "message": "invoice export", "scope": {"product": "cli"}, "uncertain": "out_of_scope"},
        {**base, "message": "invoice sap", "retrieval_confidence": "none"},
    ]
    g.entries = msgspec.convert(rows, list[HistoryRecord])
    assert g.summary()["scopes"] == {
        "cli/1": {"questions": 3, "gap_questions": 2},
        "cli/2": {"questions": 1, "gap_questions": 0},
        "cli/*": {"questions": 1, "gap_questions": 1},
        "*/*": {"questions": 1, "gap_questions": 1},
    }
    gaps = clusters([e.message for e in g.gaps()], TopicEmbedder(), k=2, scopes=[scope_of(e) for e in g.gaps()])
    assert {x.label: (x.size, x.scopes) for x in gaps} == {
        "plugin · add · list": (2, {"cli/1": 2}),
        "invoice · export · sap": (2, {"cli/*": 1, "*/*": 1}),
    }
    html = page(g, gaps)
    assert "questions per scope" in html
    assert "<li>cli/1 · 2 of 3</li>" in html
    assert "· 2 questions · cli/1 2<ul>" in html


def window(days: int) -> Gathered:
    """`days` days of questions, a few of each type a day, one rated up and one down."""
    from datetime import date, timedelta

    start = date(2026, 4, 1)
    g = Gathered(days=days, since=f"{start}T00:00:00.000+00:00", until=f"{start + timedelta(days)}T00:00:00.000+00:00")
    types = ["RETRIEVAL", "CODE_GENERATION", "CONVERSATIONAL", "PLATFORM"]
    items = [
        {"created_at": f"{start + timedelta(d)}T10:00:00.000+00:00", "type": types[(d + n) % 4], "layer": "rules"}
        for d in range(days + 1)
        for n in range(d % 5 + 1)
    ]
    items[0]["feedback"] = {"rating": "up", "at": items[0]["created_at"], "type": None}
    items[1]["feedback"] = {"rating": "down", "at": items[1]["created_at"], "type": None}
    g.entries = records(items, HistoryRecord)
    return g


@pytest.mark.parametrize(("days", "labelled"), [(7, 8), (30, None), (90, None)])
def test_the_days_axis_labels_never_overlap_and_name_the_newest_day(days, labelled):
    html = page(window(days), [])
    chart = html[html.index('aria-label="questions per day by type"') :].split("</svg>")[0]
    found = re.findall(r'<text x="([\d.]+)" y="\d+" text-anchor="middle">([^<]+)<', chart)
    labels = [(float(x), day) for x, day in found]
    assert labels[-1][1] == sorted(window(days).per_day())[-1][5:]
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(labels)]
    assert min(gaps) >= DATE_W, gaps  # an "MM-DD" label at 12 px is about 35 units wide
    if labelled:
        assert len(labels) == labelled  # a week: every day named


def test_ratings_are_drawn_not_left_to_emoji_fonts():
    html = page(window(7), [])
    assert "👍" not in html
    assert "👎" not in html
    assert re.search(r"<b>1 / 1</b><svg class=thumb[^>]*>.*?</svg> helpful / <svg class=thumb", html)
