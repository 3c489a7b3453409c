"""`assist bench embed` and `assist bench index` as a user runs them (shape, not speed: each figure sits beside its
baseline — int8 beside fp32 and the FLOP limit, N workers beside one — in one run's output)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assist_dev.bench.figures import render
from assist_dev.commands.bench import embed_table, index_table
from tests.conftest import MODEL_DIR, ROOT

pytestmark = pytest.mark.integration
ASSIST = Path(sys.executable).with_name("assist")


def bench(*args: str) -> dict:
    env = {**os.environ, "EMBED_MODEL_DIR": str(MODEL_DIR), "LOG_LEVEL": "WARNING", "HF_HUB_OFFLINE": "1"}
    r = subprocess.run(
        [str(ASSIST), "bench", *args, "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_bench_embed_puts_int8_beside_fp32_and_the_flop_limit():
    result = bench("embed", "--chunks", "8")
    assert 200 <= result["mean_tokens"] <= 280  # passages of a docs site's chunk length
    for name in ("fp32", "int8"):
        assert result[name]["cpu_ms_per_chunk"] > 0
        assert result[name]["chunks_per_s_per_core"] == pytest.approx(1000 / result[name]["cpu_ms_per_chunk"], 0.01)
    assert result["int8"]["model_mb"] < result["fp32"]["model_mb"] / 3
    assert result["limit_ms_per_chunk"] > 0
    assert "× limit" in render(embed_table(result))


def test_bench_index_builds_the_same_corpus_at_each_worker_count():
    result = bench("index", "--chunks", "48", "--workers", "1,2", "--shard-chunks", "12", "--commit-rows", "400")
    assert [r["workers"] for r in result["runs"]] == [1, 2]
    assert {r["chunks"] for r in result["runs"]} == {48}
    assert result["runs"][0]["speedup"] == 1
    assert result["runs"][1]["speedup"] == pytest.approx(
        result["runs"][0]["wall_s"] / result["runs"][1]["wall_s"], 0.01
    )
    assert result["commit"]["rows"] == 400
    assert "speed-up" in render(index_table(result))
