"""Handing the memory that finished tasks freed back to the system.

A task's big strings (a file it read, the request that carried it, its transcript line) come from the C allocator,
which keeps what is freed for later use. With several tasks at once that free memory lies scattered between blocks
still in use, so the server's RSS rose by kilobytes for each finished task although Python held next to nothing of
it (bench/memory.py: about 4 KiB a task over a fresh server's first thousand; glibc's own count over those tasks:
3.5 MB more free memory in its arenas, 0.2 MB more in use). glibc's `malloc_trim` gives those free pages back, in
about 0.3 ms for the whole heap. It runs when the last running task has finished, and every `RELEASE_EVERY` finished
tasks on a server that is never idle. Where the C library has no `malloc_trim` (macOS, musl), nothing is done.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cache

logger = logging.getLogger(__name__)

RELEASE_EVERY = 100
"""Finished tasks between two releases while tasks keep running."""


class MemoryRelease:
    """Counts finished tasks and releases the allocator's free memory when the server goes idle, or every
    `RELEASE_EVERY` of them."""

    def __init__(self, trim: Callable[[], object] | None = None) -> None:
        """`trim`: what releases the memory; by default glibc's `malloc_trim(0)`, looked up at the first release."""
        self._trim = trim
        self._finished = 0

    def task_finished(self, *, still_running: int) -> None:
        self._finished += 1
        if still_running and self._finished < RELEASE_EVERY:
            return
        self._finished = 0
        trim = self._trim or malloc_trim()
        if trim is not None:
            trim()


@cache
def malloc_trim() -> Callable[[], object] | None:
    """glibc's `malloc_trim(0)`, or None when the process's C library has none."""
    import ctypes  # only once a task has finished: start-up does not pay for it

    try:
        function = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        logger.debug("no malloc_trim in this C library: freed memory stays with the allocator")
        return None
    function.argtypes = [ctypes.c_size_t]
    function.restype = ctypes.c_int
    return lambda: function(0)
