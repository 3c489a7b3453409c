"""A prefetched stream starts before it is read, yields in order, raises where it reads, and closes its source."""

from __future__ import annotations

import asyncio

import pytest

from assist.answer.prefetch import Prefetched


class Source:
    """An async stream that records when it was started and whether it was cancelled."""

    def __init__(self, items: list[str], fail: Exception | None = None, gap_s: float = 0.0) -> None:
        self.items, self.fail, self.gap_s = items, fail, gap_s
        self.started = asyncio.Event()
        self.cancelled = False

    async def stream(self):
        self.started.set()
        try:
            for item in self.items:
                await asyncio.sleep(self.gap_s)
                yield item
            if self.fail:
                raise self.fail
        except asyncio.CancelledError:
            self.cancelled = True
            raise


def test_the_source_starts_before_the_first_read_and_yields_in_order():
    async def main() -> list[str]:
        src = Source(["a", "b", "c"])
        stream = Prefetched(src.stream())
        await asyncio.wait_for(src.started.wait(), 1)  # nobody has read yet
        return [x async for x in stream]

    assert asyncio.run(main()) == ["a", "b", "c"]


def test_a_failure_is_raised_to_the_reader_after_the_items_before_it():
    seen: list[str] = []

    async def main() -> None:
        async for x in Prefetched(Source(["a"], fail=RuntimeError("model gone")).stream()):
            seen.append(x)

    with pytest.raises(RuntimeError, match="model gone"):
        asyncio.run(main())
    assert seen == ["a"]


def test_aclose_cancels_a_running_source():
    async def main() -> tuple[bool, bool]:
        src = Source(["a"] * 100, gap_s=0.05)
        stream = Prefetched(src.stream())
        async for _ in stream:
            break
        before = src.cancelled
        await stream.aclose()
        return before, src.cancelled  # read here: asyncio.run would cancel a leftover task on its way out

    assert asyncio.run(main()) == (False, True)
