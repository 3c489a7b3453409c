"""A folder of generated Markdown pages (seeded, so every run writes the same text): sections of realistic
length for the index build's tests and benchmarks, with no corpus kept in the repo."""

from __future__ import annotations

import random
from pathlib import Path

WORDS = [
    "token",
    "quota",
    "region",
    "bucket",
    "deploy",
    "rollback",
    "webhook",
    "retry",
    "schema",
    "cursor",
    "batch",
    "stream",
    "partition",
    "replica",
    "latency",
    "throughput",
    "cache",
    "shard",
    "lease",
    "writer",
    "reader",
    "version",
    "pointer",
    "manifest",
    "calibration",
    "threshold",
    "session",
    "history",
    "feedback",
    "export",
    "widget",
    "origin",
    "visitor",
    "budget",
    "limit",
    "window",
    "model",
    "slot",
    "prompt",
    "answer",
    "source",
    "chunk",
    "vector",
    "index",
    "query",
    "filter",
    "fusion",
    "weight",
    "rank",
    "score",
    "passage",
    "heading",
    "title",
    "section",
    "page",
]


def write(root: Path, pages: int, sections: int = 3, words: int = 60, seed: int = 7) -> Path:
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for p in range(pages):
        parts = [f"# Page {p}: the {rng.choice(WORDS)} {rng.choice(WORDS)}\n"]
        for s in range(sections):
            text = " ".join(rng.choice(WORDS) for _ in range(words))
            parts.append(f"## Section {s} on {rng.choice(WORDS)}\n\n{text.capitalize()}.\n")
        (root / f"page-{p:03d}.md").write_text("\n".join(parts))
    return root
