"""rg's output consumed while rg still runs: cut into whole records and handed over in slices on the event loop.

Glob and Grep stat every file they list (newest first, hard links left out) and Grep parses every line. Done after
rg has exited, that work adds to rg's own time; done as rg's output arrives, it overlaps rg's walk, which rarely
keeps both cores busy. It runs on the event loop, a slice of records at a time with a checkpoint between slices,
not on a worker thread: a thread gets the interpreter back after each of its thousands of stats only when the loop
lets go of it, so while other subagents kept the loop busy a Glob of 4,000 files took 12 s instead of 60 ms.
"""

from __future__ import annotations

import math
from typing import Protocol

import anyio
import anyio.lowlevel

SLICE = 256
"""Records fed between two checkpoints: about a millisecond of stats, so other tasks wait no longer than that."""


class RecordConsumer(Protocol):
    def feed(self, records: list[str]) -> None:
        """Take the next records, in rg's order."""
        ...

    def finish(self) -> None:
        """The output has ended: sort, group."""
        ...


class RecordStream:
    """A sink for rg's stdout that keeps the first `cap` bytes' whole records (text, each ending in `separator`; file
    names keep their exact bytes as surrogate escapes) and feeds them to `consumer` from `work`.

    `add` takes every chunk and `close` the end of the output; `work`, a task of its own, returns once `close` was
    called and everything before it was fed and finished."""

    def __init__(self, separator: bytes, consumer: RecordConsumer, cap: int) -> None:
        self._separator = separator
        self._text_separator = separator.decode()
        self._consumer = consumer
        self._room = cap
        self._pending = bytearray()
        self._batches, self._received = anyio.create_memory_object_stream[list[str]](math.inf)
        self._closed = False
        self.overflowed = False
        """rg printed more than `cap` bytes; the rest, and the record cut by the cap, were dropped."""
        self.printed = False
        """rg printed at least one byte."""

    def add(self, data: bytes) -> None:
        if not data or self._closed:
            return
        self.printed = True
        if len(data) > self._room:
            self.overflowed = True
            data = data[: self._room]
        self._room -= len(data)
        pending = self._pending
        pending += data
        end = pending.rfind(self._separator)
        if end < 0:
            return
        self._batches.send_nowait(self._records(pending[:end]))
        del pending[: end + 1]

    def close(self) -> None:
        """The output has ended: the last record, unless the cap cut it, and then the end of the work."""
        if self._closed:
            return
        self._closed = True
        if self._pending and not self.overflowed:
            self._batches.send_nowait(self._records(self._pending))
        self._pending.clear()
        self._batches.close()

    async def work(self) -> None:
        """Feed every batch to the consumer, a slice at a time, until `close`; then finish it."""
        async with self._received:
            async for batch in self._received:
                for start in range(0, len(batch), SLICE):
                    self._consumer.feed(batch[start : start + SLICE])
                    await anyio.lowlevel.checkpoint()
        self._consumer.finish()

    def _records(self, data: bytearray) -> list[str]:
        return data.decode("utf-8", errors="surrogateescape").split(self._text_separator)
