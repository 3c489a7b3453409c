"""The index handle (ADR 0067): the live pointer re-read only when the interval is up, a version switch
reopening what was opened, an unreadable pointer keeping the version being served."""

from __future__ import annotations

from assist.index import pointer
from assist.retrieve.handle import IndexHandle
from assist.settings import Settings


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_pointer_is_followed_at_the_interval_and_an_unreadable_one_keeps_the_version(tmp_path):
    root = str(tmp_path)
    clock = Clock()
    s = Settings().with_(index={"uri": root, "refresh_s": 10})
    handle = IndexHandle(s, clock=clock)
    opened: list[str] = []
    provider = handle.follow(lambda live: opened.append(live.index.uri) or live.index.uri, s)

    assert provider() == root  # nothing published: the location itself
    pointer.write(root, pointer.Pointer("v1", [None]))
    clock.now = 9.9
    assert provider() == root  # not yet due
    clock.now = 10.0
    assert provider() == pointer.version_uri(root, "v1")
    assert provider() == pointer.version_uri(root, "v1")
    assert opened == [root, pointer.version_uri(root, "v1")]  # opened once per version

    (tmp_path / pointer.POINTER).write_text("{not json")
    clock.now = 20.0
    assert provider() == pointer.version_uri(root, "v1")  # kept, and logged as unreadable
    pointer.write(root, pointer.Pointer(None, []))  # rolled back to the index built in place
    clock.now = 30.0
    assert provider() == root
