"""rg's output for Grep: parsed, without the files Grep must not show, in the order shown, one page at a time.

rg runs with `--null` (every path followed by a NUL byte, so paths are exact) and without `--sort path`, which would
make it search with one thread: content and count results are sorted here in the same order, and files are listed
newest first. Lines are kept per file and only the page asked for is rendered.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from .base import ToolContext
from .ripgrep import has_other_links


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


@dataclass(slots=True)
class FileBlock:
    """One file's lines of rg's output: rg writes each file's lines together, even when it searches in parallel."""

    path: str
    lines: list[str | None] = field(default_factory=lambda: [])
    """What follows the path on each line; None for a separator between groups of context lines."""


@dataclass(slots=True)
class GrepResults:
    blocks: list[FileBlock]
    """In the order shown: files newest first (files_with_matches), else by path as `rg --sort path` orders them."""
    skipped: set[str]
    """The hard-linked files left out."""
    separator: str | None = None
    """What rg prints between groups of context lines (and between files), when it prints context."""
    files_only: bool = False
    """files_with_matches: one entry per file, its path."""
    context_lines: bool = False
    """Lines around the matches were asked for: they are shown as `path-line` when numbered."""

    @property
    def total(self) -> int:
        """How many entries there are to page through: lines, counts or files."""
        if self.files_only:
            return len(self.blocks)
        lines = sum(len(block.lines) for block in self.blocks)
        return lines + (len(self.blocks) - 1 if self.separator is not None and self.blocks else 0)

    def page(self, start: int, stop: int | None, *, line_numbers: bool) -> list[str]:
        """Entries `start` to `stop` (exclusive; None: to the end) as Grep shows them."""
        if self.files_only:
            return [block.path for block in self.blocks[start:stop]]
        return list(islice(self._shown_lines(line_numbers=line_numbers), start, stop))

    def count_total(self) -> int:
        """The sum of the counts, in count mode."""
        return sum(int(line) for block in self.blocks for line in block.lines if line is not None and line.isdigit())

    def _shown_lines(self, *, line_numbers: bool) -> Iterator[str]:
        """Every line in rg's usual `path:line` form (`path-line` for context lines when numbered)."""
        separator = self.separator
        if separator is None and not self.context_lines:  # the usual case, kept lean: every line is a match
            return (f"{block.path}:{line}" for block in self.blocks for line in block.lines)
        return self._lines_with_context(separator or "", numbered=line_numbers and self.context_lines)

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


def files_newest_first(ctx: ToolContext, paths: list[str]) -> GrepResults:
    """With one stat per file: hard-linked files left out, the others newest first (ties by path)."""
    skipped: set[str] = set()
    dated: list[tuple[int, str]] = []
    for path in paths:
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            info = None  # gone since rg saw it: listed last
        if info is not None and info.st_nlink > 1 and stat.S_ISREG(info.st_mode):
            skipped.add(path)
        elif ctx.shows(path):
            dated.append((-info.st_mtime_ns if info is not None else 0, path))
    dated.sort()
    return GrepResults([FileBlock(path) for _, path in dated], skipped, files_only=True)


def lines_by_path(ctx: ToolContext, output: str, target: SearchTarget, *, context_lines: bool) -> GrepResults:
    """Content or count output grouped by file, without hard-linked files and files a Read deny rule covers, in the
    order of `rg --sort path`."""
    blocks, separator = _file_blocks(output, target)
    skipped = {block.path for block in blocks if has_other_links(block.path)}
    kept = [block for block in blocks if block.path not in skipped and ctx.shows(block.path)]
    kept.sort(key=_path_order)
    return GrepResults(kept, skipped, separator, context_lines=context_lines)


def _path_order(block: FileBlock) -> bytes:
    """The order of `rg --sort path`: by the bytes of each component in turn ("a/b" before "a.txt")."""
    return block.path.encode("utf-8", "surrogateescape").replace(b"/", b"\0")


def _file_blocks(output: str, target: SearchTarget) -> tuple[list[FileBlock], str | None]:
    """The lines of each file, and the separator rg printed between groups of context lines, if any."""
    blocks: list[FileBlock] = []
    separator: str | None = None
    printed_path: str | None = None
    lines: list[str | None] = []
    pending = 0  # separators seen since the last line with a path
    absolute = target.absolute
    for line in output.split("\n"):
        path, nul, rest = line.partition("\0")
        if not nul:
            if line and blocks:
                separator = line
                pending += 1
        elif path == printed_path:
            if pending:
                lines += [None] * pending
                pending = 0
            lines.append(rest)
        else:
            printed_path, pending = path, 0
            lines = [rest]
            blocks.append(FileBlock(absolute(path), lines))
    return blocks, separator
