"""ADR 0103's replay of absent-term gates on kept evidence, and its index-time estimates, on made-up rows."""

from __future__ import annotations

import numpy as np

from assist.offline.retrieve.verdict_fit import Evidence
from assist.offline.retrieve.verdict_gates import (
    answerable_salient,
    auc,
    leave_one_out,
    naming,
    percentiles,
    replay,
    salient,
    subject,
)
from assist.retrieve.verdict import Weights

WEIGHTS = Weights(threshold=0.5, centrality=0.0, coverage=0.0, absent=0.0, named=0.0)
WORDS = {"underneath", "disk", "the"}  # the embedder's one-piece words, here


def row(group: str, text: str, unknown: tuple[str, ...] = (), similarity: float = 0.9, named: float = 0.0):
    signals = (similarity, 0.0, 1.0, 0.0, named)
    return Evidence(group, "q.jsonl", text, text, "high", None, signals, unknown)


def test_the_subject_is_what_more_than_the_share_of_documents_say():
    corpus = {str(i): ("Vite guide", f"page {i} about the build") for i in range(4)}
    corpus["4"] = ("Other", "the build")
    assert subject(corpus) == {"vite", "guide", "page", "build"}  # `about`, `the`: stop words
    assert subject(corpus, share=0.9) == {"build"}


def test_a_salient_term_is_a_name_or_not_one_word_of_the_embedder():
    assert salient("mypy", set(), WORDS)  # not a word: a tool
    assert not salient("underneath", set(), WORDS)  # an ordinary word the docs happen to lack
    assert salient("underneath", {"underneath"}, WORDS)  # written as a name


def test_a_gate_flags_only_questions_naming_the_subject_and_keeps_the_verdicts_own_flags():
    rows = [
        row("absent", "How do I use Vite with Angular?", ("angular",), named=1.0),
        row("answerable", "How do I test with Angular?", ("angular",), named=1.0),  # no subject named
        row("answerable", "Why does Vite not use it underneath?", ("underneath",)),
        row("answerable", "Vite build", similarity=0.1),  # the verdict's own flag
        Evidence("off-topic", "o.jsonl", "x", "x", "none", "no_relevant_passage", None),
    ]
    out = replay(rows, WEIGHTS, {"vite"}, WORDS)
    assert out["calibrated (ADR 0096)"] == {"answerable": (1, 3), "off-topic": (1, 1), "absent": (0, 1)}
    assert out["named + subject"]["absent"] == (1, 1)
    assert out["named + subject"]["answerable"] == (1, 3)
    assert out["named alone"]["answerable"] == (2, 3)
    assert out["any absent term + subject"]["answerable"] == (2, 3)  # "underneath"
    assert out["salient + subject"]["answerable"] == (1, 3)
    assert naming(rows, {"vite"}) == {"absent": 1, "answerable": 2}
    assert answerable_salient(rows, WORDS) == (1, 3)  # Angular, were the subject named


def test_leave_one_out_counts_a_probe_whose_term_only_its_own_section_has():
    corpus = {
        "a": ("Tantivy segments", "Every segment that Tantivy writes is merged later by the `merge_policy` setting."),
        "b": ("Lance fragments", "Every fragment that Lance writes is compacted later by the `compact_files` call."),
        "c": ("Lance segments", "Every segment that Lance writes is compacted later by the `compact_files` call."),
    }
    out = leave_one_out(corpus, {"every", "segment", "segments", "writes", "later"})
    # a's probes name Tantivy or merge_policy, which b and c lack; b's and c's share all but fragment(s)
    assert out["probes"] >= 3
    assert out["name"] > 0.0
    assert 0.0 < out["any"] < 1.0


def test_density_percentiles_and_auc():
    # the chunks' own nearest distances: 0.2, 0.04, 0.04
    chunks = np.asarray([[1.0, 0.0], [0.8, 0.6], [0.6, 0.8]])
    asked = np.asarray([[0.8, 0.6], [0.0, 1.0], [-1.0, 0.0]])  # on a chunk, 0.2 away, 1.6 away
    assert percentiles(chunks, asked, 1).tolist() == [0.0, 2 / 3, 1.0]
    assert auc(np.asarray([2.0, 3.0]), np.asarray([1.0])) == 1.0
    assert auc(np.asarray([1.0]), np.asarray([1.0])) == 0.5
