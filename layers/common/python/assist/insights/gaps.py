"""Documentation gaps as topics: the questions the docs did not answer, embedded and grouped by k-means.

numpy only (no scikit-learn in the function images): k-means++ seeding and Lloyd's iterations on unit
vectors, a fixed seed so one window gives one page. Each cluster is labelled by its most distinctive
words (count in the cluster × idf over all gap questions) and shown with the three questions nearest
its centre. Questions are redacted before anyone sees them (assist/export/redact.py).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from assist.export.redact import redact

if TYPE_CHECKING:
    from assist.embed.base import Embedder

MAX_QUESTIONS = 500  # the newest gap questions clustered per page: embedding them bounds the request
MAX_CLUSTERS = 8
EXAMPLES = 3
TERMS = 3
ITERATIONS = 50
_WORD = re.compile(r"[^\W\d_]{3,}")
_PLACEHOLDER = re.compile(r"<[A-Z]+>")  # what redaction put in: <EMAIL> is no topic
_STOP = frozenset(
    re.split(
        r"\s+",
        "the and for are was were how what when where which who why with this that from have has had can could would "
        "should does did not you your our their they them its into about there here then than but any all some use "
        "using get got make made way need want one two like just also more most very será para por con como qué "
        "cómo una uno los las del que",
    )
)


@dataclass
class Gap:
    label: str
    size: int
    examples: list[str]
    scopes: dict[str, int] = field(default_factory=dict)  # its questions per scope asked (ADR 0121), most first


def kmeans(x: np.ndarray, k: int, seed: int = 0, iterations: int = ITERATIONS) -> tuple[np.ndarray, np.ndarray]:
    """Cluster rows of unit vectors: (assignment per row, centres)."""
    rng = np.random.default_rng(seed)
    centres = [x[rng.integers(len(x))]]
    for _ in range(1, k):  # k-means++: the next centre far from those chosen
        d = np.min(1.0 - x @ np.array(centres).T, axis=1).clip(min=0)
        if not d.sum():
            break
        centres.append(x[rng.choice(len(x), p=d / d.sum())])
    c = np.array(centres)
    assign = np.zeros(len(x), dtype=np.int64)
    for i in range(iterations):
        new = np.argmax(x @ c.T, axis=1)
        if i and np.array_equal(new, assign):
            break
        assign = new
        for j in range(len(c)):
            members = x[assign == j]
            if len(members):
                m = members.mean(axis=0)
                c[j] = m / (np.linalg.norm(m) or 1.0)
    return assign, c


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(_PLACEHOLDER.sub(" ", text).lower()) if w not in _STOP]


def label(members: list[str], df: Counter[str], n: int) -> str:
    tf = Counter(w for q in members for w in set(words(q)))
    top = sorted(tf, key=lambda w: (-tf[w] * math.log(1 + n / df[w]), w))[:TERMS]
    return " · ".join(top) or "(no words)"


def clusters(
    questions: list[str], embedder: Embedder, k: int | None = None, scopes: list[str] | None = None
) -> list[Gap]:
    """Gap topics, largest first. `k` defaults to √(n/2), at most MAX_CLUSTERS. `scopes`: each question's scope,
    counted per topic."""
    qs = [redact(q) for q in questions[:MAX_QUESTIONS]]
    if not qs:
        return []
    k = min(len(qs), k or max(1, min(MAX_CLUSTERS, round(math.sqrt(len(qs) / 2)))))
    x = np.asarray(embedder.embed(qs), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True).clip(min=1e-12)
    assign, centres = kmeans(x, k)
    df = Counter(w for q in qs for w in set(words(q)))
    out = []
    for j in range(len(centres)):
        idx = np.flatnonzero(assign == j)
        if not len(idx):
            continue
        nearest = idx[np.argsort(-(x[idx] @ centres[j]))]
        examples: list[str] = []
        for i in nearest:  # distinct questions: the same one asked twice is one example
            if qs[i] not in examples:
                examples.append(qs[i])
            if len(examples) == EXAMPLES:
                break
        where = dict(Counter(scopes[i] for i in idx).most_common()) if scopes else {}
        out.append(Gap(label([qs[i] for i in idx], df, len(qs)), len(idx), examples, where))
    return sorted(out, key=lambda g: (-g.size, g.label))
