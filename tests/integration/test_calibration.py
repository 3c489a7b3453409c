"""Calibration at index time (ADR 0096), end to end: a folder of Markdown files no test has seen, generated
here, indexed by `assist index` in its own process with nothing set by hand, gets the verdict's threshold in
its index (beside its chunks and manifest), `assist doctor` shows it, and the engine judges by it. A folder
too small to calibrate, published, gets a conservative default in its version, saying so. Real LanceDB, the
real MiniLM embedder."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assist.ask.build import build_engine
from assist.contracts import AskRequest, Scope
from assist.index import calibration, pointer
from assist.index.store import connect
from assist.retrieve.calibrate import calibrate_index
from assist_dev.local.definition import ROOT

pytestmark = pytest.mark.integration
THINGS = ["lantern", "harbour", "ledger", "orchard", "beacon", "quarry", "compass", "glacier", "meadow", "foundry"]
ACTIONS = ["register", "archive", "calibrate", "inspect", "replicate", "retire", "schedule", "audit"]


def generated_docs(root: Path, pages: int, seed: int) -> Path:
    """`pages` Markdown pages about a made-up product (two sections each), different for every seed."""
    rng = random.Random(seed)
    root.mkdir()
    for i in range(pages):
        thing, action = rng.choice(THINGS), rng.choice(ACTIONS)
        name = f"{thing}-{action}-{i}"
        limit, flag = rng.randint(2, 90), f"--{rng.choice(THINGS)}-{rng.choice(ACTIONS)}"
        (root / f"{name}.md").write_text(
            f"# How to {action} a {thing}\n\nA {thing} in Tessaract is {action}ed with `tess {action} {thing}`. "
            f"The {thing} service accepts at most {limit} requests per minute; pass `{flag}` to change it.\n\n"
            f"## Limits of the {thing} {action} step\n\nThe {action} step keeps {limit} copies of every {thing} "
            f"record and refuses a {thing} larger than {limit * 3} megabytes. Set `TESS_{thing.upper()}_LIMIT` "
            f"to raise it.\n",
            encoding="utf-8",
        )
    return root


@pytest.fixture
def environ(base_settings) -> dict[str, str]:
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "HF_HUB_OFFLINE") if k in os.environ}
    return env | {
        "PYTHONPATH": f"{ROOT / 'layers/common/python'}:{ROOT}",
        "EMBED_MODEL_DIR": base_settings.embed.model_dir,
    }


def assist(environ: dict[str, str], *args: str) -> dict:
    cmd = [sys.executable, "-m", "assist.cli", *args]
    done = subprocess.run(cmd, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=600)
    assert done.stdout.strip(), done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_freshly_indexed_folder_is_calibrated_and_judged_by_its_own_threshold(tmp_path, environ, base_settings):
    docs = generated_docs(tmp_path / "docs", 24, seed=random.SystemRandom().randrange(10**6))
    index = str(tmp_path / "index")
    report = assist(environ, "index", str(docs), "--index", index, "--quiet")

    c = calibration.read(connect(index), base_settings.index.table)
    assert c is not None, report
    assert c.calibrated
    assert report["calibration"] == c.summary()
    assert c.sections == 48
    assert 48 <= c.probes <= 144
    assert math.isfinite(c.threshold)
    assert c.bound <= 0.05
    assert c.expected_rate <= 0.05
    if c.conflict:  # the probes' cut caught too little of the bank: raised, never past the configured one
        assert c.probe_threshold < c.threshold <= base_settings.uncertain.threshold
    else:
        assert c.probes_flagged <= c.probes * 0.05
        assert c.threshold == c.probe_threshold
    assert c.offtopic == 120
    assert 0.0 <= c.offtopic_caught <= 1.0
    assert c.weights == [1.5, 0.0, 0.25, 0.7]  # the configured weights it holds for

    doctor = assist(environ | {"INDEX_URI": index}, "doctor", "--json")
    assert doctor["index"]["calibration"] == c.summary()

    s = base_settings.with_(
        index={"uri": index},
        uncertain={"calibrate": True},
        sessions={"store": "file", "store_file": str(tmp_path / "s.sqlite3")},
    )
    engine = build_engine(s)
    page = sorted(docs.glob("*.md"))[0].read_text(encoding="utf-8")
    question = page.splitlines()[0].lstrip("# ") + "?"  # "How to audit a lantern?": scored, not decided by a rule
    answer = engine.ask(AskRequest(session_id="cal-1", message=question))
    verdict = next(st for st in answer.trace.stages if st.name == "retrieve").verdict
    assert verdict.threshold == round(c.threshold, 4)  # this index's threshold, not the configured one
    assert verdict.uncertain == (verdict.score < c.threshold)


def test_a_small_folder_published_keeps_a_conservative_default_and_says_so(tmp_path, environ, base_settings):
    docs = generated_docs(tmp_path / "small", 4, seed=1)
    root = str(tmp_path / "published")
    report = assist(environ, "index", str(docs), "--index", root, "--publish", "--quiet")
    assert report["published"]
    assert report["calibration"]["calibrated"] is False

    version = pointer.live_uri(root)
    assert version != root
    assert calibration.read(connect(root), base_settings.index.table) is None  # not beside the versions: in one
    c = calibration.read(connect(version), base_settings.index.table)
    assert c is not None
    assert not c.calibrated
    assert c.sections == 8
    assert "under 30" in c.why
    assert c.threshold <= base_settings.uncertain.threshold  # never flags more than the configured verdict would


def test_a_scope_with_sections_enough_is_calibrated_apart_and_its_questions_are_judged_by_it(
    tmp_path, environ, base_settings, embedder
):
    """Two products and a shared folder: `alpha` has 40 sections of its own and gets a calibration of its own
    (probes from what it sees, searched within it); `beta`'s 16 are too few, so its questions are judged by the
    corpus's, as unscoped ones are. A sync that changed nothing keeps both; one out of time leaves the scopes out."""
    seed = 5  # fixed: with a random one both cuts may sit at the configured ceiling (ADR 0096's conflict), equal
    generated_docs(tmp_path / "alpha", 20, seed)
    generated_docs(tmp_path / "beta", 8, seed + 1)
    generated_docs(tmp_path / "shared", 3, seed + 2)
    sources = tmp_path / "sources.yaml"
    sources.write_text(
        "sources:\n"
        "  - {location: alpha, prefix: alpha/, scope: {product: alpha}}\n"
        "  - {location: beta, prefix: beta/, scope: {product: beta}}\n"
        "  - {location: shared, prefix: shared/}\n",
        encoding="utf-8",
    )
    index = str(tmp_path / "index")
    report = assist(environ, "index", "--sources", str(sources), "--index", index, "--quiet")

    c = calibration.read(connect(index), base_settings.index.table)
    assert c is not None, report
    assert (c.sections, c.calibrated) == (62, True)
    assert sorted(c.scopes) == ["alpha/*"]  # beta's 16 sections of its own are under 30
    alpha = c.scopes["alpha/*"]
    assert (alpha.sections, alpha.calibrated) == (46, True)  # its own 40 and the shared 6
    assert 46 <= alpha.probes <= 138
    assert math.isfinite(alpha.threshold)
    assert alpha.offtopic == 120
    assert alpha.weights == c.weights
    assert alpha.threshold != c.threshold  # else the judging below could not tell them apart
    assert report["calibration"] == c.summary()
    assert report["calibration"]["scopes"]["alpha/*"]["threshold"] == alpha.threshold

    s = base_settings.with_(
        index={"uri": index},
        uncertain={"calibrate": True},
        sessions={"store": "file", "store_file": str(tmp_path / "s.sqlite3")},
    )
    engine = build_engine(s)
    question = (tmp_path / "alpha").glob("*.md").__next__().read_text(encoding="utf-8").splitlines()[0].lstrip("# ")
    held = {}
    for name, scope in (("alpha", Scope(product="alpha")), ("beta", Scope(product="beta")), ("every", None)):
        answer = engine.ask(AskRequest(session_id=f"cal-scope-{name}", message=f"{question}?", scope=scope))
        verdict = next(st for st in answer.trace.stages if st.name == "retrieve").verdict
        held[name] = verdict.threshold
    assert held == {
        "alpha": round(alpha.threshold, 4),
        "beta": round(c.threshold, 4),
        "every": round(c.threshold, 4),
    }

    again = assist(environ, "index", "--sources", str(sources), "--index", index, "--quiet")
    assert again["calibration"] == report["calibration"]  # nothing changed: kept, computed_at and all

    # a build out of time calibrates the corpus and leaves the scopes to the next sync, which does not keep it
    short = calibrate_index(connect(index), s, embedder, changed=True, until=time.time() + 1)
    assert short is not None
    assert (short.scopes, short.apart) == ({}, False)
    assert calibration.read(connect(index), base_settings.index.table) == short
    next_sync = calibrate_index(connect(index), s, embedder, changed=False)
    assert next_sync is not None
    assert (sorted(next_sync.scopes), next_sync.apart) == (["alpha/*"], True)
