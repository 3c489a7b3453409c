"""The answer container as deployed (`uvicorn functions.answer.app:app`), each in a process of its own, for the
benchmarks that load it over HTTP (`assist bench load`, `assist bench widget`): what the container spends is
then its own process's, apart from the emulated store and the clients in the bench's process."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from assist.settings import AWS_SIGNALS
from assist_dev.local.definition import ROOT
from assist_dev.local.ports import free_port


@dataclass(frozen=True)
class Container:
    base: str
    pid: int

    def cpu_s(self) -> float:
        """User and system CPU seconds the process has used so far (Linux `/proc`)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def container_env(**extra: str) -> dict[str, str]:
    """This process's environment without its AWS and widget settings, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in AWS_SIGNALS and not k.startswith(("AWS_", "WIDGET_"))}
    env.update(
        EMBED_MODEL_DIR=env.get("EMBED_MODEL_DIR", str(ROOT / ".assist/models/all-MiniLM-L6-v2")),
        LOG_LEVEL="WARNING",
        HF_HUB_OFFLINE="1",
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    )
    return env | extra


@contextlib.contextmanager
def answer_containers(env: dict[str, str], n: int) -> Iterator[list[Container]]:
    """`n` answer containers (uvicorn), each on a free port, healthy, until the block ends."""
    procs: list[tuple[subprocess.Popen[bytes], str]] = []
    try:
        for _ in range(n):
            port = free_port()
            cmd = [sys.executable, "-m", "uvicorn", "functions.answer.app:app", "--host", "127.0.0.1"]
            cmd += ["--port", str(port), "--log-level", "warning", "--no-proxy-headers"]
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append((proc, f"http://127.0.0.1:{port}"))
        deadline = time.monotonic() + 180
        for proc, base in procs:
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"an app process exited with {proc.returncode}")
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError("the app processes were not healthy in 180 s")
                time.sleep(0.2)
        yield [Container(base, proc.pid) for proc, base in procs]
    finally:
        for proc, _ in procs:
            proc.terminate()
        for proc, _ in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
