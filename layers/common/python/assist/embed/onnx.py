"""all-MiniLM-L6-v2 on ONNX Runtime: the reference model's vectors without torch at run time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from assist.embed.base import EmbedderError
from assist.embed.files import CARD_FILE, INT8_MODEL_FILE, MODEL_FILE, TOKENIZER_FILE

if TYPE_CHECKING:
    from assist.settings import Settings

# sentence-transformers' max_seq_length for this model; the shipped tokenizer.json says 128
# with fixed padding, which silently changes long-text vectors.
MAX_TOKENS = 256
BATCH = 32


class OnnxEmbedder:
    def __init__(self, session, tokenizer, name: str, dim: int) -> None:
        self._session = session
        self._tok = tokenizer
        self._inputs = {i.name for i in session.get_inputs()}
        self.id = f"onnx:{name}"
        self.dim = dim

    @classmethod
    def from_settings(cls, settings: Settings, name: str, argument: str) -> OnnxEmbedder:
        """EMBEDDER=minilm, or minilm-int8 for the quantized copy."""
        threads = settings.embed.threads or None
        return cls.load(settings.embed.model_dir, threads=threads, int8=name.endswith("-int8"))

    @classmethod
    def load(cls, model_dir: str | Path, threads: int | None = None, int8: bool = False) -> OnnxEmbedder:
        """`int8`: the dynamically quantized copy of the model (its own vector space: its own embedder id)."""
        d = Path(model_dir)
        model = d / (INT8_MODEL_FILE if int8 else MODEL_FILE)
        if not model.exists():
            raise EmbedderError(f"no ONNX model {model.name} in {d}: run `assist model export` (make setup does it)")
        card = json.loads((d / CARD_FILE).read_text())
        tok = Tokenizer.from_file(str(d / TOKENIZER_FILE))
        tok.enable_truncation(max_length=card.get("max_tokens", MAX_TOKENS))
        tok.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - a vocabulary token  # pad to the longest in the batch
        opts = ort.SessionOptions()
        if threads:
            opts.intra_op_num_threads = threads
        # Idle intra-op threads must sleep, not spin: spinning took the cores from the index queries and
        # the store calls running beside the embedding (ADR 0036).
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.log_severity_level = 3
        session = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
        return cls(session, tok, card["name"] + ("-int8" if int8 else ""), int(card["dim"]))

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = [self._embed_batch(texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)]
        return np.concatenate(out)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        enc = self._tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feed)[0]
        m = mask[..., None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
