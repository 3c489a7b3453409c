"""What a source links to when its folder was indexed without a base URL: its path in the folder (ADR 0112)."""

from __future__ import annotations

import re

_IN_FOLDER = re.compile(r"[\w./-]+\.(md|mdx|rst|txt|pdf)(#[\w.=-]*)?")


def in_folder(url: str) -> bool:
    """`url` is a path inside the indexed folder (with its section's anchor): no scheme, no build path."""
    return bool(_IN_FOLDER.fullmatch(url)) and not url.startswith("/")
