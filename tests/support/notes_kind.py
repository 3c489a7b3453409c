"""An example source kind, as a plug-in adds one: a text file of notes, each note a title line and its text,
the notes parted by a line of their own (`separator`, a field only this kind's spec has). One file: the class,
its spec and its `@register`; tests/integration/test_a_new_source_kind.py installs it and indexes through it."""

from __future__ import annotations

from pathlib import Path

from assist.index import manifest
from assist.index.chunking import doc_hash, parse_document
from assist.settings import Settings
from assist.sources.registry import Kind, register
from assist.sources.spec import Page, Read, SourceError, SourceSpec
from assist.sources.validators import Validators


class NotesSpec(SourceSpec):
    separator: str = "---"


@register("notes")
class Notes(Kind):
    spec = NotesSpec

    def read(self, spec: NotesSpec, settings: Settings, previous: Validators, indexed: dict[str, str]) -> Read:
        path = Path(spec.location)
        if not path.is_file():
            raise SourceError(f"{path}: no such notes file")
        out = Read(counts={"notes": 0})
        for note in path.read_text(encoding="utf-8").split(f"\n{spec.separator}\n"):
            title, _, text = note.strip().partition("\n")
            doc_id = spec.prefix + "-".join(title.lower().split())
            doc = parse_document(doc_id, f"# {title}\n\n{text}", source=str(path), url=f"{path.name}#{doc_id}")
            out.pages.append(Page(doc_id, doc_hash(note), doc.chunks, manifest.entry_for(doc)))
            out.counts["notes"] += 1
        return out
