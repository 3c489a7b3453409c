"""A published index on S3 read from a local copy (ADR 0095): a warm reader follows a publish and a rollback
within the pointer's interval, answers from the old version while the new one is still being copied (never
from half a copy), and reads S3 directly, saying why, when the copy would not fit. Moto's S3 over HTTP, real
LanceDB, the real MiniLM embedder."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from assist.ask.build import lazy_index, lazy_retriever
from assist.aws.clients import client
from assist.build.run import ingest
from assist.doctor import reader
from assist.index import local_copy, pointer
from assist.index.publish import publish, rollback
from assist.retrieve.handle import handle_for
from tests.integration.test_published_index import folder

pytestmark = pytest.mark.integration
REFRESH_S = 1.0
QUESTION = "How do I rotate the signing keys of the vault?"
GARDEN = {
    "tomatoes.md": "# Growing tomatoes\n\nTomatoes need six hours of sun and deep watering twice a week.\n",
    "compost.md": "# Making compost\n\nMix green and brown material, keep the heap moist and turn it monthly.\n",
}
VAULT = {
    "vault-keys.md": "# Rotating vault signing keys\n\nRun `vault rotate --signing` to rotate the signing keys of "
    "the vault. Old keys stay valid for verification for 24 hours after a rotation.\n",
    "vault-backup.md": "# Backing up the vault\n\nThe vault is backed up every night to the backup bucket.\n",
}
GARDEN_IDS, VAULT_IDS = {"tomatoes", "compost"}, {"vault-keys", "vault-backup"}


@pytest.fixture
def s3_index(base_settings, embedder, tmp_path):
    """Settings of a fresh index location on the emulated S3, copies under tmp_path; and a publisher."""
    s = base_settings.with_(
        index={
            "uri": f"s3://{base_settings.aws.bucket}/copy-{uuid.uuid4().hex[:8]}",
            "refresh_s": REFRESH_S,
            "copy_dir": str(tmp_path / "copies"),
        }
    )
    s3 = client("s3", s)
    folders = {"garden": folder(tmp_path, "garden", GARDEN), "vault": folder(tmp_path, "vault", VAULT)}

    def publish_(name: str) -> str:
        def build(version) -> dict[str, Any]:
            stats = ingest(folders[name], version, embedder, progress=False, s3=s3)
            return {"index": version.index.uri, "docs": stats.docs, "chunks": stats.chunks}

        report = publish(s, build, score=lambda _: 1.0, s3=s3)
        assert report["published"], report
        return report["version"]

    return s, s3, publish_


def cited(retriever) -> set[str]:
    return set(retriever().rank(QUESTION, 10))


def served(s, retriever, expected: set[str]) -> float:
    """Seconds until the warm reader cites only `expected`; every answer before is one whole version's."""
    t0 = time.monotonic()
    while (seen := cited(retriever)) != expected:
        assert seen in (GARDEN_IDS, VAULT_IDS), seen  # one version's documents, never a mix or nothing
        assert time.monotonic() - t0 < 2 * REFRESH_S + 5, f"still citing {seen} after {time.monotonic() - t0:.1f}s"
        time.sleep(0.1)
    return time.monotonic() - t0


def test_a_publish_and_a_rollback_are_served_from_local_copies_within_the_interval(s3_index):
    s, _, publish_ = s3_index
    first = publish_("garden")
    retriever = lazy_retriever(s)
    assert cited(retriever) == GARDEN_IDS
    handle = handle_for(s)
    copies = Path(s.index.copy_dir)
    assert Path(handle.location()) == handle.copies.dir / first  # a local directory, named for the version
    assert handle.location().startswith(str(copies))
    assert handle.copies.last["mb"] > 0
    assert handle.copies.last["s_per_mb"] > 0

    second = publish_("vault")
    assert served(s, retriever, VAULT_IDS) <= 2 * REFRESH_S + 5
    assert Path(handle.location()) == handle.copies.dir / second

    rollback(s, client("s3", s))
    assert served(s, retriever, GARDEN_IDS) <= 2 * REFRESH_S + 5
    assert Path(handle.location()) == handle.copies.dir / first
    assert not [p for p in handle.copies.dir.iterdir() if p.name.startswith(local_copy.PARTIAL)]


def test_questions_are_answered_from_the_old_version_while_the_new_one_is_copied(s3_index):
    s, s3, publish_ = s3_index
    first = publish_("garden")
    halfway, release = threading.Event(), threading.Event()

    def slow(s3_: Any, uri: str, listing: local_copy.Listing, into: Path) -> None:
        """The real fetch, stopped half-way until released: the copy is on disk, incomplete."""
        half = len(listing.objects) // 2
        local_copy.fetch(s3_, uri, local_copy.Listing(listing.objects[:half]), into)
        halfway.set()
        assert release.wait(30)
        local_copy.fetch(s3_, uri, local_copy.Listing(listing.objects[half:]), into)

    handle = handle_for(s)
    handle.copies = local_copy.LocalCopies(s, s3, fetch_=slow)
    retriever = lazy_retriever(s)
    release.set()  # the first version's copy goes through
    assert cited(retriever) == GARDEN_IDS
    release.clear()
    halfway.clear()

    second = publish_("vault")
    time.sleep(REFRESH_S)  # the pointer is due: the next question starts the copy
    answered = 0
    while not halfway.wait(0):
        assert cited(retriever) == GARDEN_IDS
        answered += 1
    partial = [p for p in handle.copies.dir.iterdir() if p.name.startswith(local_copy.PARTIAL + second)]
    assert partial
    assert any(p.is_file() for p in partial[0].rglob("*"))  # half a copy is on disk …
    for _ in range(5):  # … and questions go on being answered from the whole old one
        assert cited(retriever) == GARDEN_IDS
        assert Path(handle.location()) == handle.copies.dir / first
    release.set()
    assert served(s, retriever, VAULT_IDS) <= 2 * REFRESH_S + 5
    assert Path(handle.location()) == handle.copies.dir / second
    assert answered >= 1


def test_a_version_that_does_not_fit_is_read_from_s3_and_said_so(s3_index):
    s, _, publish_ = s3_index
    s = s.with_(index={"ephemeral_mb": 0})
    version = publish_("garden")
    live = pointer.version_uri(s.index.uri, version)
    assert reader(s, live).read == "s3"
    assert "INDEX_EPHEMERAL_MB" in str(reader(s, live).why)
    retriever = lazy_retriever(s, db=lazy_index(s))
    assert cited(retriever) == GARDEN_IDS  # answered all the same, from S3
    handle = handle_for(s)
    assert handle.location() == live
    assert handle.copies.state()["read"] == "s3"
    assert "INDEX_EPHEMERAL_MB" in handle.copies.state()["why_s3"]
    assert reader(s.with_(index={"ephemeral_mb": 512}), live).read == "copy"
