"""A model stream requested now and read later.

Phase 2 starts the model's request as soon as the route is known, in a task of its own, so that
the request, and the model's wait before its first token, overlap the sending of the response
headers and the `route` event instead of following them (ADR 0037). The reader still sees the
items in order, and the stream's failure where it reads; `aclose` cancels the task, which closes
the connection to the model.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Generic, TypeVar

T = TypeVar("T")
_END = object()


class Prefetched(Generic[T]):
    def __init__(self, items: AsyncIterator[T]) -> None:
        self._queue: asyncio.Queue[object] = asyncio.Queue()  # unbounded: a reply's tokens are few and small
        self._task = asyncio.get_running_loop().create_task(self._pump(items))

    async def _pump(self, items: AsyncIterator[T]) -> None:
        try:
            async for item in items:
                self._queue.put_nowait(item)
        except Exception as exc:  # raised to the reader, in order, where it reads
            self._queue.put_nowait(exc)
        else:
            self._queue.put_nowait(_END)

    async def __aiter__(self) -> AsyncIterator[T]:
        while (item := await self._queue.get()) is not _END:
            if isinstance(item, Exception):
                raise item
            yield item  # type: ignore[misc]

    async def aclose(self) -> None:
        """Stop reading: cancels the request if it is still running (Ollama sees the connection close)."""
        self._task.cancel()
        await asyncio.wait({self._task})
