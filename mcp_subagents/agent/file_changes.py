"""The files a run created, modified and deleted, whatever tool did it, with a short diff summary per file.

Two sources, one list. The file tools (Write, Edit, MultiEdit, NotebookEdit) and the files a Bash command redirects
into are remembered before the call runs: their content then (up to `MAX_COMPARED_BYTES`) is what the lines added
and removed are counted against, exactly. Everything else (a Bash command's other writes, an MCP tool's, a hook's) is
found by comparing two scans of the project's files (size, modification time, inode) taken when the run starts and
when it ends (the second only when a call that may write unseen ran, or hooks may have); a file found that way has
line counts only when it is new. A project of more than `MAX_SCANNED_FILES`
files is not scanned, and the list says that it may miss changes.

The scans see the whole project: a change another task or the person made there while the run ran is listed too.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import subprocess
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final, Literal, TypeAlias

import anyio
import anyio.to_thread

from ..core.json_values import JsonObject
from ..permissions.read_only import read_only
from ..permissions.shell_lexer import ShellSyntaxError, split_command
from .worktrees import WORKTREES_FOLDER

logger = logging.getLogger(__name__)

ChangeKind: TypeAlias = Literal["created", "modified", "deleted"]

MAX_SCANNED_FILES = 20_000
"""A project with more files than this is not scanned: only the changes remembered before a call are listed."""
MAX_COMPARED_BYTES = 1024 * 1024
"""Lines are counted in files up to this size (before and after); a larger one is listed without counts."""
MAX_REMEMBERED_BYTES = 32 * 1024 * 1024
"""What a run keeps of the files it is about to change, all together; files past it are compared by size alone."""
MAX_KEPT_FILES = 500
"""How many changed files a task's record keeps; the rest are counted (`FileChanges.more`)."""
_BINARY_SNIFF_BYTES = 8192
_SKIPPED_FOLDERS = frozenset({".git"})
_EDITING_TOOLS: dict[str, str] = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path"}
_EDITING_TOOLS["NotebookEdit"] = "notebook_path"
WATCHED_WITHOUT_SCAN = frozenset({"Read", "Glob", "Grep", "WebFetch", "WebSearch", "TodoWrite", "Task", "Agent"})
"""Tools that write nothing, or whose writes are remembered before the call: a run with only these (and no hooks)
needs no scan."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FileChange:
    path: str
    """Relative to `FileChanges.root` when inside it, else absolute."""
    kind: ChangeKind
    added: int | None = None
    """Lines added; None when not known (binary, too large, or its content before the run was not seen)."""
    removed: int | None = None
    binary: bool = False
    outside: bool = False
    """Outside the folders the run's file tools may write (the working directory, additionalDirectories, ...)."""
    task: str = ""
    """The nested task that made the change ("" for the task itself)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FileChanges:
    files: tuple[FileChange, ...] = ()
    more: int = 0
    """Changed files beyond those kept (`MAX_KEPT_FILES`)."""
    root: str = ""
    """The project folder (or worktree) the relative paths start from."""
    partial: str = ""
    """Why changes made by other tools than the file tools may be missing ("" when the project was scanned)."""

    @property
    def count(self) -> int:
        return len(self.files) + self.more


_Stamp: TypeAlias = tuple[int, int, int]
"""A file remembered by its size, modification time (ns) and inode alone: too large to compare by content."""
_Content: TypeAlias = bytes | _Stamp | None
"""A file's content, its stamp when too large to compare, or None when there was no file."""


class ChangeWatch:
    """One run's watch over the files it changes. `start` before the run, `before_call` before each tool call,
    `finish` once it is over."""

    def __init__(
        self,
        *,
        root: Path,
        allowed: Iterable[Path],
        scan: bool,
        unseen_writes: bool = False,
        skipped: Iterable[Path] = (),
        earlier: FileChanges | None = None,
    ) -> None:
        """`scan`: the run may write through a tool that does not say what it writes (so the project is scanned
        at the start). `unseen_writes`: something may have written already, whatever the calls (a hook runs around
        every call), so it is scanned at the end too; otherwise only when such a call ran. `skipped`: folders no scan
        enters (the server's state directory, where the task's own files grow)."""
        self._root = Path(os.path.realpath(root))
        self._allowed = tuple(Path(os.path.realpath(folder)) for folder in allowed)
        self._scan = scan
        self._skipped = tuple(os.path.realpath(folder) for folder in skipped)
        self._earlier = earlier
        self._before: dict[str, _Content] = {}
        self._first_scan: dict[str, bytes] | None = None
        self._partial = ""
        self._first_scanning: threading.Thread | None = None
        self._unseen_writes = unseen_writes
        self._kept_bytes = 0

    def start(self) -> None:
        """Begin the first scan (when the run scans) in a thread of its own, so that it goes on while the model
        answers the run's first request; `before_call` and `finish` wait for it."""
        if self._scan:
            self._first_scanning = threading.Thread(target=self._scan_first, name="first scan", daemon=True)
            self._first_scanning.start()

    def _scan_first(self) -> None:
        self._first_scan = _scan(self._root, self._skipped)
        if self._first_scan is None:
            self._partial = f"the project has more than {MAX_SCANNED_FILES} files, so it was not scanned"

    async def first_scan_done(self) -> None:
        scanning = self._first_scanning
        if scanning is not None and scanning.is_alive():
            await anyio.to_thread.run_sync(scanning.join)

    async def before_call(self, tool: str, arguments: JsonObject, cwd: Path) -> None:
        """Remember the content of each file the call is about to write, the first time one is written (once the
        first scan is done: what the call changes must not be in it)."""
        await self.first_scan_done()
        self._remember(tool, arguments, cwd)

    def _remember(self, tool: str, arguments: JsonObject, cwd: Path) -> None:
        if not self._unseen_writes and not _says_what_it_writes(tool, arguments):
            self._unseen_writes = True
        for raw in _written_paths(tool, arguments):
            try:
                path = os.path.realpath(os.path.join(cwd, os.path.expanduser(raw)))
            except (OSError, ValueError):  # a component changed while realpath read it: the scan may see the file
                continue
            if path not in self._before:
                before = _content(path)
                if isinstance(before, bytes):
                    if self._kept_bytes + len(before) > MAX_REMEMBERED_BYTES:
                        before = _file_stamp(path)  # listed all the same, without line counts
                    else:
                        self._kept_bytes += len(before)
                self._before[path] = before

    async def finish(self) -> FileChanges:
        """The run's changes (with those of the run it resumed, if any); runs to its end even when cancelled."""
        found: list[FileChanges] = []
        with anyio.CancelScope(shield=True):  # a stopped task's list is worth as much as a finished one's
            await self.first_scan_done()
            try:
                found.append(await anyio.to_thread.run_sync(self._changes))
            except Exception as exc:  # the list is a report: it never turns a task's ending into a failure
                logger.exception("could not list the files a run changed")
                found.append(FileChanges(root=str(self._root), partial=f"listing them failed: {exc}"))
        return found[0]

    def _changes(self) -> FileChanges:
        found = self._remembered_changes()
        if self._first_scan is not None and self._unseen_writes:
            after = _scan(self._root, self._skipped)
            if after is None:
                self._partial = f"the project grew past {MAX_SCANNED_FILES} files during the run"
            else:
                found.update(list(self._scanned_changes(self._first_scan, after, found)))
        files = [replace(change, path=self._shown(change.path)) for _, change in sorted(found.items())]
        current = _bounded(files, more=0, root=str(self._root), partial=self._partial)
        return current if self._earlier is None else after_earlier(self._earlier, current)

    def _remembered_changes(self) -> dict[str, FileChange]:
        found: dict[str, FileChange] = {}
        for path, before in self._before.items():
            after = _file_stamp(path) if isinstance(before, tuple) else _content(path)
            change = _compared(path, before, after, outside=self._outside(path))
            if change is not None:
                found[path] = change
        return found

    def _scanned_changes(
        self, before: dict[str, bytes], after: dict[str, bytes], known: dict[str, FileChange]
    ) -> Iterator[tuple[str, FileChange]]:
        for path in before.keys() | after.keys():
            if path in known or path in self._before or before.get(path) == after.get(path):
                continue
            outside = self._outside(path)
            if path not in before:
                change = _compared(path, None, _content(path), outside=outside)
            else:
                kind: ChangeKind = "deleted" if path not in after else "modified"
                change = FileChange(path=path, kind=kind, outside=outside)
            if change is not None:
                yield path, change

    def _outside(self, path: str) -> bool:
        return not any(Path(path).is_relative_to(folder) for folder in self._allowed)

    def _shown(self, path: str) -> str:
        relative = Path(path)
        return str(relative.relative_to(self._root)) if relative.is_relative_to(self._root) else path


def _says_what_it_writes(tool: str, arguments: JsonObject) -> bool:
    """The call writes nothing, or only files `_written_paths` names: a read-only Bash command (as the permission
    check proves it, git aside: a repository's configuration can make git run programs), a file tool."""
    if tool in WATCHED_WITHOUT_SCAN:
        return True
    command = arguments.get("command")
    if tool != "Bash" or not isinstance(command, str):
        return False
    try:
        pieces = split_command(command)
    except ShellSyntaxError:
        return False
    return all(piece.values[:1] != ("git",) and read_only(piece) is not None for piece in pieces)


def _written_paths(tool: str, arguments: JsonObject) -> list[str]:
    field = _EDITING_TOOLS.get(tool)
    if field is not None:
        value = arguments.get(field)
        return [value] if isinstance(value, str) and value and "\0" not in value else []
    command = arguments.get("command")
    if tool != "Bash" or not isinstance(command, str):
        return []
    try:
        pieces = split_command(command)
    except ShellSyntaxError:
        return []
    targets: list[str] = []
    for piece in pieces:
        targets += [r.target for r in piece.redirects if r.writes and r.known and r.target not in _DEVICES]
        if piece.values and piece.values[0] == "tee":
            targets += [word for word in piece.values[1:] if not word.startswith("-")]
    return [target for target in targets if target and "\0" not in target]


_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})


def _content(path: str) -> _Content:
    """The file's bytes, its stamp when larger than `MAX_COMPARED_BYTES`, None when no regular file is there."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    with os.fdopen(fd, "rb") as file:
        try:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode):
                return None
            if info.st_size > MAX_COMPARED_BYTES:
                return (info.st_size, info.st_mtime_ns, info.st_ino)
            return file.read(MAX_COMPARED_BYTES + 1)
        except OSError:  # an I/O error reading it: as if it were not there
            return None


def _file_stamp(path: str) -> _Stamp | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ino) if stat.S_ISREG(info.st_mode) else None


def _compared(path: str, before: _Content, after: _Content, *, outside: bool) -> FileChange | None:
    """The change from `before` to `after`; None when there is none."""
    if before == after:
        return None
    kind: ChangeKind = "created" if before is None else "deleted" if after is None else "modified"
    if isinstance(before, tuple) or isinstance(after, tuple):
        return FileChange(path=path, kind=kind, outside=outside)
    old, new = before or b"", after or b""
    if b"\0" in old[:_BINARY_SNIFF_BYTES] or b"\0" in new[:_BINARY_SNIFF_BYTES]:
        return FileChange(path=path, kind=kind, binary=True, outside=outside)
    added, removed = line_counts(old, new)
    return FileChange(path=path, kind=kind, added=added, removed=removed, outside=outside)


def line_counts(before: bytes, after: bytes) -> tuple[int, int]:
    """Lines added and removed, counting each text as a bag of lines: exact for edits in place, and a line that only
    moved counts as neither."""
    old, new = Counter(before.splitlines()), Counter(after.splitlines())
    return sum((new - old).values()), sum((old - new).values())


Scan: TypeAlias = Callable[[Path, tuple[str, ...]], "dict[str, bytes] | bytes | None"]
"""One way of scanning a folder: `scan_with_find`, `scan_in_python`."""


def _scan(root: Path, skipped: tuple[str, ...] = ()) -> dict[str, bytes] | None:
    """The stamp of every file under `root` (symlinks not followed, `.git` and agents' worktrees skipped); None when
    there are more than `MAX_SCANNED_FILES`. GNU find does the stat calls in a process of its own, outside the
    interpreter's lock (the event loop goes on meanwhile); Python's scandir where find is missing or not GNU's."""
    found = scan_with_find(root, skipped)
    return scan_in_python(root, skipped) if isinstance(found, bytes) else found


_NO_FIND: Final = b""
_FIND_FORMAT = "%s %T@ %i %p\\0"
"""size, modification time (seconds, a point, nanoseconds and a 0), inode, path, NUL: what `_stamp` writes too."""
SCAN_TIMEOUT_S = 30.0
_GLOB_SPECIAL = re.compile(r"[*?\[\]\\]")


def scan_with_find(root: Path, skipped: tuple[str, ...] = ()) -> dict[str, bytes] | bytes | None:
    """The stamps by path; None when there are too many; `_NO_FIND` when GNU find cannot do it."""
    find = shutil.which("find", path="/usr/bin:/bin")  # the system's, not one the project's PATH would pick
    if find is None:
        return _NO_FIND
    folders = [part for folder in skipped for part in ("-o", "-path", _GLOB_SPECIAL.sub(r"\\\g<0>", folder))]
    pruned = ["(", "-name", ".git", "-o", "-path", f"*/{WORKTREES_FOLDER}", *folders, ")", "-prune", "-o"]
    command = [find, os.fspath(root), *pruned, "!", "-type", "d", "-printf", _FIND_FORMAT]
    environment = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}
    try:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=environment
        )
    except OSError:
        return _NO_FIND
    watchdog = threading.Timer(SCAN_TIMEOUT_S, process.kill)
    watchdog.start()
    try:
        output = _read_records(process)
    finally:
        watchdog.cancel()
        process.kill()
        code = process.wait()
    if output is None:
        return None
    if code != 0 and not output:  # not GNU find (no -printf), or the root unreadable: Python says which
        return _NO_FIND
    stamps: dict[str, bytes] = {}
    for record in output.split(b"\0")[:-1]:
        stamp, _, path = record.partition(b" /")
        stamps[os.fsdecode(b"/" + path)] = stamp
    return stamps


def _read_records(process: subprocess.Popen[bytes]) -> bytes | None:
    """find's whole output; None once it lists more than `MAX_SCANNED_FILES` files."""
    assert process.stdout is not None
    chunks: list[bytes] = []
    records = 0
    while chunk := process.stdout.read(64 * 1024):
        chunks.append(chunk)
        records += chunk.count(b"\0")
        if records > MAX_SCANNED_FILES:
            return None
    return b"".join(chunks)


def scan_in_python(root: Path, skipped: tuple[str, ...] = ()) -> dict[str, bytes] | None:
    stamps: dict[str, bytes] = {}
    folders = [os.fspath(root)]
    while folders:
        folder = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not (
                        entry.name in _SKIPPED_FOLDERS or entry.path.endswith(_WORKTREES_END) or entry.path in skipped
                    ):
                        folders.append(entry.path)
                    continue
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            stamps[entry.path] = _stamp(info)
            if len(stamps) > MAX_SCANNED_FILES:
                return None
    return stamps


_WORKTREES_END = f"/{WORKTREES_FOLDER}"


def _stamp(info: os.stat_result) -> bytes:
    seconds, nanoseconds = divmod(info.st_mtime_ns, 1_000_000_000)
    return f"{info.st_size} {seconds}.{nanoseconds:09d}0 {info.st_ino}".encode()


def _bounded(files: list[FileChange], *, more: int, root: str, partial: str) -> FileChanges:
    kept = tuple(files[:MAX_KEPT_FILES])
    return FileChanges(files=kept, more=more + len(files) - len(kept), root=root, partial=partial)


_AFTER: dict[tuple[ChangeKind, ChangeKind], ChangeKind | None] = {
    ("created", "modified"): "created",
    ("created", "deleted"): None,
    ("deleted", "created"): "modified",
}


def after_earlier(earlier: FileChanges, later: FileChanges) -> FileChanges:
    """What a resumed task changed in all: its earlier run's changes followed by its latest run's."""
    merged = {change.path: change for change in earlier.files}
    for change in later.files:
        first = merged.get(change.path)
        if first is None:
            merged[change.path] = change
            continue
        kind = _AFTER.get((first.kind, change.kind), change.kind)
        if kind is None:
            del merged[change.path]
            continue
        merged[change.path] = _summed(first, change, kind)
    partial = later.partial or earlier.partial
    return _bounded(
        sorted(merged.values(), key=_by_path), more=earlier.more + later.more, root=later.root, partial=partial
    )


def _summed(first: FileChange, then: FileChange, kind: ChangeKind) -> FileChange:
    known = None not in (first.added, first.removed, then.added, then.removed)
    return FileChange(
        path=then.path,
        kind=kind,
        added=(first.added or 0) + (then.added or 0) if known else None,
        removed=(first.removed or 0) + (then.removed or 0) if known else None,
        binary=first.binary or then.binary,
        outside=first.outside or then.outside,
        task=then.task or first.task,
    )


def with_children(own: FileChanges, children: Iterable[tuple[str, FileChanges]]) -> FileChanges:
    """A task's changes with those of the nested tasks it launched, each marked with the task that made it (a
    child's own view of a file wins: it saw the file before it changed it)."""
    merged = {_absolute(own.root, change.path): change for change in own.files}
    more = own.more
    partial = own.partial
    for child_id, changes in children:
        for change in changes.files:
            where = _absolute(changes.root, change.path)
            merged[where] = replace(change, path=_relative(own.root, where), task=change.task or child_id)
        more += changes.more
        partial = partial or changes.partial
    return _bounded(sorted(merged.values(), key=_by_path), more=more, root=own.root, partial=partial)


def _absolute(root: str, path: str) -> str:
    return path if os.path.isabs(path) or not root else os.path.join(root, path)


def _relative(root: str, path: str) -> str:
    return str(Path(path).relative_to(root)) if root and Path(path).is_relative_to(root) else path


def _by_path(change: FileChange) -> str:
    return change.path
