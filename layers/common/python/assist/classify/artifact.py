"""The embedding classifier's artifact: one typed document, written by training and read by the classify path.

A JSON document (never a pickle: reading it runs no code), decoded straight into these structs by msgspec, so a
missing or mistyped field is refused at load with its path. The field order is the document's key order.
`UNSET` fields are absent from artifacts written before they existed (the guard before ADR 0041) and stay absent
when such an artifact is written again, so an artifact reads and writes back byte for byte (ADR 0076).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

FORMAT = "assist.classifier/1"


class Embedder(msgspec.Struct, frozen=True):
    """The embedder the model was trained on; a classify path embedding with another refuses the model."""

    id: str
    dim: int


class Calibration(msgspec.Struct, frozen=True, kw_only=True):
    method: str = "temperature"
    temperature: float


class EmbeddingFeature(msgspec.Struct, frozen=True):
    weight: float
    dim: int


class TermFeature(msgspec.Struct, frozen=True):
    """A TF-IDF block over words or character n-grams: its vocabulary (column order) and IDF per column."""

    weight: float
    vocab: list[str]
    idf: list[float]


class History(msgspec.Struct, frozen=True):
    """Typed `@inherit` heads (ADR 0015): P(previous turn of type Y | the message is not a reference)."""

    method: str
    prior: dict[str, float] = msgspec.field(default_factory=dict)


class Features(msgspec.Struct, frozen=True):
    embedding: EmbeddingFeature
    words: TermFeature
    chars: TermFeature
    #: None without reference heads; a sentence in artifacts trained before ADR 0015 (one untyped head)
    history: History | str | None = None


class Guard(msgspec.Struct, frozen=True, kw_only=True):
    """The novelty guard (ADR 0041): a message less similar than `threshold` to every class centroid is novel."""

    method: str = "centroid-cosine"
    threshold: float
    centroids: list[list[float]]


class Training(msgspec.Struct, frozen=True, kw_only=True, rename={"c": "C"}):
    """How the artifact was made: its rows (per head), their hash and sources, the out-of-scope rows that set the
    guard, the regularisation, when and how long."""

    rows: int
    heads: dict[str, int]
    data_sha256: str
    sources: list[dict[str, Any]]
    guard_rows: int | UnsetType = UNSET
    guard_sha256: str | UnsetType | None = UNSET
    c: float
    min_df: int
    trained_at: str
    seconds: float


class Artifact(msgspec.Struct, frozen=True, kw_only=True):
    format: str = FORMAT
    classes: list[str]
    #: the classes, then the reference heads (`@inherit:TYPE`)
    heads: list[str]
    embedder: Embedder
    #: the probability the embedding layer decides at
    threshold: float
    calibration: Calibration
    features: Features
    guard: Guard | UnsetType | None = UNSET
    #: one row per head over [embedding | words | chars]
    coef: list[list[float]]
    intercept: list[float]
    training: Training
    #: the figures training measured (cross-validation, guard, gate, holdout): a report, never read at inference
    metrics: dict[str, Any] = msgspec.field(default_factory=dict)

    def to_bytes(self) -> bytes:
        # the standard library writes the floats: its shortest repr (`-5.9e-05`) is the one the shipped artifacts
        # were written with, so an artifact read and written again is the same bytes
        return (json.dumps(msgspec.to_builtins(self), ensure_ascii=False, separators=(",", ":")) + "\n").encode()

    @property
    def version(self) -> str:
        """The content hash that names the artifact in a registry."""
        return hashlib.sha256(json.dumps(msgspec.to_builtins(self), sort_keys=True).encode()).hexdigest()[:12]
