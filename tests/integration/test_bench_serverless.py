"""`assist bench cold-start` and `assist bench statemachine` as a user runs them (shape, not speed: the
figures are read from the command's output, side by side with their budgets and baselines)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assist_dev.bench.figures import render
from assist_dev.commands.bench import cold_start_table, statemachine_table
from tests.conftest import MODEL_DIR

pytestmark = pytest.mark.integration
ASSIST = Path(sys.executable).with_name("assist")


def bench(tmp_path: Path, *args: str) -> dict:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "billing.md").write_text("# Billing\n\nQuota and usage questions are routed to PLATFORM.\n")
    (docs / "routing.md").write_text("# Routing\n\nThe engine decides the type of a message in layers.\n")
    env = {**os.environ, "EMBED_MODEL_DIR": str(MODEL_DIR), "LOG_LEVEL": "WARNING"}
    r = subprocess.run(
        [str(ASSIST), "bench", *args, "--docs", str(docs), "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_cold_start_reports_every_function_against_its_budget(tmp_path):
    out = bench(tmp_path, "cold-start", "--runs", "1")
    budgets = {"classify": 1.0, "retrieve": 3.0, "answer": 1.0, "export": 2.0, "sync": 5.0}
    for name, budget in budgets.items():
        r = out[name]
        assert r["budget_s"] == budget
        assert r["import_s"] > 0
        assert r["first_call_s"] >= 0
        assert r["ratio"] == pytest.approx((r["import_s"] + r["first_call_s"]) / budget, abs=0.02)
    assert out["retrieve"]["installed_mb"] > out["classify"]["installed_mb"] > out["export"]["installed_mb"] > 0
    assert out["export"]["model_mb"] == 0
    assert "lancedb" in out["retrieve"]["imports_s"]  # each import's share: the retrieve function opens LanceDB
    assert "lancedb" not in out["classify"]["imports_s"]
    assert out["answer_to_classify"] == pytest.approx(out["answer"]["total_s"] / out["classify"]["total_s"], abs=0.01)
    assert out["retrieve"]["model_mb"] > 10  # the ONNX model is baked into the images that embed
    # without --json, the same figures as a table: a row per function, its ratio beside its budget
    rows = {line.split()[0]: line.split() for line in render(cold_start_table(out)).splitlines()[1:6]}
    assert set(rows) == set(budgets)
    assert [float(rows["retrieve"][4]), float(rows["retrieve"][5])] == [3.0, out["retrieve"]["ratio"]]


def test_statemachine_bench_compares_hops_and_asks_with_their_in_process_baseline(tmp_path):
    out = bench(tmp_path, "statemachine", "--runs", "3")
    assert set(out["invoke_hop_ms"]) == {"nodelay", "nagle", "in_process"}
    assert set(out["ask"]) == {"PLATFORM", "RETRIEVAL"}
    for r in out["ask"].values():
        assert r["state_machine_ms"] > 0
        assert r["in_process_ms"] > 0
    table = render(statemachine_table(out)).splitlines()
    assert [line.split()[:2] for line in table[3:5]] == [["ask", "PLATFORM"], ["ask", "RETRIEVAL"]]
