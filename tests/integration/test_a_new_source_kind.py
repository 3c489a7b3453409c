"""A new source kind is one new file (tests/support/notes_kind.py): installed as a distribution lists it (an
`assist.source_kinds` entry point), `assist index --kind` offers it, a sources file gives its own spec field,
and what it reads is indexed and found. The CLI in its own process, real LanceDB and the real embedder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assist.ask.build import build_engine
from assist.settings import Settings
from assist_dev.local.definition import ROOT

pytestmark = pytest.mark.integration
NOTES = (
    "Watering the fern\nThe fern wants rain water every third day, never from the tap.\n{sep}\n"
    "Feeding the cat\nThe cat eats twice a day: a spoon of wet food at seven and at six.\n"
)


def plugin(site: Path) -> None:
    """What installing a distribution that ships the kind leaves on the path: its metadata and entry point."""
    info = site / "assist_notes-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: assist-notes\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[assist.source_kinds]\nnotes = tests.support.notes_kind\n")


def index(tmp_path: Path, settings: Settings, *args: str, installed: bool = True) -> subprocess.CompletedProcess:
    paths = [str(tmp_path / "site")] if installed else []
    environ = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "HF_HUB_OFFLINE") if k in os.environ}
    environ |= {
        "PYTHONPATH": ":".join([*paths, str(ROOT / "layers/common/python"), str(ROOT)]),
        "INDEX_URI": str(tmp_path / "index"),
        "EMBED_MODEL_DIR": settings.embed.model_dir,
    }
    cmd = [sys.executable, "-m", "assist.cli", "index", *args, "--quiet"]
    return subprocess.run(cmd, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=300)


def test_a_kind_in_one_file_is_offered_by_the_cli_and_indexed(tmp_path: Path, docs_index: Settings):
    plugin(tmp_path / "site")
    (tmp_path / "home.txt").write_text(NOTES.format(sep="---"))

    absent = index(tmp_path, docs_index, "--kind", "notes", str(tmp_path / "home.txt"), installed=False)
    assert absent.returncode == 2
    assert "invalid choice: 'notes'" in absent.stderr

    done = index(tmp_path, docs_index, "--kind", "notes", str(tmp_path / "home.txt"))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert [(s["kind"], s["documents"], s["notes"]) for s in report["sources"]] == [("notes", 2, 2)]

    engine = build_engine(docs_index.with_(index={"uri": str(tmp_path / "index")}))
    assert engine.retriever().rank("How often does the fern need water?", 2)[0] == "watering-the-fern"
    assert engine.retriever().rank("When is the cat fed?", 2)[0] == "feeding-the-cat"


def test_a_sources_file_gives_the_kinds_own_field_and_nothing_it_does_not_take(tmp_path: Path, docs_index: Settings):
    plugin(tmp_path / "site")
    (tmp_path / "home.txt").write_text(NOTES.format(sep="==="))
    (tmp_path / "sources.yaml").write_text("sources:\n  - {location: home.txt, kind: notes, separator: '==='}\n")
    done = index(tmp_path, docs_index, "--sources", str(tmp_path / "sources.yaml"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["sources"][0]["documents"] == 2

    (tmp_path / "bad.yaml").write_text("sources:\n  - {location: home.txt, kind: notes, ref: main}\n")
    refused = index(tmp_path, docs_index, "--sources", str(tmp_path / "bad.yaml"))
    assert refused.returncode == 2
    assert "a notes source" in refused.stderr
    assert "`ref`" in refused.stderr
