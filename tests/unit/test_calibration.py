"""The verdict's calibration at index time (ADR 0096), its pure parts: the probes made from sections, the
conformal rank and its finite-sample bound, the off-topic bank, and which threshold the verdict then uses."""

from __future__ import annotations

import math
import random

import pytest

from assist.commands.doctor import verdict_line
from assist.contracts import Scope
from assist.index.calibration import METHOD, Calibration
from assist.insights import render
from assist.insights.gather import Gathered
from assist.retrieve import calibrate as cb
from assist.retrieve.verdict import Weights, calibrated

SECTIONS = [
    cb.Section(
        f"page-{i}#part",
        f"Page {i}",
        f"Configuring the {word} cache",
        f"The {word} cache keeps recent results for an hour. Set `CACHE_{word.upper()}_TTL` to change how long it "
        f"keeps them, or run `assist cache clear --{word}` to empty it at once.",
    )
    for i, word in enumerate(["query", "answer", "session", "index", "model", "token", "export", "widget"])
]
WEIGHTS = Weights(threshold=0.3645, centrality=1.5, coverage=0.0, absent=0.25, named=0.7)


def test_probes_are_deterministic_bounded_and_name_their_section():
    first, again = cb.probes(SECTIONS, seed=7), cb.probes(list(SECTIONS), seed=7)
    assert first == again
    assert first != cb.probes(SECTIONS, seed=8)
    assert len(cb.probes(SECTIONS, limit=5)) == 5
    assert len(first) <= 3 * len(SECTIONS)
    by_section = {s.id: s for s in SECTIONS}
    assert {p.kind for p in first} == {"title", "sentence", "identifier", "keyword"}
    for p in first:
        assert p.section in by_section
        assert len({q.text.lower() for q in first}) == len(first)


def test_each_kind_of_probe_asks_about_its_section():
    rng = random.Random(1)
    s = SECTIONS[0]
    assert "Configuring the query cache" in cb._title_probe(s, rng)
    assert cb._sentence_probe(s, rng) == "What does the query cache keep?"
    ident = cb._identifier_probe(s, rng)
    assert "CACHE_QUERY_TTL" in ident or "--query" in ident
    # a sentence with no subject up front gives no probe, not "What is it?"
    for text in ("It is the slowest part of every request made to the server.", "On the other hand, if you run it."):
        assert cb._sentence_probe(cb.Section("x", "X", "", text), random.Random(0)) is None
    # a heading of a word or two is asked with its page's title; a web address is no identifier
    assert "Usage in Plugin API" in cb._title_probe(cb.Section("p#u", "Plugin API > Usage", "", ""), rng)
    assert cb._identifier_probe(cb.Section("w", "W", "", "See `e.g` and example.com for `true`."), rng) is None
    # a name typed alone: a capital mid-sentence, a symbol; not a word that opens a sentence
    words = cb.Section("k", "K", "", "Results vary. The engine runs on Docker with fp32 vectors.")
    assert {cb._keyword_probe(words, random.Random(i)).split()[-1] for i in range(20)} == {"Docker", "fp32"}


@pytest.mark.parametrize(("n", "j"), [(300, 10), (100, 2), (45, 1), (44, 0)])
def test_the_rank_is_the_largest_whose_excess_probability_stays_under_one_minus_confidence(n, j):
    assert cb.rank(n, 0.05, 0.9) == j
    assert cb.binomial_cdf(j - 1, n, 0.05) <= 0.1 < cb.binomial_cdf(j, n, 0.05)


def test_the_bound_is_where_the_rank_exceeds_with_probability_one_minus_confidence():
    u = cb.bound(300, 10, 0.9)
    assert 0.04 < u <= 0.05
    assert cb.binomial_cdf(9, 300, u) == pytest.approx(0.1, abs=1e-6)
    # over many draws of 300 uniform probe scores, the cut's true rate exceeds the bound about 10 % of the time
    rng = random.Random(3)
    over = sum(sorted(rng.random() for _ in range(300))[9] > u for _ in range(2000))
    assert 0.07 < over / 2000 < 0.13


def test_the_threshold_flags_rank_minus_one_probes_and_fixed_flags_count_first():
    scores = [i / 100 for i in range(300)]
    cut, j, flagged = cb.threshold(scores, 0.05, 0.9)
    assert (cut, j, flagged) == (0.09, 10, 9)
    # probes flagged whatever the threshold (no passage) are the lowest scores
    cut, _, flagged = cb.threshold([-math.inf] * 12 + scores[12:], 0.05, 0.9)
    assert cut == -math.inf
    assert flagged == 0
    assert cb.threshold(scores[:20], 0.05, 0.9)[1:] == (0, 0)


def test_the_bank_is_english_and_spanish_with_translations_and_a_licence():
    rows = cb.bank()
    header = " ".join(line for line in cb.BANK.read_text(encoding="utf-8").splitlines() if line.startswith("#"))
    assert "CC0" in header
    langs = {q.language for q in rows}
    assert langs == {"en", "es"}
    assert all(q.translation for q in rows if q.language == "es")
    assert len(rows) >= 100
    assert len({q.text for q in rows}) == len(rows)


def test_the_verdict_uses_a_calibration_only_for_the_weights_and_method_it_was_computed_for():
    c = Calibration(threshold=0.21, weights=cb.signature(WEIGHTS))
    assert calibrated(WEIGHTS, c).threshold == 0.21
    assert calibrated(WEIGHTS, c, on=False).threshold == 0.3645
    assert calibrated(WEIGHTS, None).threshold == 0.3645
    other = Weights(threshold=0.3645, centrality=1.0, coverage=0.3)
    assert calibrated(other, c).threshold == 0.3645
    old = Calibration(threshold=0.21, weights=cb.signature(WEIGHTS), method=METHOD + "-old")
    assert calibrated(WEIGHTS, old).threshold == 0.3645


def test_the_bank_cut_is_the_lowest_that_catches_its_share():
    scores = [i / 100 for i in range(100)]
    cut = cb.catching(scores, 0.9)
    assert sum(s < cut for s in scores) == 90
    assert sum(s < 0.89 for s in scores) < 90


def test_a_corpus_whose_probes_and_bank_conflict_is_raised_toward_the_bank_but_never_past_the_configured_cut():
    probes = [0.1 + i / 1000 for i in range(300)]
    assert cb.choose(0.25, 0.2, probes, 0.3645, 400) == (0.25, False, "")  # both goals hold: the probes' cut
    cut, conflict, why = cb.choose(0.1, 0.3, probes, 0.3645, 400)
    assert (cut, conflict) == (0.3, True)
    assert "catches less than 90%" in why
    assert cb.choose(0.1, 0.5, probes, 0.3645, 400)[:2] == (0.3645, True)  # no higher than the configured cut
    assert cb.choose(0.4, 0.5, probes, 0.3645, 400)[0] == 0.4  # nor lower than the probes' own
    small = cb.choose(0.4, 0.1, probes, 0.3645, 12)
    assert small[0] == 0.1  # under 30 sections: the configured cut, lowered to the lowest probe's score
    assert "under 30" in small[2]


def _sections_in(scope: Scope, n: int) -> list[cb.Section]:
    return [cb.Section(f"{cb.key(scope)}-{i}#s", "T", "H", "text", scope) for i in range(n)]


def test_a_scope_is_calibrated_apart_only_with_sections_enough_of_its_own_and_the_largest_first():
    shared = _sections_in(Scope(), 100)  # seen by every scope, but no scope's own
    small = _sections_in(Scope(product="cli", version="1"), cb.MIN_SECTIONS - 1)
    big = [_sections_in(Scope(product="cli", version=str(v)), cb.MIN_SECTIONS + v) for v in range(2, 12)]
    chosen = cb.apart(shared + small + [s for b in big for s in b])
    assert len(chosen) == cb.MAX_SCOPES
    assert [c.version for c in chosen] == [str(v) for v in range(11, 11 - cb.MAX_SCOPES, -1)]
    assert cb.apart(shared + small) == []


def test_a_scoped_question_is_judged_by_its_scopes_calibration_else_the_corpus_s():
    signature = cb.signature(WEIGHTS)
    own = Calibration(threshold=0.11, weights=signature)
    corpus = Calibration(threshold=0.21, weights=signature, scopes={"cli/2": own}, apart=True)
    assert corpus.within(Scope(product="cli", version="2")) is own
    assert corpus.within(Scope(product="cli")) is corpus  # wider than the scope calibrated: the corpus's
    assert corpus.within(Scope(product="cli", version="1")) is corpus
    assert corpus.within(None) is corpus
    assert calibrated(WEIGHTS, corpus.within(Scope(product="cli", version="2"))).threshold == 0.11
    assert corpus.summary()["scopes"] == {
        "cli/2": {
            "threshold": 0.11,
            "conflict": False,
            "sections": 0,
            "probes": 0,
            "bound": 0.0,
            "offtopic_caught": 0.0,
        }
    }
    assert "cli/2: 0.11 (0 sections)" in verdict_line(corpus.summary())
    assert "cli/2 0.11 (0 sections)" in render.page(
        Gathered(days=7, since="2026-12-01T00:00:00+00:00", until="2026-12-07T00:00:00+00:00"), [], corpus.summary()
    )
