"""`assist local up`: the real parts on one machine, no Docker.

moto's server over HTTP stands in for S3, DynamoDB and Step Functions; tables and bucket
come from template.yaml; the docs are indexed into LanceDB by the index state machine (ADR 0120); the ask state
machine is the deployed ASL file run by moto's interpreter, whose Lambda tasks reach our functions
through a local Lambda endpoint; the API is served by uvicorn and answers /v1/ask through
the state machine.
"""

from __future__ import annotations

import contextlib
import logging
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import yaml

from assist.aws import s3_uri
from assist.aws.clients import client
from assist.build.run import sync_sources
from assist.embed import build_embedder
from assist.logs import get_logger
from assist.sources.spec import SourceSpec, anchored
from assist_dev.local.emulator import patch_dynamodb
from assist_dev.local.ports import free_port
from assist_dev.local.resources import ensure_resources
from assist_dev.local.statemachine import ServerlessStack

if TYPE_CHECKING:
    from assist.settings import Settings

log = get_logger(__name__)
STATE_FILE = Path(".assist/local-stack.env")
LOCAL_CREDENTIALS = {"emulator_access_key_id": "testing", "emulator_secret_access_key": "testing"}


class MotoServer:
    """moto's threaded server on loopback: real HTTP, in-memory state."""

    def __init__(self, port: int | None = None) -> None:
        # deferred, ADR 0071: moto 0.5 s
        from moto.server import ThreadedMotoServer

        patch_dynamodb()
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # not a line on stderr per emulated call
        self.port = port or free_port()
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self.url = f"http://127.0.0.1:{self.port}"

    def start(self) -> MotoServer:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()


def export_lines(settings: Settings) -> str:
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in settings.env_lines().items())


def local_settings(settings: Settings, endpoint: str, index: str | None) -> Settings:
    return settings.with_(
        aws={"endpoint_url": endpoint, **LOCAL_CREDENTIALS},
        index={"uri": index or settings.index.uri},
        api={"local_mode": True},
    )


def prepare(settings: Settings, docs: Path | str | list[SourceSpec], progress: bool = True) -> None:
    """Tables, bucket (from template.yaml) and an index that matches docs/ (or the sources given:
    folders, repositories, docs sites, OpenAPI specs, PDF), built in this process."""
    s3 = resources(settings)
    sync_sources(specs_of(docs), settings, build_embedder(settings), progress=progress, s3=s3)


def resources(settings: Settings) -> Any:
    """Tables and bucket (from template.yaml), and the index's bucket; returns the S3 client."""
    s3 = client("s3", settings)
    ensure_resources(settings, client("dynamodb", settings), s3)
    if settings.index.is_s3:
        bucket, _ = s3_uri.split(settings.index.uri)
        if bucket != settings.aws.bucket and bucket not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
            s3.create_bucket(Bucket=bucket)
    return s3


def specs_of(docs: Path | str | list[SourceSpec]) -> list[SourceSpec]:
    return docs if isinstance(docs, list) else [SourceSpec(str(docs))]


def sources_file(docs: Path | str | list[SourceSpec], folder: Path) -> Path:
    """The sources as a sources file (what the index state machine's Plan reads). It lives in `folder`, so a
    relative path given on the command line is written as the working directory's, absolute."""
    path = folder / "sources.yaml"
    specs = [msgspec.to_builtins(anchored(s, Path.cwd())) for s in specs_of(docs)]
    path.write_text(yaml.safe_dump({"sources": specs}))
    return path


def up(settings: Settings, port: int, docs: Path | list[SourceSpec], index: str | None = None) -> int:
    # deferred, ADR 0071: uvicorn 0.05 s
    import uvicorn

    # deferred, ADR 0071: anyio (not in every image), litestar 0.16 s
    from assist.api.app import create_app

    t0 = time.perf_counter()
    moto = MotoServer().start()
    settings = local_settings(settings, moto.url, index)
    serverless: ServerlessStack | None = None
    try:
        resources(settings)
        serverless = ServerlessStack(settings, moto.url).start()
        with tempfile.TemporaryDirectory(prefix="assist-local-") as tmp:  # the build runs through the state machine
            built = serverless.build_index(str(sources_file(docs, Path(tmp))))
        log.info("local.index_built", docs=built.get("docs"), chunks=built.get("chunks"), states=built["execution"])
        serverless.warm()
        STATE_FILE.parent.mkdir(parents=True, exist_ok=True)
        STATE_FILE.write_text(export_lines(settings) + f"export ASSIST_URL=http://127.0.0.1:{port}\n")
        sys.stdout.write(STATE_FILE.read_text())
        sys.stdout.flush()
        log.info(
            "local.ready",
            url=f"http://127.0.0.1:{port}",
            moto=moto.url,
            state_machine=serverless.arn,
            index=settings.index.uri,
            setup_s=round(time.perf_counter() - t0, 2),
        )
        # /v1/ask runs the state machine; the answer function's engine serves the in-process routes
        app = create_app(serverless.functions["answer"].engine.get(), ask_via=serverless.ask)
        config = uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=5, proxy_headers=False
        )
        # uvicorn re-raises the Ctrl-C it handled; a requested stop is a clean exit
        with contextlib.suppress(KeyboardInterrupt):
            uvicorn.Server(config).run()
    finally:
        STATE_FILE.unlink(missing_ok=True)
        if serverless is not None:
            serverless.stop()
        moto.stop()
        log.info("local.stopped")
    return 0


def env() -> int:
    if not STATE_FILE.exists():
        sys.stderr.write("no local stack is running here: start one with `assist local up`\n")
        return 1
    sys.stdout.write(STATE_FILE.read_text())
    return 0
