"""The index build in shards (ADR 0120), through real LanceDB and the real embedder: N worker processes build
the rows one process builds; a build stopped part-way embeds only what it had not; a dead writer's lease blocks
nobody; a function far shorter than its corpus needs converges over runs and publishes nothing half-made."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

from assist.build.files import build_files
from assist.build.run import sync_sources
from assist.index.lock import LOCK_NAME, writer_lease
from assist.index.store import connect, open_table
from assist.retrieve.search import Retriever
from assist.serverless.lambda_entry import LambdaFunction
from assist.sources.spec import SourceSpec
from tests.conftest import ROOT
from tests.support import generated_docs

pytestmark = pytest.mark.integration
SHARD = 8  # chunks a shard: a few dozen pages make a dozen shards
QUERIES = ["how is the writer lease taken", "retry a webhook batch", "the replica latency window", "quota per region"]


class Counting:
    """The real embedder, counting the texts it is asked to embed."""

    def __init__(self, inner, fail_after: int | None = None) -> None:
        self.inner, self.id, self.dim = inner, inner.id, inner.dim
        self.texts, self.calls, self.fail_after = 0, 0, fail_after

    def embed(self, texts):
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise RuntimeError("killed")  # a worker stopped between two batches
        self.calls += 1
        self.texts += len(texts)
        return self.inner.embed(texts)


@pytest.fixture
def corpus(tmp_path):
    return generated_docs.write(tmp_path / "corpus", pages=24)


def _settings(base, where) -> object:
    return base.with_(index={"uri": str(where), "shard_chunks": SHARD})


def _rows(settings, embedder) -> dict:
    table = open_table(settings, embedder).to_arrow().to_pylist()
    return {r["id"]: r for r in table}


def _unique_contents(settings, embedder) -> int:
    return len({r["content"] for r in _rows(settings, embedder).values()})


def test_four_worker_processes_build_exactly_the_rows_one_process_builds(corpus, base_settings, embedder, tmp_path):
    one, four = _settings(base_settings, tmp_path / "one"), _settings(base_settings, tmp_path / "four")
    alone = sync_sources([SourceSpec(str(corpus))], one, embedder, progress=False)
    spread = sync_sources([SourceSpec(str(corpus))], four, embedder, progress=False, workers=4)
    assert alone["shards"] == spread["shards"] >= 8
    a, b = _rows(one, embedder), _rows(four, embedder)
    assert sorted(a) == sorted(b)
    for key, row in a.items():
        other = b[key]
        assert np.max(np.abs(np.array(row["vector"]) - np.array(other["vector"]))) <= 1e-6, key
        assert {k: v for k, v in row.items() if k != "vector"} == {k: v for k, v in other.items() if k != "vector"}
    ra, rb = Retriever(open_table(one, embedder), embedder), Retriever(open_table(four, embedder), embedder)
    for q in QUERIES:
        x, y = ra.search(q, k=5), rb.search(q, k=5)
        assert [c.id for c in x.chunks] == [c.id for c in y.chunks], q
        assert [c.score for c in x.chunks] == pytest.approx([c.score for c in y.chunks], abs=1e-6), q
    assert build_files(str(tmp_path / "four")).keys("") == []  # a committed build leaves no files behind


def test_a_build_stopped_part_way_embeds_only_what_it_had_not(corpus, base_settings, embedder, tmp_path):
    s = _settings(base_settings, tmp_path / "idx")
    stopped = Counting(embedder, fail_after=3)
    with pytest.raises(RuntimeError, match="killed"):
        sync_sources([SourceSpec(str(corpus))], s, stopped, progress=False)
    assert stopped.texts > 0
    assert "chunks" not in connect(s.index.uri).table_names()  # nothing half-made is written to the index
    rerun = Counting(embedder)
    report = sync_sources([SourceSpec(str(corpus))], s, rerun, progress=False)
    assert report["complete"] is True
    total = _unique_contents(s, embedder)
    assert stopped.texts + rerun.texts == total  # each text embedded once over the two runs
    assert report["embedded"] == rerun.texts


def test_a_killed_index_process_leaves_its_vectors_and_no_lease(corpus, base_settings, embedder, tmp_path):
    s = _settings(base_settings, tmp_path / "idx")
    env = {"EMBED_MODEL_DIR": base_settings.embed.model_dir, "INDEX_SHARD_CHUNKS": str(SHARD), "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "assist.cli", "index", str(corpus), "--index", s.index.uri, "--quiet"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**dict(os.environ), **env}, stderr=subprocess.DEVNULL)
    files = build_files(s.index.uri)
    deadline = time.monotonic() + 120
    while len(files.keys("cache/")) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = len(files.keys("cache/"))
    assert kept >= 2, "the process was killed after it had kept some batches"
    rerun = Counting(embedder)
    sync_sources([SourceSpec(str(corpus))], s, rerun, progress=False)
    assert rerun.texts <= _unique_contents(s, embedder) - kept  # a kept batch holds at least one text
    assert rerun.calls > 0


def test_a_dead_writers_lease_blocks_nobody(corpus, base_settings, embedder, tmp_path):
    s = _settings(base_settings, tmp_path / "idx")
    holder = subprocess.Popen(
        [sys.executable, "-c", f"from assist.index.lock import writer_lease\nwith writer_lease({s.index.uri!r}):\n"
         "    print('held', flush=True)\n    import time; time.sleep(600)"],
        cwd=ROOT, env=dict(os.environ), stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout.readline().strip() == "held"
    holder.kill()
    holder.wait()
    assert (tmp_path / "idx" / LOCK_NAME).exists()  # the dead holder never released it
    assert sync_sources([SourceSpec(str(corpus))], s, embedder, progress=False)["complete"] is True
    with writer_lease(s.index.uri), pytest.raises(Exception, match="another writer"):  # a live one still blocks
        sync_sources([SourceSpec(str(corpus))], s, embedder, progress=False)


def test_a_lease_lasts_no_longer_than_its_holder(tmp_path):
    uri = str(tmp_path / "idx")
    with writer_lease(uri, until=time.time() - 1) as lease:  # a Lambda past its deadline
        assert lease.expires_at < time.time()
        with writer_lease(uri):  # taken over: its holder cannot be writing any more
            pass


def test_a_function_short_of_time_converges_and_publishes_only_a_whole_index(corpus, base_settings, embedder, tmp_path):
    s = _settings(base_settings, tmp_path / "idx")
    (tmp_path / "sources.yaml").write_text(f"sources:\n  - location: {corpus}\n")
    fn = LambdaFunction("sync", s)
    context = SimpleNamespace(get_remaining_time_in_millis=lambda: 1_000)  # 0.7 s after the task's reserve
    runs = []
    for _ in range(40):
        runs.append(fn.task({"sources_file": str(tmp_path / "sources.yaml")}, context))
        if runs[-1]["complete"]:
            break
        assert "chunks" not in connect(s.index.uri).table_names(), "published before it was whole"
    assert runs[-1]["complete"] is True
    assert len(runs) > 1, "the deadline cut the build into several runs"
    assert sum(r["embedded"] for r in runs) == _unique_contents(s, embedder)  # no text embedded twice
    whole = _settings(base_settings, tmp_path / "whole")
    sync_sources([SourceSpec(str(corpus))], whole, embedder, progress=False)
    assert sorted(_rows(s, embedder)) == sorted(_rows(whole, embedder))


def test_the_index_state_machine_builds_through_a_distributed_map(corpus, base_settings, embedder, tmp_path):
    from assist.aws.clients import client
    from assist_dev.local.statemachine import ServerlessStack

    s = base_settings.with_(
        index={"uri": f"s3://{base_settings.aws.bucket}/sm-{tmp_path.name}", "shard_chunks": 24, "build_concurrency": 2}
    )
    (tmp_path / "sources.yaml").write_text(f"sources:\n  - location: {corpus}\n")
    stack = ServerlessStack(s, s.aws.endpoint_url, name=f"assist-build-{tmp_path.name[-20:]}").start()
    try:
        report = stack.build_index(str(tmp_path / "sources.yaml"))
        again = stack.build_index(str(tmp_path / "sources.yaml"))
    finally:
        stack.stop()
    assert report["complete"] is True
    assert report["shards"] >= 3
    assert report["execution"]["states"][:2] == ["Plan", "AnyShards"]
    assert "Embed" in report["execution"]["states"]
    assert report["execution"]["states"][-1] == "Commit"
    assert "Embed" not in again["execution"]["states"]  # nothing changed: no worker runs
    assert again["added_docs"] == 0
    whole = _settings(base_settings, tmp_path / "whole")
    sync_sources([SourceSpec(str(corpus))], whole, embedder, progress=False)
    assert sorted(_rows(s, embedder)) == sorted(_rows(whole, embedder))
    s3 = client("s3", s)
    left = s3.list_objects_v2(Bucket=s.aws.bucket, Prefix=f"sm-{tmp_path.name}/_build/").get("KeyCount")
    assert left == 0  # the commit cleared the build's files
