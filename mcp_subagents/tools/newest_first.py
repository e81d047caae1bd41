"""The files Glob and Grep list, newest first: one stat per file, taken as rg's output arrives (see record_stream)."""

from __future__ import annotations

import os
from collections.abc import Callable

from .base import ToolContext
from .paths import has_other_names


class NewestFirst:
    """Collects the files of rg's listing (a RecordConsumer) to show them most recently modified first, ties by path;
    a file that cannot be stat'ed any more comes last.

    `absolute` turns a batch of listed paths into the ones shown; `keep` (given a batch of listed paths) drops files
    before any stat; files a Read deny rule covers are left out, and with `skip_hard_links` regular files with more
    than one name too (their other names may be outside the allowed roots), which are noted in `skipped`."""

    def __init__(
        self,
        ctx: ToolContext,
        *,
        absolute: Callable[[list[str]], list[str]],
        keep: Callable[[list[str]], list[str]] | None = None,
        skip_hard_links: bool = False,
    ) -> None:
        self._ctx = ctx
        self._absolute = absolute
        self._keep = keep
        self._skip_hard_links = skip_hard_links
        self._dated: list[tuple[int, str]] = []
        self.skipped: set[str] = set()
        self.paths: list[str] = []
        """Once finished: the paths shown, in order."""

    def feed(self, records: list[str]) -> None:
        listed = [record for record in records if record and record != "\n"]
        if self._keep is not None:
            listed = self._keep(listed)
        dated, skip_hard_links, readable, stat_of = self._dated, self._skip_hard_links, self._ctx.readable, os.stat
        for path in self._absolute(listed):  # tens of thousands of paths: every step here counts
            try:
                info = stat_of(path)
            except (OSError, ValueError):
                newest_first = 0  # gone since rg saw it: listed last
            else:
                if skip_hard_links and has_other_names(info):
                    self.skipped.add(path)
                    continue
                newest_first = -info.st_mtime_ns
            if readable is None or readable(path):
                dated.append((newest_first, path))

    def finish(self) -> None:
        self._dated.sort()
        self.paths = [path for _, path in self._dated]
        self._dated = []
