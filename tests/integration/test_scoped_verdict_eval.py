"""`assist eval scoped-verdict` (ADR 0129) on a small BEIR set of two unrelated made-up products: the split by topic
puts each product's documents in one scope, the build's calibration calibrates each apart, and every answerable
question is judged in its document's scope, by that scope's threshold and by the corpus's. Real LanceDB, the real
MiniLM embedder."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from assist.commands.retrieval_run import scoped_text
from assist.offline.retrieve.evaluate_scoped import run
from assist.offline.retrieve.evaluate_verdict import DataSet
from assist_dev.local.definition import ROOT

pytestmark = pytest.mark.integration
PRODUCTS = {
    "vault": ("the Vault storage service", ["bucket", "snapshot", "replica", "retention", "quota", "archive", "tier"]),
    "scope": ("the Scope telescope firmware", ["mirror", "focus", "shutter", "filter", "mount", "sensor", "dome"]),
}
PER_PRODUCT = 35


def beir_set(root: Path) -> DataSet:
    corpus, queries, qrels = [], [], ["query-id\tcorpus-id\tscore"]
    for product, (name, things) in PRODUCTS.items():
        for i in range(PER_PRODUCT):
            thing, other = things[i % len(things)], things[(i * 3 + 1) % len(things)]
            doc = f"{product}-{i}"
            title = f"Configuring the {thing} {i} of {name}"
            text = (
                f"In {name}, the {thing} {i} is set in the {other} panel. Each {thing} keeps {i + 2} copies, and "
                f"its {other} limit is {i * 10 + 5}. Run `{product} {thing} set --id {i}` to change it."
            )
            corpus.append({"_id": doc, "title": title, "text": text})
            if i % 5 == 0:
                queries.append({"_id": f"q-{doc}", "text": f"How do I configure the {thing} {i} in {name}?"})
                qrels.append(f"q-{doc}\t{doc}\t1")
    root.mkdir()
    for path, rows in (("corpus.jsonl", corpus), ("queries.jsonl", queries)):
        (root / path).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (root / "qrels.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    return DataSet("two", str(root / "corpus.jsonl"), str(root / "qrels.tsv"), (str(root / "queries.jsonl"),))


def test_each_product_is_a_scope_calibrated_apart_and_its_questions_are_judged_both_ways(
    tmp_path, base_settings, embedder
):
    offtopic = str(ROOT / "data/uncertain/offtopic.jsonl")
    result = run([beir_set(tmp_path / "set")], [offtopic], 2, str(tmp_path / "index"), base_settings, embedder)
    got = result["sets"]["two"]
    assert sorted(got["documents"].values()) == [PER_PRODUCT, PER_PRODUCT]
    assert sorted(got["scopes"]) == sorted(got["documents"])  # both scopes have 30 sections or more of their own
    n_off = result["offtopic"]
    assert n_off == 62
    for figures in got["scopes"].values():
        assert figures["sections"] == PER_PRODUCT  # a product's own documents and nothing of the other's
        assert figures["answerable"] == PER_PRODUCT // 5  # every question in its own product's scope
        assert figures["offtopic"] == n_off
        assert figures["corpus"]["threshold"] == got["corpus_threshold"]
        assert math.isfinite(figures["scope"]["threshold"])
        for which in ("scope", "corpus"):
            assert 0 <= figures[which]["answerable_flagged"] <= figures["answerable"]
            assert 0 <= figures[which]["offtopic_caught"] <= n_off
    every = got["all"]
    assert (every["answerable"], every["offtopic"]) == (2 * (PER_PRODUCT // 5), 2 * n_off)
    flagged = sum(f["scope"]["answerable_flagged"] for f in got["scopes"].values())
    assert every["scope"]["answerable_flagged"] == round(flagged / every["answerable"], 4)
    text = scoped_text(result)  # what the command prints without --json
    for scope, figures in got["scopes"].items():
        row = f"{figures['scope']['answerable_flagged']}/{figures['answerable']}"
        assert any(line.startswith(scope) and " scope " in line and row in line for line in text.splitlines())
    assert f"answerable flagged {every['corpus']['answerable_flagged']} (n={every['answerable']})" in text
