"""rg's output for Grep: parsed, without the files Grep must not show, in the order shown, one page at a time.

rg runs with `--null` (every path followed by a NUL byte, so paths are exact) and without `--sort path`, which would
make it search with one thread: content and count results are sorted here in the same order, and files are listed
newest first. Lines are kept per file and only the page asked for is rendered.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import cast

from .base import ToolContext
from .paths import has_other_names


@dataclass(frozen=True, slots=True)
class SearchTarget:
    """The path rg searches, given relative to the working directory when it is inside: rg walks a tree given by
    an absolute path measurably slower. Results are turned back into the absolute paths the tool shows."""

    argument: str
    cut: str
    """What rg puts in front of every path that `prefix` replaces."""
    prefix: str

    @classmethod
    def of(cls, target: Path, cwd: Path) -> SearchTarget:
        prefix = f"{str(cwd).rstrip('/')}/"
        if target == cwd:
            return cls(".", "./", prefix)
        if target.is_relative_to(cwd):
            return cls(str(target.relative_to(cwd)), "", prefix)
        return cls(str(target), "", "")

    def absolute(self, path: str) -> str:
        if not self.prefix or not path.startswith(self.cut):
            return path
        return f"{self.prefix}{path[len(self.cut) :]}"

    def absolute_all(self, paths: list[str]) -> list[str]:
        """`absolute` of each path, in one pass (rg can list tens of thousands)."""
        prefix, cut = self.prefix, self.cut
        if not prefix:
            return paths
        if not cut:
            return [prefix + path for path in paths]
        length = len(cut)
        return [prefix + path[length:] if path.startswith(cut) else path for path in paths]


@dataclass(slots=True)
class FileBlock:
    """One file's lines of rg's output: rg writes each file's lines together, even when it searches in parallel."""

    path: str
    lines: list[str | None] = field(default_factory=lambda: [])
    """What follows the path on each line; None for a separator between groups of context lines."""


@dataclass(slots=True)
class GrepResults:
    blocks: list[FileBlock]
    """Content and count: in the order shown, by path as `rg --sort path` orders them."""
    skipped: set[str]
    """The hard-linked files left out."""
    separator: str | None = None
    """What rg prints between groups of context lines (and between files), when it prints context."""
    files: list[str] | None = None
    """files_with_matches: the files instead of blocks, in the order shown (newest first)."""
    context_lines: bool = False
    """Lines around the matches were asked for: they are shown as `path-line` when numbered."""
    counted: int | None = None
    """Count mode: the sum of the counts, added up as rg printed them (each block holds one line, its count)."""

    @property
    def total(self) -> int:
        """How many entries there are to page through: lines, counts or files."""
        if self.files is not None:
            return len(self.files)
        if self.counted is not None:
            return len(self.blocks)
        lines = sum(len(block.lines) for block in self.blocks)
        return lines + (len(self.blocks) - 1 if self.separator is not None and self.blocks else 0)

    def page(self, start: int, stop: int | None, *, line_numbers: bool) -> tuple[str, int]:
        """Entries `start` to `stop` (exclusive; None: to the end) as Grep shows them, one per line, and how many."""
        if self.files is not None:
            paths = self.files[start:stop]
            return "\n".join(paths), len(paths)
        if self.separator is None and not self.context_lines:
            return self._match_lines(start, stop)
        numbered = line_numbers and self.context_lines
        entries = list(islice(self._lines_with_context(self.separator or "", numbered=numbered), start, stop))
        return "\n".join(entries), len(entries)

    def _match_lines(self, start: int, stop: int | None) -> tuple[str, int]:
        """The usual case, where every line is a match: `path:line`, joined a file at a time."""
        chunks: list[str] = []
        position = shown = 0
        for block in self.blocks:
            if stop is not None and position >= stop:
                break
            lines = cast("list[str]", block.lines)  # no separators without context
            end = position + len(lines)
            if end > start:
                if position < start or (stop is not None and end > stop):
                    lines = lines[max(start - position, 0) : None if stop is None else stop - position]
                if len(lines) == 1:  # every file in count mode, most in content mode
                    chunks.append(f"{block.path}:{lines[0]}")
                else:
                    prefix = f"{block.path}:"
                    chunks.append(prefix + f"\n{prefix}".join(lines))
                shown += len(lines)
            position = end
        return "\n".join(chunks), shown

    def count_total(self) -> int:
        """The sum of the counts, in count mode (0 in the others)."""
        return self.counted or 0

    def _lines_with_context(self, separator: str, *, numbered: bool) -> Iterator[str]:
        for index, block in enumerate(self.blocks):
            if index and self.separator is not None:
                yield separator
            match_prefix, context_prefix = f"{block.path}:", f"{block.path}-"
            for line in block.lines:
                if line is None:
                    yield separator
                elif numbered and _CONTEXT_LINE.match(line):
                    yield context_prefix + line
                else:
                    yield match_prefix + line


_CONTEXT_LINE = re.compile(r"\d+-")


class LinesByFile:
    """Content or count output grouped by file (a RecordConsumer, fed rg's lines as they arrive), without hard-linked
    files and files a Read deny rule covers, in the order of `rg --sort path` once finished."""

    def __init__(self, ctx: ToolContext, target: SearchTarget, *, context_lines: bool, counting: bool = False) -> None:
        self._readable = ctx.readable
        self._absolute = target.absolute
        self._context_lines = context_lines
        self._counted: int | None = 0 if counting else None
        """Count mode: the counts of the files kept so far, added while each line is at hand."""
        self._blocks: list[FileBlock] = []
        self._skipped: set[str] = set()
        self._separator: str | None = None
        self._printed_path: str | None = None
        self._lines: list[str | None] = []
        """The lines of the file rg is printing; a list nobody keeps when that file is left out."""
        self._pending = 0
        """Separators seen since the last line with a path."""
        self.results = GrepResults([], set())
        """Once finished: what to show."""

    def feed(self, records: list[str]) -> None:
        printed_path, pending = self._printed_path, self._pending
        lines: list[str | None] = self._lines
        readable, stat_of = self._readable, os.stat
        for line in records:
            path, nul, rest = line.partition("\0")
            if not nul:
                if line and printed_path is not None:
                    self._separator = line
                    pending += 1
            elif path == printed_path:
                if pending:
                    lines += [None] * pending
                    pending = 0
                lines.append(rest)
            else:
                printed_path, pending = path, 0
                lines = [rest]
                shown = self._absolute(path)
                try:
                    info = stat_of(shown)
                except (OSError, ValueError):
                    info = None  # gone since rg read it: nothing is linked to it any more
                if info is not None and has_other_names(info):
                    self._skipped.add(shown)
                elif readable is None or readable(shown):
                    self._blocks.append(FileBlock(shown, lines))
                    if self._counted is not None and rest.isdigit():
                        self._counted += int(rest)
        self._printed_path, self._lines, self._pending = printed_path, lines, pending

    def finish(self) -> None:
        self._blocks.sort(key=_path_order)
        self.results = GrepResults(
            self._blocks, self._skipped, self._separator, context_lines=self._context_lines, counted=self._counted
        )


def _path_order(block: FileBlock) -> str:
    """The order of `rg --sort path`: by the bytes of each component in turn ("a/b" before "a.txt"). As a string
    whose characters are those bytes: an ASCII path already is one, and comparing strings is quicker than encoding
    every path."""
    path = block.path
    if path.isascii():
        return path.replace("/", "\0")
    return path.encode("utf-8", "surrogateescape").replace(b"/", b"\0").decode("latin-1")
