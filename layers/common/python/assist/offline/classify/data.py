"""Labelled examples from JSONL: `{"text", "label"}` rows, routing rows (data/routing/README.md) and the label
records `assist export` writes (docs/data-flywheel.md)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from assist.contracts import Layer
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
    #: the row's weight in training, relative to a seed row
    weight: float = 1.0
    #: an exported record's revision (feedback re-exports a turn): of one id, the highest is kept
    revision: int = 0

    @property
    def history_types(self) -> list[str]:
        return [t for t, _ in self.history]


@dataclass
class Rows:
    examples: list[Example] = field(default_factory=list)
    #: examples that came from exported label records
    exported: int = 0
    #: exported records whose label a person gave (`label_source: "user"`)
    user_labels: int = 0
    #: exported records left out, by reason (`self_labeled`, `fallback`, `visitor`)
    skipped: Counter[str] = field(default_factory=Counter)
    #: id → revision of records left out after feedback: they still supersede that id's earlier revisions
    withdrawn: dict[str, int] = field(default_factory=dict)

    def extend(self, other: Rows) -> None:
        self.examples += other.examples
        self.exported += other.exported
        self.user_labels += other.user_labels
        self.skipped.update(other.skipped)
        for i, rev in other.withdrawn.items():
            self.withdrawn[i] = max(rev, self.withdrawn.get(i, 0))


def parse_rows(
    lines: Iterable[str],
    where: str,
    label_weight: float = 1.0,
    user_label_weight: float = 1.0,
    visitors: bool = False,
) -> Rows:
    """Rows of one JSONL text; exported label records get `label_weight` (`user_label_weight` when a person gave
    the label), and the embedding layer's own guesses are left out, as are anonymous widget visitors' turns
    (`site_key`) unless `visitors`: anyone can script a public page's questions into the router's training."""
    out = Rows()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if "schema" in row:  # an exported label record
                user = _by_user(row)  # a person's label is never the model's own guess
                reason = "visitor" if row.get("site_key") and not visitors else None if user else _guess(row)
                if reason:
                    out.skipped[reason] += 1
                    if rev := int(row.get("revision", 0)):
                        out.withdrawn[str(row["id"])] = max(rev, out.withdrawn.get(str(row["id"]), 0))
                    continue
                out.examples.append(_label_record(row, user_label_weight if user else label_weight))
                out.exported += 1
                out.user_labels += user
            else:
                out.examples.append(_example(row, f"{Path(where).name}:{n}"))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise DataError(
                f"{where}:{n}: expected {{'text', 'label'}}, a routing row {{'message', 'expected', 'history', "
                f"'tags'}} or an exported label record {{'schema', 'message', 'type', 'layer', ...}}: {exc}"
            ) from exc
    return out


def read_examples(path: str | Path) -> list[Example]:
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: no such file")
    with p.open(encoding="utf-8") as f:
        return parse_rows(f, str(p)).examples


def _guess(record: dict) -> str | None:
    """Why an exported label is the embedding classifier's own guess, left out so the model does not learn from
    itself: it decided the turn (`self_labeled`), or the turn fell back to its best class below the threshold."""
    if record["self_labeled"]:
        return "self_labeled"
    return "fallback" if record["layer"] == Layer.FALLBACK else None


def _by_user(record: dict) -> bool:
    return record.get("label_source") == "user"


def _history(row: dict) -> tuple[tuple[str, str], ...]:
    return tuple((str(h["type"]), str(h["topic"])) for h in row.get("history") or [])


def _label_record(record: dict, weight: float) -> Example:
    return Example(
        id=str(record["id"]),
        text=str(record["message"]),
        label=str(record["type"]),
        history=_history(record),
        tags=("exported", f"layer:{record['layer']}", *(["user_label"] if _by_user(record) else [])),
        weight=weight,
        revision=int(record.get("revision", 0)),
    )


def latest_revisions(rows: Rows) -> tuple[list[Example], int]:
    """Of an exported turn read in several revisions (feedback exports it again), the latest only, and none when
    that one was left out; rows without revisions as they are. Returns the rows and how many were dropped."""
    final = dict(rows.withdrawn)
    for e in rows.examples:
        if e.revision:
            final[e.id] = max(e.revision, final.get(e.id, 0))
    out, placed = [], set()
    for e in rows.examples:
        if e.id not in final:
            out.append(e)
        elif e.revision == final[e.id] and e.id not in placed:
            out.append(e)
            placed.add(e.id)
    return out, len(rows.examples) - len(out)


def _example(row: dict, where: str) -> Example:
    if "message" in row:
        return Example(
            id=str(row.get("id", where)),
            text=str(row["message"]),
            label=str(row["expected"]),
            history=_history(row),
            tags=tuple(row.get("tags") or ()),
        )
    return Example(id=str(row.get("id", where)), text=str(row["text"]), label=str(row["label"]))


def examples_digest(examples: list[Example]) -> str:
    """A hash of what training saw (text, label, history, tags, and weights other than 1), independent of file
    names and layout."""
    h = hashlib.sha256()
    for e in examples:
        seen = [e.text, e.label, e.history, e.tags] + ([e.weight] if e.weight != 1.0 else [])
        h.update(json.dumps(seen, ensure_ascii=False).encode())
        h.update(b"\n")
    return h.hexdigest()


def convert_clinc(path: str | Path, out_dir: str | Path) -> dict[str, int]:
    """CLINC150's one JSON document (`{"train": [[text, intent], ...], "oos_train": ..., "test": ...}`) as one
    `{"text", "label"}` JSONL per split in `out_dir`; returns the rows written per file. Out-of-scope rows keep
    their intent `oos`: a label outside the model's classes, so `classifier eval` counts them as to abstain on,
    and they are given to training only as `--guard-data` (docs/routing.md)."""
    p, out = Path(path), Path(out_dir)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
        splits = {str(k): [(str(text), str(label)) for text, label in rows] for k, rows in doc.items()}
    except FileNotFoundError as exc:
        raise DataError(f"{p}: no such file") from exc
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError, TypeError, ValueError) as exc:
        raise DataError(f"{p}: expected CLINC150's {{split: [[text, intent], ...]}} JSON: {exc}") from exc
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for split, rows in splits.items():
        target = out / f"{split}.jsonl"
        with target.open("w", encoding="utf-8") as f:
            f.writelines(json.dumps({"text": t, "label": lab}, ensure_ascii=False) + "\n" for t, lab in rows)
        written[str(target)] = len(rows)
    return written
