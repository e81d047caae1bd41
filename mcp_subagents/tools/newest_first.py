"""The files Glob and Grep list, newest first: one stat per file, taken as rg's output arrives (see record_stream)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

from .base import ToolContext


class NewestFirst:
    """Collects the files of rg's listing (a RecordConsumer) to show them most recently modified first, ties by path;
    a file that cannot be stat'ed any more comes last.

    `absolute` turns a listed path into the one shown; `wanted` (given the listed path) drops files before any stat;
    files a Read deny rule covers are left out, and with `skip_hard_links` regular files with more than one name
    too (their other names may be outside the allowed roots), which are noted in `skipped`."""

    def __init__(
        self,
        ctx: ToolContext,
        *,
        absolute: Callable[[str], str],
        wanted: Callable[[str], bool] | None = None,
        skip_hard_links: bool = False,
    ) -> None:
        self._ctx = ctx
        self._absolute = absolute
        self._wanted = wanted
        self._skip_hard_links = skip_hard_links
        self._dated: list[tuple[int, str]] = []
        self.skipped: set[str] = set()
        self.paths: list[str] = []
        """Once finished: the paths shown, in order."""

    def feed(self, records: list[str]) -> None:
        listed = [record for record in records if record and record != "\n"]
        if self._wanted is not None:
            listed = list(filter(self._wanted, listed))
        shown = map(self._absolute, listed)
        if self._ctx.readable is not None:
            shown = filter(self._ctx.readable, shown)
        dated, skip_hard_links, stat_of = self._dated, self._skip_hard_links, os.stat
        for path in shown:
            try:
                info = stat_of(path)
            except (OSError, ValueError):
                dated.append((0, path))  # gone since rg saw it
                continue
            if skip_hard_links and info.st_nlink > 1 and stat.S_ISREG(info.st_mode):
                self.skipped.add(path)
            else:
                dated.append((-info.st_mtime_ns, path))

    def finish(self) -> None:
        self._dated.sort()
        self.paths = [path for _, path in self._dated]
        self._dated = []
