"""Labelled examples from JSONL: `{"text", "label"}` rows or routing rows (data/routing/README.md)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from assist.errors import AssistError


class DataError(AssistError, ValueError):
    """A data file is missing or has a row we cannot read."""


@dataclass(frozen=True)
class Example:
    id: str
    text: str
    label: str
    #: earlier turns as (type, 60-char topic), oldest first
    history: tuple[tuple[str, str], ...] = ()
    tags: tuple[str, ...] = field(default_factory=tuple)

    @property
    def history_types(self) -> list[str]:
        return [t for t, _ in self.history]


def read_examples(path: str | Path) -> list[Example]:
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: no such file")
    out: list[Example] = []
    with p.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(_example(json.loads(line), f"{p.name}:{n}"))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise DataError(
                    f"{p}:{n}: expected {{'text', 'label'}} or a routing row "
                    f"{{'message', 'expected', 'history', 'tags'}}: {exc}"
                ) from exc
    return out


def _example(row: dict, where: str) -> Example:
    if "message" in row:
        history = tuple((str(h["type"]), str(h["topic"])) for h in row.get("history") or [])
        return Example(
            id=str(row.get("id", where)),
            text=str(row["message"]),
            label=str(row["expected"]),
            history=history,
            tags=tuple(row.get("tags") or ()),
        )
    return Example(id=str(row.get("id", where)), text=str(row["text"]), label=str(row["label"]))


def file_digest(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def examples_digest(examples: list[Example]) -> str:
    """A hash of what training saw (text, label, history, tags), independent of file names and layout."""
    h = hashlib.sha256()
    for e in examples:
        h.update(json.dumps([e.text, e.label, e.history, e.tags], ensure_ascii=False).encode())
        h.update(b"\n")
    return h.hexdigest()
