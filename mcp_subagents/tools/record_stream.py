"""rg's output consumed while rg still runs: cut into whole records and handed, batch by batch, to a worker thread.

Glob and Grep stat every file they list (newest first, hard links left out) and Grep parses every line. Done after
rg has exited, that work adds to rg's own time; done on a worker thread as rg's output arrives, it overlaps rg's
walk, which rarely keeps both cores busy.
"""

from __future__ import annotations

from queue import SimpleQueue
from typing import Protocol


class RecordConsumer(Protocol):
    def feed(self, records: list[str]) -> None:
        """Take the next records, in rg's order. Runs on the worker thread."""
        ...

    def finish(self) -> None:
        """The output has ended (sort, group): still on the worker thread, so the event loop stays free."""
        ...


class RecordStream:
    """A sink for rg's stdout that keeps the first `cap` bytes' whole records (text, each ending in `separator`; file
    names keep their exact bytes as surrogate escapes) and feeds them to `consumer` from `work`, on another thread.

    The event loop calls `add` for every chunk and `close` once the output has ended; the worker thread runs
    `work`, which returns once `close` was called and everything before it was fed."""

    def __init__(self, separator: bytes, consumer: RecordConsumer, cap: int) -> None:
        self._separator = separator
        self._text_separator = separator.decode()
        self._consumer = consumer
        self._room = cap
        self._pending = bytearray()
        self._batches: SimpleQueue[list[str] | None] = SimpleQueue()
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
        self._batches.put(self._records(pending[:end]))
        del pending[: end + 1]

    def close(self) -> None:
        """The output has ended: the last record, unless the cap cut it, and then the end of the work."""
        if self._closed:
            return
        self._closed = True
        if self._pending and not self.overflowed:
            self._batches.put(self._records(self._pending))
        self._pending.clear()
        self._batches.put(None)

    def work(self) -> None:
        """The worker thread's loop: feeds every batch to the consumer until `close`, then finishes it."""
        while (batch := self._batches.get()) is not None:
            self._consumer.feed(batch)
        self._consumer.finish()

    def _records(self, data: bytearray) -> list[str]:
        return data.decode("utf-8", errors="surrogateescape").split(self._text_separator)
