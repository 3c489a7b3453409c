"""Public development data kept beside the checkout (../shared/data, as CI lays it), not in the repo.

A fresh clone has nothing beside it: a test needing the data skips and says why (pytest's `-ra` summary shows
the reason). CI sets ASSIST_REQUIRE_SHARED_DATA=1, under which the same absence fails instead, so a CI run can
never go green by skipping the data tests. ASSIST_SHARED_DATA points at the data/ folder elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("ASSIST_SHARED_DATA", ROOT.parent / "shared" / "data"))


def require(path: Path) -> Path:
    """`path` when it exists; otherwise skip the test (or fail it where the data is required)."""
    if path.exists():
        return path
    reason = f"{path} is absent: place shared/ beside the checkout or set ASSIST_SHARED_DATA to its data/"
    if os.environ.get("ASSIST_REQUIRE_SHARED_DATA") == "1":
        pytest.fail(f"{reason} (ASSIST_REQUIRE_SHARED_DATA=1)")
    pytest.skip(reason)
