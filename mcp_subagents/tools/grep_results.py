"""rg's output for Grep: parsed, without the files Grep must not show, in the order shown, one page at a time.

rg runs with `--null` (every path followed by a NUL byte, so paths are exact) and without `--sort path`, which would
make it search with one thread: content and count results are sorted here in the same order, and files are listed
newest first. Lines are kept per file and only the page asked for is rendered.

Content and count output is cut at newlines, and a file name may hold one: the pieces of such a name come as
records without a NUL and are joined again before the path is looked at (see `LinesByFile.feed`), so that a
hard-linked file named `x\nREADME.md` is checked under its own name, not under `README.md`. Every path rg prints
starts with `./` or `/` (`SearchTarget`), so the context separator `--` is never the first piece of a name.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG
from typing import cast

from .base import ToolContext, lines_that_fit


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
            return cls(f"./{target.relative_to(cwd)}", "./", prefix)
        return cls(str(target), "", "")

    def absolute_all(self, paths: list[str]) -> list[str]:
        """Each path as shown, in one pass (rg can list tens of thousands); `LinesByFile.feed` does the same inline."""
        prefix, cut = self.prefix, self.cut
        if not prefix:
            return paths
        if not cut:
            return [prefix + path for path in paths]
        length = len(cut)
        return [prefix + path[length:] if path.startswith(cut) else path for path in paths]


FileLines = tuple[str, str, int, int]
"""One file's lines of rg's output (rg writes each file's lines together, even when it searches in parallel): the
file's place in path order (see `_path_order`), the path shown, and where its lines start and stop in
`GrepResults.lines`. A plain tuple of strings and numbers: a Grep can hold tens of thousands, such a tuple costs a
fifth of a dataclass to make, and the garbage collector stops tracking it after one look."""


@dataclass(slots=True)
class GrepResults:
    blocks: list[FileLines]
    """Content and count: in the order shown, by path as `rg --sort path` orders them."""
    skipped: set[str]
    """The hard-linked files left out."""
    lines: list[str | None] = field(default_factory=lambda: [])
    """The lines of the files in `blocks` (and no others), file after file as rg printed them: what follows the path
    on each line, None for a separator between groups of context lines. One list for all: a list per file would
    give the garbage collector tens of thousands of objects to scan."""
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
        separators = len(self.blocks) - 1 if self.separator is not None and self.blocks else 0
        return len(self.lines) + separators

    def page(self, start: int, stop: int | None, *, line_numbers: bool, budget: int) -> tuple[str, int]:
        """Entries `start` to `stop` (exclusive; None: to the end) as Grep shows them, one per line, and how many:
        fewer when the next would take the text past `budget` characters, but at least one."""
        if self.files is not None:
            paths = self.files[start:stop]
            paths = paths[: lines_that_fit(paths, budget) or 1]
            return "\n".join(paths), len(paths)
        if self.separator is None and not self.context_lines:
            return self._match_lines(start, stop, budget)
        return self._lines_with_context(start, stop, budget, numbered=line_numbers and self.context_lines)

    def _match_lines(self, start: int, stop: int | None, budget: int) -> tuple[str, int]:
        """The usual case, where every line is a match: `path:line`, joined a file at a time."""
        every_line = cast("list[str]", self.lines)  # no separators without context
        chunks: list[str] = []
        position = shown = 0
        # Each entry costs its length and a line break before it, the first's included: `room - 1` characters are
        # left for the next entries.
        room = budget + 1
        for _, path, first, end in self.blocks:
            if stop is not None and position >= stop:
                break
            after = position + end - first
            if after > start:
                if position < start:
                    first += start - position
                if stop is not None and after > stop:
                    end -= after - stop
                if end - first == 1:  # every file in count mode, most in content mode
                    chunk = f"{path}:{every_line[first]}"
                else:
                    prefix = f"{path}:"
                    chunk = prefix + f"\n{prefix}".join(every_line[first:end])
                if len(chunk) + 1 > room:
                    lines = [f"{path}:{line}" for line in every_line[first:end]]
                    fitting = lines_that_fit(lines, room - 1) or (0 if shown else 1)
                    chunks += lines[:fitting]
                    return "\n".join(chunks), shown + fitting
                room -= len(chunk) + 1
                chunks.append(chunk)
                shown += end - first
            position = after
        return "\n".join(chunks), shown

    def count_total(self) -> int:
        """The sum of the counts, in count mode (0 in the others)."""
        return self.counted or 0

    def _lines_with_context(self, start: int, stop: int | None, budget: int, *, numbered: bool) -> tuple[str, int]:
        """Lines with context or separators: `path:line` for a match, `path-line` for a numbered context line, and
        rg's separator between groups and between files. Built a file at a time; only the files at the page's edges
        are cut."""
        between_files = self.separator is not None
        separator = self.separator or ""
        every_line = self.lines
        is_context = _CONTEXT_LINE.match if numbered else None
        entries: list[str] = []
        position = 0
        room = budget + 1  # as in `_match_lines`
        for index, (_, path, first, end) in enumerate(self.blocks):
            if stop is not None and position >= stop:
                break
            lead = 1 if index and between_files else 0
            after = position + lead + end - first
            if after > start:
                match_prefix, context_prefix = f"{path}:", f"{path}-"
                block = [separator] if lead else []
                block += [
                    separator
                    if line is None
                    else (context_prefix if is_context is not None and is_context(line) else match_prefix) + line
                    for line in every_line[first:end]
                ]
                if position < start or (stop is not None and after > stop):
                    block = block[max(start - position, 0) : None if stop is None else stop - position]
                size = sum(map(len, block)) + len(block)
                if size > room:
                    entries += block[: lines_that_fit(block, room - 1) or (0 if entries else 1)]
                    break
                room -= size
                entries += block
            position = after
        return "\n".join(entries), len(entries)


_CONTEXT_LINE = re.compile(r"\d+-")
CONTEXT_SEPARATOR = "--"
"""What rg prints between groups of context lines (rg runs with --no-config: always its default)."""


class LinesByFile:
    """Content or count output grouped by file (a RecordConsumer, fed rg's lines as they arrive), without hard-linked
    files and files a Read deny rule covers, in the order of `rg --sort path` once finished."""

    def __init__(self, ctx: ToolContext, target: SearchTarget, *, context_lines: bool, counting: bool = False) -> None:
        self._readable = ctx.readable
        self._target = target
        self._context_lines = context_lines
        self._counted: int | None = 0 if counting else None
        """Count mode: the counts of the files kept so far, added while each line is at hand."""
        self._files: list[FileLines] = []
        """The files kept so far, but the one rg is printing."""
        self._lines: list[str | None] = []
        """The lines of the files kept so far, the one rg is printing included."""
        self._printed: tuple[str, str, int] | None = None
        """The file rg is printing, when it is kept: its place in path order, path shown, and first line."""
        self._printed_path: str | None = None
        """The path of the file rg is printing, as rg printed it."""
        self._pending = 0
        """Separators seen since the last line with a path."""
        self._broken: list[str] | None = None
        """The pieces so far of a path that holds newlines, when rg is printing one."""
        self._skipped: set[str] = set()
        self._separator: str | None = None
        self.results = GrepResults([], set())
        """Once finished: what to show."""

    def feed(self, records: list[str]) -> None:
        # Tens of thousands of lines: every step in this loop counts, hence the local names and the inlined checks.
        printed, printed_path, pending, counted = self._printed, self._printed_path, self._pending, self._counted
        files, lines, skipped = self._files, self._lines, self._skipped
        readable, stat_of, is_regular = self._readable, os.stat, S_ISREG
        cut, prefix = self._target.cut, self._target.prefix
        cut_length = len(cut)
        broken = self._broken
        for line in records:
            path, nul, rest = line.partition("\0")
            if not nul:
                if broken is not None or line != CONTEXT_SEPARATOR:
                    broken = [line] if broken is None else [*broken, line]  # a path holding a newline, cut there
                elif printed_path is not None:
                    self._separator = line
                    pending += 1
                continue
            if broken is not None:
                path, broken = "\n".join([*broken, path]), None
            if path == printed_path:
                if printed is not None:
                    if pending:
                        lines += [None] * pending
                    lines.append(rest)
                pending = 0
            else:
                if printed is not None:
                    files.append((printed[0], printed[1], printed[2], len(lines)))
                printed, printed_path, pending = None, path, 0
                shown = prefix + path[cut_length:] if prefix and path.startswith(cut) else path
                try:
                    info = stat_of(shown)
                except (OSError, ValueError):
                    pass  # gone since rg read it: nothing is linked to it any more
                else:
                    if info.st_nlink > 1 and is_regular(info.st_mode):  # paths.has_other_names, inlined
                        skipped.add(shown)
                        continue
                if readable is None or readable(shown):
                    printed = (shown.replace("/", "\0") if shown.isascii() else _path_order(shown), shown, len(lines))
                    lines.append(rest)
                    if counted is not None and rest.isdigit():
                        counted += int(rest)
        self._printed, self._printed_path, self._pending, self._counted = printed, printed_path, pending, counted
        self._broken = broken

    def finish(self) -> None:
        files, printed = self._files, self._printed
        if printed is not None:
            files.append((printed[0], printed[1], printed[2], len(self._lines)))
        files.sort()  # by path order: one entry per path, so the order never reaches the rest of a tuple
        self.results = GrepResults(
            files,
            self._skipped,
            self._lines,
            self._separator,
            context_lines=self._context_lines,
            counted=self._counted,
        )


def _path_order(path: str) -> str:
    """The order of `rg --sort path`: by the bytes of each component in turn ("a/b" before "a.txt"). As a string
    whose characters are those bytes: an ASCII path already is one (`LinesByFile.feed` replaces the "/" of those
    itself), and comparing strings is quicker than encoding every path."""
    return path.encode("utf-8", "surrogateescape").replace(b"/", b"\0").decode("latin-1")
