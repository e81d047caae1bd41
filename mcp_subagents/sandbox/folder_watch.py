"""Which folders of a tree had entries added, removed or renamed since the last look: Linux's inotify, one watch
per folder.

The search for guarded names (`guarded`) runs before and after every sandboxed command. Stat-ing each folder of a
large project costs milliseconds a time; with watches, a look where nothing changed costs one read of an empty
queue, and a change costs reading the folders it touched. Where inotify is missing or its watch limit is reached,
the caller falls back to stat-ing.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from typing import Final

_IN_NONBLOCK: Final = os.O_NONBLOCK
_IN_CLOEXEC: Final = os.O_CLOEXEC
_IN_MOVED_FROM: Final = 0x40
_IN_MOVED_TO: Final = 0x80
_IN_CREATE: Final = 0x100
_IN_DELETE: Final = 0x200
_IN_DELETE_SELF: Final = 0x400
_IN_MOVE_SELF: Final = 0x800
_IN_Q_OVERFLOW: Final = 0x4000
_IN_IGNORED: Final = 0x8000
_IN_ONLYDIR: Final = 0x01000000
_IN_DONT_FOLLOW: Final = 0x02000000
_MASK: Final = (
    _IN_CREATE | _IN_DELETE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR
) | _IN_DONT_FOLLOW
_HEADER: Final = struct.Struct("iIII")
_READ_BYTES: Final = 64 * 1024


class WatchUnavailable(OSError):
    """inotify cannot be used here (not Linux, no such call, out of instances)."""


class FolderWatch:
    """Watches folders for entries coming and going. Not thread-safe: the caller serialises its use."""

    def __init__(self) -> None:
        """Raises:
        WatchUnavailable: inotify cannot be used.
        """
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            self._add = libc.inotify_add_watch
            self._remove = libc.inotify_rm_watch
            init = libc.inotify_init1
        except (OSError, AttributeError) as exc:
            raise WatchUnavailable(errno.ENOSYS, f"no inotify: {exc}") from None
        self._add.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        self._remove.argtypes = (ctypes.c_int, ctypes.c_int)
        fd = init(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            number = ctypes.get_errno()
            raise WatchUnavailable(number, f"no inotify: {os.strerror(number)}")
        self._fd: int | None = fd
        self._paths: dict[int, str] = {}
        self._watches: dict[str, int] = {}

    def watch(self, path: str) -> bool:
        """Watch the folder at `path` (not following a symlink); False when it cannot be watched (gone meanwhile, or
        the watch limit is reached)."""
        if self._fd is None:
            return False
        wd = self._add(self._fd, os.fsencode(path), _MASK)
        if wd < 0:
            return False
        old = self._paths.get(wd)
        if old is not None and old != path:  # the same folder under a new name (it was renamed)
            self._watches.pop(old, None)
        self._paths[wd] = path
        self._watches[path] = wd
        return True

    def forget(self, path: str) -> None:
        wd = self._watches.pop(path, None)
        if wd is not None and self._fd is not None:
            self._paths.pop(wd, None)
            self._remove(self._fd, wd)

    def watched(self) -> int:
        return len(self._watches)

    def changed(self) -> set[str] | None:
        """The watched folders whose entries changed (or that went away) since the last call; None when events were
        lost (the queue overflowed), and then anything may have changed."""
        if self._fd is None:
            return None
        found: set[str] = set()
        while True:
            try:
                data = os.read(self._fd, _READ_BYTES)
            except BlockingIOError:
                return found
            if not data:
                return found
            if not self._read_events(data, found):
                return None

    def _read_events(self, data: bytes, found: set[str]) -> bool:
        offset = 0
        while offset + _HEADER.size <= len(data):
            wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
            offset += _HEADER.size + length
            if mask & _IN_Q_OVERFLOW:
                return False
            path = self._paths.get(wd)
            if path is None:
                continue
            found.add(path)
            if mask & _IN_IGNORED:  # the watch is gone with its folder
                self._paths.pop(wd, None)
                self._watches.pop(path, None)
        return True

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._paths.clear()
        self._watches.clear()
