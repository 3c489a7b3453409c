"""Versioned routing classifiers in object storage, and the `current` pointer the classify path follows.

Layout under a registry root (`s3://bucket/prefix`, e.g. `s3://assist-data/models/routing`, or a local directory):

    <version>.json            a model artifact; its version is its content hash (`ClassifierModel.version`)
    <version>.decision.json   the promotion decision that judged it, with both sets of held-out metrics
    current                   the pointer: {"version", "previous", "updated_at", "action"}

Every candidate is stored, promoted or not, so its decision sits beside it. Promotion and rollback only move the
pointer (one PutObject, or a rename: never half-written); `previous` lists the versions that were current before,
oldest first, which is what rollback returns to. CLASSIFIER_MODEL_PATH=`<root>/current` serves the pointer's version.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from assist.classify.model import ClassifierModel
from assist.errors import AssistError
from assist.export.sink import open_sink
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.settings import Settings

log = get_logger(__name__)
POINTER = "current"
DECISION = ".decision.json"


class RegistryError(AssistError, ValueError):
    """The registry is missing, empty, or cannot do what was asked."""


@dataclass(frozen=True)
class Pointer:
    version: str
    #: versions that were current before, oldest first
    previous: tuple[str, ...] = ()
    updated_at: str = ""
    #: what moved it: "promote" or "rollback", and the version it replaced
    action: str = ""
    replaced: str | None = None


def registry_root(explicit: str | None, settings: Settings) -> str:
    """`--registry` if given, else the registry CLASSIFIER_MODEL_PATH serves from."""
    root = explicit or settings.classifier.registry
    if not root:
        raise RegistryError(
            "no model registry: pass --registry s3://bucket/prefix (or a directory), or set "
            "CLASSIFIER_MODEL_PATH=<registry>/current"
        )
    return root


class Registry:
    def __init__(self, root: str, s3: Any = None) -> None:
        """`s3`: a boto3 S3 client for an `s3://` root (a `Lazy` one defers boto3 to the first read)."""
        self.root = root.rstrip("/")
        self.s3 = s3
        self._store = open_sink(self.root, s3)

    def artifact(self, version: str) -> str:
        """The artifact's path, as `ClassifierModel.load` takes it."""
        return f"{self.root}/{version}.json"

    def load(self, version: str) -> ClassifierModel:
        """A stored model by version, refused if its bytes no longer hash to it (`ClassifierModel.load`)."""
        return ClassifierModel.load(self.artifact(version), s3=self.s3, version=version)

    def add(self, model: ClassifierModel) -> str:
        """Store a model under its version (the same version is the same bytes, so storing it again is harmless)."""
        self._store.write(f"{model.version}.json", model.to_bytes())
        return self.artifact(model.version)

    def record(self, version: str, decision: dict[str, Any]) -> str:
        """Keep a promotion decision beside its model; returns where."""
        data = json.dumps(decision, ensure_ascii=False, indent=1, default=str).encode("utf-8")
        return self._store.write(f"{version}{DECISION}", data)

    def decision(self, version: str) -> dict[str, Any] | None:
        """The promotion decision kept beside a version, or None when it was stored without one."""
        try:
            return json.loads(self._store.read(f"{version}{DECISION}"))
        except FileNotFoundError:
            return None

    def versions(self) -> list[str]:
        """Every stored version."""
        return [n.removesuffix(".json") for n in self._store.names(".json") if not n.endswith(DECISION)]

    # -- the pointer --------------------------------------------------------------------
    def current(self) -> Pointer | None:
        """The pointer to the current model, its earlier ones and the last action; None before any promotion."""
        try:
            raw = self._store.read(POINTER)
        except FileNotFoundError:
            return None
        try:
            doc = json.loads(raw)
            return Pointer(
                version=str(doc["version"]),
                previous=tuple(str(v) for v in doc.get("previous", ())),
                updated_at=str(doc.get("updated_at", "")),
                action=str(doc.get("action", "")),
                replaced=doc.get("replaced"),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise RegistryError(
                f"{self.root}/{POINTER} is not a registry pointer ({exc!r}); promote a model to rewrite it"
            ) from exc

    def current_version(self) -> str:
        """The current model's version; RegistryError, saying how to promote one, when there is none."""
        pointer = self.current()
        if pointer is None:
            raise RegistryError(
                f"the model registry {self.root} has no current model: promote one with `assist classifier promote "
                f"--model MODEL --holdout FILE --registry {self.root}`"
            )
        return pointer.version

    def make_current(self, version: str) -> Pointer:
        """Point `current` at `version`; `promote.promote` is the gate that decides whether a candidate may."""
        pointer = self.current()
        if pointer is None:
            return self._point(version, (), "promote", None)
        return self._point(version, (*pointer.previous, pointer.version), "promote", pointer.version)

    def rollback(self, to: str | None = None) -> Pointer:
        """Point `current` back at the version before it, or at `to`, which must have been current before."""
        pointer = self.current()
        if pointer is None or not pointer.previous:
            raise RegistryError(f"nothing to roll back to: the model registry {self.root} has no earlier current model")
        target = to or pointer.previous[-1]
        if target == pointer.version:
            raise RegistryError(f"{target} is already the current model of {self.root}")
        if target not in pointer.previous:
            raise RegistryError(
                f"{target} was never the current model of {self.root}; roll back to one of {list(pointer.previous)}"
            )
        # undo every promotion after `target`'s last time as current
        cut = len(pointer.previous) - 1 - pointer.previous[::-1].index(target)
        return self._point(target, pointer.previous[:cut], "rollback", pointer.version)

    def describe(self) -> dict[str, Any]:
        """The pointer and every stored version with the gist of its promotion decision."""
        pointer = self.current()
        rows = []
        for version in self.versions():
            decision = self.decision(version) or {}
            candidate = (decision.get("metrics") or {}).get("candidate") or {}
            rows.append(
                {
                    "version": version,
                    "current": pointer is not None and version == pointer.version,
                    "promoted": decision.get("promoted"),
                    "decided_at": decision.get("decided_at"),
                    "holdout_accuracy": candidate.get("accuracy"),
                    "reasons": decision.get("reasons"),
                }
            )
        rows.sort(key=lambda r: r["decided_at"] or "")
        return {"registry": self.root, "pointer": asdict(pointer) if pointer else None, "versions": rows}

    def _point(self, version: str, previous: tuple[str, ...], action: str, replaced: str | None) -> Pointer:
        if version not in self.versions():
            raise RegistryError(
                f"{version} is not a model of the registry {self.root}: see `assist classifier versions`"
            )
        pointer = Pointer(version, previous, datetime.now(UTC).isoformat(timespec="seconds"), action, replaced)
        self._store.write(POINTER, json.dumps(asdict(pointer)).encode("utf-8"))
        log.info("classify.pointer_moved", registry=self.root, version=version, replaced=replaced, action=action)
        return pointer
