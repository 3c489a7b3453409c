"""uvicorn reads no forwarded header wherever the app is served (ADR 0116): with its defaults it would take the
client's address from `X-Forwarded-For` on any connection from 127.0.0.1, which is where the Lambda Web Adapter, a
local proxy and `assist local up`'s callers all connect from. The app alone decides which address is the caller's
(`assist/widget/address.py`)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVED = ("infra", "tooling", "tests", "functions", "layers")
#: a uvicorn started as a command (`-m uvicorn`, `"uvicorn", …`) or in process (`uvicorn.Config(`)
STARTS = re.compile(r"-m\"?,? \"?uvicorn|uvicorn\.Config\(|exec python -m uvicorn")


def starts() -> list[tuple[Path, int, str]]:
    found = []
    for top in SERVED:
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix not in (".py", ".sh") or ".venv" in path.parts or path.name == Path(__file__).name:
                continue
            lines = path.read_text(encoding="utf-8").splitlines()
            for i, line in enumerate(lines):
                if STARTS.search(line):
                    found.append((path.relative_to(ROOT), i + 1, "\n".join(lines[i : i + 3])))
    return found


def test_every_uvicorn_the_project_starts_turns_forwarded_headers_off():
    found = starts()
    places = {str(p) for p, _, _ in found}
    # the image's entry point, the rehearsal's functions, the local stack, the benches, the tests' server
    assert {"infra/entry.sh", "tooling/assist_dev/local/stack.py", "tests/support/http.py"} <= places, places
    for path, line, text in found:
        assert "--no-proxy-headers" in text or "proxy_headers=False" in text, f"{path}:{line} reads forwarded headers"
