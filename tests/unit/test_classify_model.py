"""The classifier artifact: features, numpy-only inference, the `@inherit` heads, calibration, import hygiene."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import msgspec
import numpy as np
import pytest

from assist.classify.artifact import Guard
from assist.classify.features import Block, char_terms, normalise, terms
from assist.classify.model import (
    INHERIT,
    ClassifierModel,
    ModelError,
    previous_type,
    reference_head,
    resolve,
    softmax,
)
from assist.embed.base import EmbedderMismatch
from assist.offline.classify.data import Example
from assist.offline.classify.train import fit_guard, head_label, history_prior, train
from assist.settings import DEFAULT_CLASSIFIER_MODEL


class HashEmbedder:
    """A deterministic stand-in for MiniLM (pure-logic unit tests only): bag of hashed words, unit length."""

    id = "test:hash"
    dim = 16

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in normalise(t).split():
                out[i, sum(map(ord, w)) % self.dim] += 1.0
        return out / np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)


WORDS = {
    "billing": ["invoice", "charge", "refund", "payment", "receipt", "bill"],
    "weather": ["rain", "sunny", "forecast", "storm", "snow", "wind"],
    "travel": ["flight", "hotel", "train", "passport", "luggage", "airport"],
}
TEMPLATES = ["tell me about the {w}", "I have a question on my {w}", "what about the {w} today", "any news on {w}"]


def generic_rows() -> list[Example]:
    return [
        Example(id=f"{label}-{w}-{j}", text=t.format(w=w), label=label)
        for label, ws in WORDS.items()
        for w in ws
        for j, t in enumerate(TEMPLATES)
    ]


@pytest.fixture(scope="module")
def generic_model() -> ClassifierModel:
    model, _ = train(generic_rows(), HashEmbedder(), folds=3)
    return model


def test_normalise_folds_case_and_accents_so_spanish_typed_without_them_matches():
    assert normalise("¿Cuánto CONSUMÍ?") == normalise("¿cuanto consumi?") == "¿cuanto consumi?"
    assert char_terms("ab") == [" a", "ab", "b ", " ab", "ab ", " ab "]  # within words, padded by spaces
    assert "cuanto consumi" in terms("Cuánto consumí")["words"]


def test_a_block_keeps_terms_seen_twice_and_gives_unit_rows():
    block = Block.fit([["a", "b"], ["a", "c"], ["a", "b", "b"]], min_df=2)
    assert set(block.vocab) == {"a", "b"}
    cols, vals = block.transform(["b", "b", "a", "zzz"])
    assert sorted(cols.tolist()) == [0, 1]
    assert np.isclose(np.linalg.norm(vals), 1.0)
    assert block.transform(["zzz"])[0].size == 0


def test_the_artifact_is_json_and_inference_reproduces_the_training_probabilities(generic_model, tmp_path):
    path = generic_model.save(tmp_path / "m.json")
    raw = path.read_bytes()
    assert raw[:1] == b"{"  # JSON, never a pickle
    doc = json.loads(raw)
    assert doc["classes"] == ["billing", "travel", "weather"]
    assert doc["embedder"] == {"id": "test:hash", "dim": 16}
    assert doc["threshold"] == 0.85
    assert len(doc["training"]["data_sha256"]) == 64
    assert doc["calibration"]["method"] == "temperature"
    loaded = ClassifierModel.load(str(path))
    assert loaded.version == generic_model.version
    emb = HashEmbedder()
    for text, label in [("any news on refund", "billing"), ("what about the storm today", "weather")]:
        pred = loaded.predict(emb.embed([text])[0], text)
        assert pred.label == label
        assert pred.p == pytest.approx(max(pred.probs.values()))
        assert sum(pred.probs.values()) == pytest.approx(1.0)


def test_numpy_inference_equals_the_fitted_logistic_regression():
    """The artifact's own logits are the regression's decision function on the same features."""
    from sklearn.linear_model import LogisticRegression

    from assist.offline.classify.train import _fit, _matrix

    rows = generic_rows()
    emb = HashEmbedder()
    vectors = emb.embed([r.text for r in rows])
    docs = [terms(r.text) for r in rows]
    labels = [r.label for r in rows]
    blocks, _, _ = _fit(vectors, docs, labels, np.ones(len(labels)), sorted(set(labels)), 10.0)
    lr = LogisticRegression(C=10.0, max_iter=5000).fit(_matrix(vectors, docs, blocks), labels)
    model, _ = train(rows, emb, folds=3)
    logits = np.array([model.logits(v, r.text) for v, r in zip(vectors, rows, strict=True)])
    assert np.allclose(logits, lr.decision_function(_matrix(vectors, docs, blocks)), atol=1e-3)


def test_a_wrong_file_is_refused_with_a_clear_error(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(ModelError, match=r"does not exist.*assist classifier train"):
        ClassifierModel.load(str(missing))
    (tmp_path / "x.json").write_text('{"format": "something else"}')
    with pytest.raises(ModelError, match=r"not a assist\.classifier/1 artifact"):
        ClassifierModel.load(str(tmp_path / "x.json"))
    (tmp_path / "bin").write_bytes(b"\x80\x04K\x01.")
    with pytest.raises(ModelError, match="not JSON"):
        ClassifierModel.load(str(tmp_path / "bin"))


def test_the_shipped_artifact_reads_into_its_struct_and_writes_back_byte_for_byte(tmp_path):
    shipped = Path(DEFAULT_CLASSIFIER_MODEL).read_bytes()
    model = ClassifierModel.load(DEFAULT_CLASSIFIER_MODEL)
    assert model.to_bytes() == shipped
    # the version a registry names it by is the hash it always had
    assert model.version == hashlib.sha256(json.dumps(json.loads(shipped), sort_keys=True).encode()).hexdigest()[:12]
    doc = json.loads(shipped)
    doc["embedder"]["dim"] = "384"
    (tmp_path / "m.json").write_text(json.dumps(doc))
    with pytest.raises(ModelError, match=r"incomplete assist\.classifier/1 artifact .*\$\.embedder\.dim"):
        ClassifierModel.load(str(tmp_path / "m.json"))


def test_a_model_trained_with_another_embedder_is_refused(generic_model):
    from assist.classify.embedding import EmbeddingLayer

    class Other(HashEmbedder):
        id = "onnx:all-MiniLM-L6-v2"

    with pytest.raises(EmbedderMismatch, match="built with embedder test:hash"):
        EmbeddingLayer(generic_model, Other())


def test_references_inherit_the_type_of_the_last_non_conversational_turn():
    assert previous_type(["CODE_GENERATION", "RETRIEVAL", "CONVERSATIONAL"]) == "RETRIEVAL"
    assert previous_type(["CONVERSATIONAL"]) is None
    deictic = Example("d", "explain this", "CODE_GENERATION", (("CODE_GENERATION", "write a handler"),), ("deictic",))
    recall = Example("r", "shorter", "CONVERSATIONAL", (("CODE_GENERATION", "write a handler"),), ("deictic",))
    anchored = Example("a", "am I near my limit?", "PLATFORM", (("RETRIEVAL", "how do limits work"),), ("anchoring",))
    labels = [head_label(e) for e in (deictic, recall, anchored)]
    assert labels == [reference_head("CODE_GENERATION"), "CONVERSATIONAL", "PLATFORM"]
    # how often a self-contained row follows a turn of each type: here one of the two after RETRIEVAL
    prior = history_prior([deictic, recall, anchored], labels, ["CODE_GENERATION", "RETRIEVAL"])
    assert prior == {"CODE_GENERATION": 0.5, "RETRIEVAL": 0.5}


CLASSES = ["CODE_GENERATION", "CONVERSATIONAL", "PLATFORM", "RETRIEVAL"]
TYPED = CLASSES + [reference_head(t) for t in ("CODE_GENERATION", "PLATFORM", "RETRIEVAL")]
PRIOR = {"CODE_GENERATION": 0.1, "PLATFORM": 0.1, "RETRIEVAL": 0.1}


def test_history_moves_only_the_mass_the_message_gives_to_being_a_reference_to_that_turn():
    # a usage question: its little reference mass is to a PLATFORM turn, which a RETRIEVAL or code history is not
    self_contained = np.array([[0.01, 0.01, 0.95, 0.02, 0.0, 0.01, 0.0]])
    alone, _ = resolve(self_contained, TYPED, CLASSES, [None], PRIOR)
    for prev in ("RETRIEVAL", "CODE_GENERATION"):
        probs, inherited = resolve(self_contained, TYPED, CLASSES, [prev], PRIOR)
        assert np.allclose(probs, alone)  # five RETRIEVAL turns change nothing
        assert inherited[0] == 0.0
    # "explain this": mostly a reference to code, a little to documentation
    reference = np.array([[0.02, 0.08, 0.02, 0.03, 0.80, 0.03, 0.02]])
    probs, inherited = resolve(reference, TYPED, CLASSES, ["CODE_GENERATION"], PRIOR)
    assert CLASSES[probs[0].argmax()] == "CODE_GENERATION"
    assert inherited[0] == pytest.approx(0.80 / 0.815)
    probs, _ = resolve(reference, TYPED, CLASSES, ["RETRIEVAL"], PRIOR)  # after documentation it is about that
    assert CLASSES[probs[0].argmax()] == "RETRIEVAL"
    assert probs[0].sum() == pytest.approx(1.0)
    probs, inherited = resolve(reference, TYPED, CLASSES, [None], PRIOR)  # nothing to refer to: stays ambiguous
    assert probs[0].sum() == pytest.approx(1.0)
    assert probs[0].max() < 0.6
    assert inherited[0] == 0.0


def test_the_untyped_inherit_head_of_older_artifacts_still_resolves_to_the_previous_type():
    heads = ["CODE_GENERATION", "CONVERSATIONAL", "PLATFORM", "RETRIEVAL", INHERIT]
    classes = heads[:4]
    self_contained = np.array([[0.01, 0.01, 0.95, 0.02, 0.01]])
    reference = np.array([[0.05, 0.15, 0.05, 0.05, 0.70]])
    for prev in ("RETRIEVAL", "CODE_GENERATION"):
        probs, _ = resolve(self_contained, heads, classes, [prev])
        assert probs[0].argmax() == 2  # five RETRIEVAL turns do not pull a usage question away from PLATFORM
        assert probs[0, 2] == pytest.approx(0.95)
    probs, inherited = resolve(reference, heads, classes, ["CODE_GENERATION"])
    assert classes[probs[0].argmax()] == "CODE_GENERATION"
    assert inherited[0] == pytest.approx(0.70)
    probs, inherited = resolve(reference, heads, classes, [None])  # nothing to refer to: stays ambiguous
    assert probs[0].sum() == pytest.approx(1.0)
    assert probs[0].max() < 0.6
    assert inherited[0] == 0.0


def test_temperature_sharpens_or_softens_without_changing_the_order():
    z = np.array([2.0, 1.0, 0.0])
    assert softmax(z / 0.5).max() > softmax(z).max() > softmax(z / 2).max()
    assert softmax(z / 0.5).argmax() == softmax(z / 2).argmax()


def test_the_classify_path_never_imports_scikit_learn():
    code = (
        "import sys\n"
        "import assist.ask.build, assist.classify.cascade, assist.classify.embedding, assist.classify.llm\n"
        "import assist.classify.model, assist.classify.registry, assist.classify.reload\n"
        "print(sorted(m for m in ('sklearn', 'scipy', 'ollama', 'boto3', 'lancedb') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_topic_folds_hold_out_whole_clusters_and_cross_validation_reports_both_schemes():
    from assist.offline.classify.train import cross_validate, topic_folds

    rows = generic_rows()
    emb = HashEmbedder()
    vectors = emb.embed([r.text for r in rows])
    splits = topic_folds(vectors, folds=3, topics=6, seed=0)
    assert sorted(np.concatenate([te for _, te in splits]).tolist()) == list(range(len(rows)))  # each row once
    for tr, te in splits:
        assert not set(tr.tolist()) & set(te.tolist())
    result = cross_validate(rows, emb, folds=3, topics=6, seeds=2, cluster_rows=36)
    assert result["rows"] == len(rows)
    assert result["message_grouped"]["n"] == len(rows)
    assert result["topic_clustered"]["runs"] == 2
    assert len(result["topic_clustered"]["accuracy_per_run"]) == 2
    assert result["topic_clustered_first_rows"]["n"] == 36
    assert result["history_prior"] is None  # {text, label} rows: no reference heads


def test_the_guard_scores_each_training_row_without_itself_and_separates_out_of_scope_rows():
    # two classes along two axes; each class's rows fan out a little, one row of class a is far from the rest
    a = [[1.0, 0.1, 0.0], [1.0, -0.1, 0.0], [1.0, 0.0, 0.1], [0.3, 0.0, 1.0]]
    b = [[0.1, 1.0, 0.0], [-0.1, 1.0, 0.0], [0.0, 1.0, 0.1]]
    vectors = np.array(a + b)
    labels = ["a"] * 4 + ["b"] * 3
    centroids, threshold, figures = fit_guard(vectors, labels, np.ones(7), ["a", "b"])
    assert np.allclose(np.linalg.norm(centroids, axis=1), 1.0)
    # without out-of-scope rows every training row passes; the atypical row sets the bar, judged without itself
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    others = unit[:3].sum(axis=0)
    assert threshold == pytest.approx(unit[3] @ others / np.linalg.norm(others), abs=1e-6)
    assert figures["training_rows_passed"] == 1.0
    # with out-of-scope rows along the third axis, the cut moves between them and the typical rows
    oos = np.array([[0.0, 0.0, 1.0], [0.1, 0.1, 1.0]])
    _, cut, figures = fit_guard(vectors, labels, np.ones(7), ["a", "b"], oos)
    assert figures["out_of_scope_abstained"] == 1.0
    assert figures["training_rows_passed"] == pytest.approx(6 / 7, abs=1e-4)
    assert cut > threshold


def test_a_message_below_the_guard_threshold_is_novel_whatever_its_probability(generic_model, tmp_path):
    model = ClassifierModel.load(str(generic_model.save(tmp_path / "m.json")))
    assert model.centroids is not None
    assert model.centroids.shape == (3, HashEmbedder.dim)
    e = HashEmbedder()
    known = model.predict(e.embed(["tell me about the invoice"])[0], "tell me about the invoice")
    assert known.similarity > model.guard_threshold
    assert not known.novel
    assert known.decides(model.threshold) == (known.p >= model.threshold)
    # a vector orthogonal to every centroid: no class is near, whatever the linear model says
    far = np.linalg.svd(model.centroids)[2][-1]
    pred = model.predict(far, "tell me about the invoice")
    assert pred.similarity == pytest.approx(0.0, abs=1e-6)
    assert pred.novel
    assert not pred.decides(0.0)


def test_an_artifact_without_a_guard_still_loads_and_never_calls_a_message_novel(generic_model):
    model = ClassifierModel(msgspec.structs.replace(generic_model.artifact, guard=msgspec.UNSET))
    pred = model.predict(HashEmbedder().embed(["any news on storm"])[0], "any news on storm")
    assert (model.guard_threshold, pred.similarity, pred.novel) == (None, None, False)
    with pytest.raises(ModelError, match="guard centroids"):
        ClassifierModel(
            msgspec.structs.replace(generic_model.artifact, guard=Guard(threshold=0.1, centroids=[[0.0] * 4]))
        )
