"""`assist bench embed`: the embedder's CPU cost per chunk, fp32 beside int8, against the physical limit.

One thread, passages of about 240 tokens (generated, `passages.py`), in batches of similar length as a build
embeds them. The cost is CPU time (`time.process_time`), so other work on the machine slows the wall clock, not
the figure. The limit: the model's floating-point operations for that many tokens (each layer's projections and
feed-forward, 2 FLOP per multiply-add, and attention over the sequence), at one core's peak (SIMD lanes from the
CPU's flags × 2 FMA units × 2 FLOP × its clock: an assumption this module states, not a measurement)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from assist.embed.files import INT8_MODEL_FILE, MODEL_FILE
from assist.embed.onnx import OnnxEmbedder
from assist.settings import Settings
from assist_dev.bench.passages import passages, token_counts

# all-MiniLM-L6-v2
LAYERS, HIDDEN, FFN = 6, 384, 1536
BATCH = 64


def flop_per_chunk(tokens: float) -> float:
    """Forward-pass FLOP for one sequence of `tokens` (embeddings and pooling are negligible)."""
    dense = 4 * HIDDEN * HIDDEN + 2 * HIDDEN * FFN  # Q, K, V, O projections and the two feed-forward layers
    attention = 2 * tokens * HIDDEN  # QKᵀ and the weighted sum over V, per token
    return 2.0 * LAYERS * tokens * (dense + attention)


def peak_gflops() -> dict[str, Any]:
    """One core's fp32 peak as the CPU's flags and clock imply (an assumption, said as one)."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    flags = set(re.search(r"^flags\s*:\s*(.*)$", info, re.M).group(1).split()) if "flags" in info else set()
    mhz = [float(m) for m in re.findall(r"^cpu MHz\s*:\s*([\d.]+)", info, re.M)]
    lanes = 16 if "avx512f" in flags else 8 if "avx2" in flags else 4
    ghz = max(mhz) / 1000 if mhz else 2.5
    return {
        "gflops": round(lanes * 2 * 2 * ghz, 1),
        "assumed": f"{lanes} fp32 lanes × 2 FMA units × 2 FLOP × {ghz:.2f} GHz",
        "vnni": "avx512_vnni" in flags or "avx_vnni" in flags,
    }


def measure(embedder: OnnxEmbedder, texts: list[str]) -> dict[str, float]:
    embedder.embed(texts[:8])  # warm: the session's first run allocates
    ordered = sorted(texts, key=len)
    cpu, wall = time.process_time(), time.perf_counter()
    for i in range(0, len(ordered), BATCH):
        embedder.embed(ordered[i : i + BATCH])
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {
        "cpu_ms_per_chunk": round(cpu * 1000 / len(texts), 2),
        "chunks_per_s_per_core": round(len(texts) / cpu, 2),
        "wall_s": round(wall, 2),
    }


def run(settings: Settings, chunks: int = 256) -> dict[str, Any]:
    model_dir = settings.embed.model_dir
    texts = passages(chunks, model_dir, chars=None)  # no chunker here: the full 240 tokens
    tokens = token_counts(texts, model_dir)
    mean_tokens = sum(tokens) / len(tokens)
    flop = flop_per_chunk(mean_tokens)
    peak = peak_gflops()
    out: dict[str, Any] = {"chunks": chunks, "mean_tokens": round(mean_tokens, 1), "gflop_per_chunk": flop / 1e9}
    out["peak"] = peak
    out["limit_ms_per_chunk"] = round(flop / (peak["gflops"] * 1e9) * 1000, 2)
    for name, int8, file in (("fp32", False, MODEL_FILE), ("int8", True, INT8_MODEL_FILE)):
        figures = measure(OnnxEmbedder.load(model_dir, threads=1, int8=int8), texts)
        figures["model_mb"] = round(os.path.getsize(Path(model_dir) / file) / 2**20, 1)
        figures["gflops_achieved"] = round(flop / (figures["cpu_ms_per_chunk"] / 1000) / 1e9, 1)
        figures["share_of_fp32_peak"] = round(figures["gflops_achieved"] / peak["gflops"], 3)
        out[name] = figures
    out["int8_vs_fp32_cpu"] = round(out["int8"]["cpu_ms_per_chunk"] / out["fp32"]["cpu_ms_per_chunk"], 3)
    out["gflop_per_chunk"] = round(out["gflop_per_chunk"], 3)
    return out
