"""The embedding classifier's artifact and its inference, with numpy only.

The artifact is one JSON document read into a typed `Artifact` (`artifact.py`; never a pickle:
loading it runs no code): the classes, a linear model over [message embedding | word TF-IDF |
character TF-IDF], a temperature that calibrates its probabilities, the embedder it was trained
with, the threshold, its metrics and a hash of its training data. scikit-learn trains it
(`assist.offline.classify.train`); nothing here imports scikit-learn.

Routing models have reference outputs besides their classes: `@inherit:TYPE`, "this message
refers to the subject of a previous TYPE turn" ("and in Java?" after code, "¿y cuánto me queda?"
after account questions). Only the output of the type of the most recent non-conversational turn
of the intent history counts, weighed against the message's own classes by Bayes' rule (ADR 0015);
references to a type the history does not end with are impossible and drop out. So the history can
only decide between types when the message itself reads as a reference to that turn; a
self-contained message gets no weight from it, whatever the history holds (ADR 0010). Artifacts
trained before ADR 0015 have one untyped `@inherit` output, whose whole probability goes to that turn.

The novelty guard (ADR 0041): the artifact may carry one unit centroid of the training embeddings per class and a
similarity threshold. A message whose embedding is less similar than that to every centroid is unlike anything the
model was trained on: its prediction is `novel`, and the embedding layer abstains on it whatever its probability
(a linear model's probabilities say which known class is nearest, not whether any is near). Artifacts without a
`guard` have none.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from assist.aws import s3_uri
from assist.classify.artifact import FORMAT, Artifact, Guard, History
from assist.classify.features import Block, terms
from assist.errors import AssistError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

#: the untyped reference output of artifacts trained before ADR 0015, and the prefix of the typed ones
INHERIT = "@inherit"
#: a turn of this type acts on the conversation, not on a subject: references look past it
CONVERSATIONAL = "CONVERSATIONAL"


class ModelError(AssistError, ValueError):
    """The classifier artifact cannot be read or is not one."""


def previous_type(history_types: Sequence[str]) -> str | None:
    """The type a reference in the new message points at: the last non-conversational turn's."""
    for t in reversed(history_types):
        if t != CONVERSATIONAL:
            return t
    return None


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def reference_head(qtype: str) -> str:
    """The output for "a reference to the subject of a previous `qtype` turn"."""
    return f"{INHERIT}:{qtype}"


def is_reference_head(head: str) -> bool:
    return head == INHERIT or head.startswith(INHERIT + ":")


def resolve(
    head_probs: np.ndarray,
    heads: Sequence[str],
    classes: Sequence[str],
    previous: Sequence[str | None],
    prior: Mapping[str, float] | None = None,
):
    """Class probabilities from head probabilities (rows), given each row's previous non-conversational type.

    Returns (class probabilities, the share of each row's probability that came from a reference).

    Typed reference heads (ADR 0015): with the last non-conversational turn of type Y, the hypotheses
    are "the message is of its own class c" (probability p(c), and a previous turn of type Y with the
    probability `prior[Y]` that a self-contained message follows a Y turn, as in training) or "the
    message refers to that Y turn" (p(@inherit:Y), and then the previous turn is Y for sure).
    References to other types are impossible given this history and drop out. So
    P(c) ∝ prior[Y]·p(c) + p(@inherit:Y)·[c = Y]. Without a previous type only the own classes remain.

    The untyped `@inherit` head of older artifacts adds its whole mass to the previous type, or spreads
    it over the classes in proportion when there is none (ADR 0010).
    """
    idx = [heads.index(c) for c in classes]
    probs = head_probs[:, idx].copy()
    inherited = np.zeros(len(probs))
    if INHERIT in heads:
        p_inh = head_probs[:, heads.index(INHERIT)]
        for i, prev in enumerate(previous):
            if prev in classes:
                probs[i, classes.index(prev)] += p_inh[i]
                inherited[i] = p_inh[i]
            else:
                probs[i] /= probs[i].sum()
        return probs, inherited
    typed = {h[len(INHERIT) + 1 :]: j for j, h in enumerate(heads) if h.startswith(INHERIT + ":")}
    if not typed:
        return probs, inherited
    prior = prior or {}
    for i, prev in enumerate(previous):
        j = typed.get(prev) if prev in classes else None
        if j is None:
            probs[i] /= probs[i].sum()
            continue
        own = probs[i] * prior.get(prev, 1.0)
        ref = head_probs[i, j]
        total = own.sum() + ref
        probs[i] = own / total
        probs[i, classes.index(prev)] += ref / total
        inherited[i] = ref / total
    return probs, inherited


@dataclass(frozen=True)
class Prediction:
    label: str
    p: float
    probs: dict[str, float]
    #: the share of `p` that came from the previous turn's type (a reference), not from the message
    inherited: float = 0.0
    #: the version of the model that made it (models are swapped while a container runs)
    model_version: str = ""
    #: the message embedding's highest cosine to a class centroid (None: the artifact has no novelty guard)
    similarity: float | None = None
    #: below the guard's threshold: unlike any class the model was trained on
    novel: bool = False

    def decides(self, threshold: float) -> bool:
        """The embedding layer decides: confident enough, and the message is like its training rows."""
        return self.p >= threshold and not self.novel


class ClassifierModel:
    def __init__(self, artifact: Artifact, source: str = "<memory>") -> None:
        if artifact.format != FORMAT:
            raise ModelError(f"{source} is not a {FORMAT} artifact; train one with `assist classifier train`")
        self.artifact = artifact
        self.source = source
        self.classes: tuple[str, ...] = tuple(artifact.classes)
        self.heads: tuple[str, ...] = tuple(artifact.heads)
        self.embedder_id = artifact.embedder.id
        self.embedder_dim = artifact.embedder.dim
        self.threshold = artifact.threshold
        self.temperature = artifact.calibration.temperature
        self.coef = _matrix(artifact.coef, "coef", source)
        self.intercept = np.asarray(artifact.intercept, dtype=np.float64)
        feats = artifact.features
        self.embedding_weight = feats.embedding.weight
        #: P(previous turn of type Y | the message is not a reference), for typed reference heads
        self.history_prior: dict[str, float] = feats.history.prior if isinstance(feats.history, History) else {}
        self.blocks: list[tuple[str, Block, float, int]] = []
        offset = self.embedder_dim
        for name, spec in (("words", feats.words), ("chars", feats.chars)):
            block = Block({t: i for i, t in enumerate(spec.vocab)}, np.asarray(spec.idf, dtype=np.float64))
            self.blocks.append((name, block, spec.weight, offset))
            offset += len(block)
        guard = artifact.guard if isinstance(artifact.guard, Guard) else None  # absent before ADR 0041
        self.centroids = _matrix(guard.centroids, "guard centroids", source) if guard else None
        self.guard_threshold = guard.threshold if guard else None
        if self.centroids is not None and self.centroids.shape != (len(self.classes), self.embedder_dim):
            raise ModelError(
                f"{source}: guard centroids are {self.centroids.shape}, "
                f"expected {(len(self.classes), self.embedder_dim)}"
            )
        if self.coef.shape != (len(self.heads), offset):
            raise ModelError(f"{source}: coefficients are {self.coef.shape}, features say {(len(self.heads), offset)}")
        self.version = artifact.version

    @property
    def uses_history(self) -> bool:
        return any(is_reference_head(h) for h in self.heads)

    # -- inference -------------------------------------------------------------------
    def logits(self, vector: np.ndarray, text: str) -> np.ndarray:
        out = self.intercept + self.coef[:, : self.embedder_dim] @ (vector * self.embedding_weight)
        t = terms(text)
        for name, block, weight, offset in self.blocks:
            cols, vals = block.transform(t[name])
            if len(cols):
                out = out + self.coef[:, offset + cols] @ (vals * weight)
        return out

    def head_probs(self, logits: np.ndarray) -> np.ndarray:
        return softmax(logits / self.temperature)

    def similarity(self, vector: np.ndarray) -> float | None:
        """The highest cosine between the message embedding and a class centroid, or None without a guard."""
        if self.centroids is None:
            return None
        return float((self.centroids @ vector).max() / max(float(np.linalg.norm(vector)), 1e-12))

    def predict(self, vector: np.ndarray, text: str, history_types: Sequence[str] = ()) -> Prediction:
        """The label and its probability for an embedded message; a reference head (`@inherit`) gives its share
        to the session's previous type."""
        hp = self.head_probs(self.logits(vector, text))[None, :]
        similarity = self.similarity(vector)
        probs, inherited = resolve(hp, self.heads, self.classes, [previous_type(history_types)], self.history_prior)
        i = int(probs[0].argmax())
        label = self.classes[i]
        share = float(inherited[0]) if label == previous_type(history_types) else 0.0
        return Prediction(
            label=label,
            p=float(probs[0, i]),
            probs={c: float(v) for c, v in zip(self.classes, probs[0], strict=True)},
            inherited=share,
            model_version=self.version,
            similarity=similarity,
            novel=similarity is not None and similarity < self.guard_threshold,
        )

    # -- reading and writing ----------------------------------------------------------
    @classmethod
    def load(cls, path: str, s3: Any = None, version: str | None = None) -> ClassifierModel:
        """From a local path or `s3://bucket/key` (with an injected boto3 S3 client).

        `version`: the document must hash to it (a registry names each artifact by its version, so an artifact
        altered after it was stored is refused rather than served under a name it no longer has).
        """
        if path.startswith("s3://"):
            if s3 is None:
                raise ModelError(f"{path}: an S3 model needs an S3 client")
            bucket, key = s3_uri.split(path)
            try:
                data = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            except s3.exceptions.NoSuchKey as exc:
                raise ModelError(f"classifier model {path} does not exist; fix CLASSIFIER_MODEL_PATH") from exc
        else:
            p = Path(path)
            if not p.is_file():
                raise ModelError(
                    f"classifier model {path} does not exist: train one with `assist classifier train --data "
                    "data/routing/seed.jsonl --out <path>`, or set CLASSIFIER_MODEL_PATH=none to run without it"
                )
            data = p.read_bytes()
        model = cls(_decode(data, path), source=path)
        if version is not None and model.version != version:
            raise ModelError(
                f"{path} hashes to version {model.version}, not {version}: the artifact was altered after it was "
                "stored; promote a freshly trained model instead"
            )
        return model

    def to_bytes(self) -> bytes:
        return self.artifact.to_bytes()

    def save(self, path: str | Path) -> Path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(p.suffix + ".tmp")
        tmp.write_bytes(self.to_bytes())
        tmp.replace(p)  # never a half-written artifact at the path a server loads
        return p


def _matrix(rows: list[list[float]], what: str, source: str) -> np.ndarray:
    try:
        return np.asarray(rows, dtype=np.float64)
    except ValueError as exc:  # rows of different lengths: a hand-edited document
        raise ModelError(f"{source}: {what} rows differ in length; retrain it") from exc


def _decode(data: bytes, path: str) -> Artifact:
    try:
        return msgspec.json.decode(data, type=Artifact)
    except msgspec.DecodeError as exc:
        if not isinstance(exc, msgspec.ValidationError):
            raise ModelError(f"{path} is not JSON ({exc}); a classifier artifact is a JSON document") from exc
        try:
            fmt = msgspec.json.decode(data, type=_Format).format
        except msgspec.ValidationError:  # not even an object
            fmt = None
        if fmt != FORMAT:
            raise ModelError(f"{path} is not a {FORMAT} artifact; train one with `assist classifier train`") from exc
        raise ModelError(f"{path} is an incomplete {FORMAT} artifact ({exc}); retrain it") from exc


class _Format(msgspec.Struct):
    format: str | None = None
