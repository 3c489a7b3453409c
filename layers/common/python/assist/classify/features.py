"""Lexical features of a message: TF-IDF over words (1–2) and characters within words (2–4).

MiniLM is an English model; on Spanish, typos and short follow-ups its vectors separate the
four types poorly, while word and sub-word overlaps carry the signal (ADR 0011). The
vocabulary and IDF are learned in training and stored in the model artifact; this module
applies them with the standard library and numpy only, identically at training and at run time.
"""

from __future__ import annotations

import itertools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping

import numpy as np

WORD_RE = re.compile(r"\w+")
#: long pasted code says what it is in its first lines; capping keeps the cost per message bounded
MAX_CHARS = 2000


def normalise(text: str) -> str:
    """Lower case without accents, so "cuánto" and "cuanto" are the same word."""
    decomposed = unicodedata.normalize("NFKD", text[:MAX_CHARS].lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def word_terms(text: str) -> list[str]:
    words = WORD_RE.findall(text)
    return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]


def char_terms(text: str, lo: int = 2, hi: int = 4) -> list[str]:
    out: list[str] = []
    for w in text.split():
        padded = f" {w} "
        for n in range(lo, hi + 1):
            out += [padded[i : i + n] for i in range(len(padded) - n + 1)]
    return out


def terms(text: str) -> dict[str, list[str]]:
    """Each block's terms of one message (blocks are named so the artifact can say which it uses)."""
    t = normalise(text)
    return {"words": word_terms(t), "chars": char_terms(t)}


class Block:
    """One TF-IDF block: vocabulary → column, IDF per column, sublinear TF, unit L2 norm."""

    def __init__(self, vocab: Mapping[str, int], idf: np.ndarray) -> None:
        self.vocab = vocab
        self.idf = idf

    @classmethod
    def fit(cls, docs: Iterable[list[str]], min_df: int = 2) -> Block:
        docs = list(docs)
        df = Counter(term for d in docs for term in set(d))
        kept = sorted(t for t, c in df.items() if c >= min_df)
        n = len(docs)
        idf = np.array([math.log((1 + n) / (1 + df[t])) + 1.0 for t in kept])
        return cls({t: i for i, t in enumerate(kept)}, idf)

    def transform(self, doc: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Sparse row as (column indices, values)."""
        counts = Counter(self.vocab[t] for t in doc if t in self.vocab)
        if not counts:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        cols = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
        tf = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
        vals = (1.0 + np.log(tf)) * self.idf[cols]
        return cols, vals / np.linalg.norm(vals)

    def __len__(self) -> int:
        return len(self.vocab)
