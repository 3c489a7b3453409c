"""What the benchmark commands share: an in-process moto server with the template's tables,
the docs index, and the Ollama test double (assist_dev/doubles: a benchmark, like a test,
needs a model whose speed it controls; the double never serves users)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from assist.settings import Settings
from assist_dev.doubles.ollama_server import OllamaTestServer
from assist_dev.local.resources import TEMPLATE
from assist_dev.local.stack import MotoServer, local_settings, prepare

REPO = TEMPLATE.parent


@contextmanager
def local_parts(settings: Settings, index_dir: Path | None = None, docs: Path = REPO / "docs") -> Iterator[Settings]:
    """A moto server, the tables and bucket, and an index of docs/: cached and incremental in
    `index_dir`, or without one a throw-away index removed on exit."""
    with ExitStack() as cleanup:
        if index_dir is None:
            index_dir = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="assist-bench-")))
        moto = MotoServer().start()
        cleanup.callback(moto.stop)
        s = local_settings(settings, moto.url, str(index_dir))
        prepare(s, docs, progress=False)
        yield s


def ollama_double(**kwargs: Any) -> OllamaTestServer:
    return OllamaTestServer(**kwargs)
