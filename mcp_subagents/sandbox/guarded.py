"""What a sandboxed command may not change: files that make programs outside the sandbox run code or obey
instructions later.

A command in the sandbox ends with the command, but what it writes stays. Some files are run or obeyed later by
programs that are not confined: git runs what `.git/config` and `.git/hooks` name (and IDEs run `git status` all the
time, in nested repositories too), direnv loads `.envrc` on `cd`, editors run `.vscode/tasks.json` and `.idea/`
run configurations, commit hooks come from `.husky/` and `.pre-commit-config.yaml`, Claude Code and this server obey
`.claude/`, `.agents/`, `.mcp.json` and `CLAUDE.md`. Those names are found in each project area (the working
directory and the host's roots) down to `SEARCH_DEPTH` levels and kept read-only inside the sandbox; a git directory
is guarded whole, so that it can be neither edited nor renamed and replaced. Names a command creates anew are moved
aside when it ends (`moved_aside`).
"""

from __future__ import annotations

import os
import shutil
import stat
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..permissions.git_config import git_run_paths
from ..permissions.protected import GUARDED_NAMES
from .folder_watch import FolderWatch, WatchUnavailable

SEARCH_DEPTH = 4
"""Folder levels below a project area that are searched for guarded names (VS Code looks for nested repositories one
level down by default, Claude Code's own sandbox three)."""
MAX_FOLDERS = 20_000
"""Folders kept per area at most: past it the search is incomplete, and what a command creates is not moved aside."""
RACY_SECONDS = 2.0
"""A folder changed this close to when it was read is read again, whatever its time stamp says: a coarse file system
clock could give a change made just after the read the same time stamp (git's "racy" files)."""
MAX_POINTER_BYTES = 4096
PRUNED = frozenset(
    {"node_modules", "bower_components", ".venv", "venv", "__pycache__", ".tox", ".nox", ".mypy_cache",
     ".pytest_cache", ".ruff_cache", ".gradle", ".next", ".terraform", "target"}
)  # fmt: skip
"""Folders whose insides are not searched: package managers, builds and tools fill them with thousands of folders,
and nothing run later by itself is looked up there by name (what runs from them, a virtual environment's scripts or
a build's output, is the project's own code, which the person chooses to run)."""


@dataclass(slots=True)
class _Folder:
    levels: int
    """How many levels below this one are searched."""
    mtime_ns: int
    read_at: float
    guarded: tuple[str, ...]
    children: tuple[str, ...]
    """The full paths of the folders below it that are searched."""
    git_directory: bool
    """The folder is itself a git directory (a bare repository carried as files, or the target of a `gitdir:`
    pointer): guarded whole, and not searched further."""


@dataclass(slots=True)
class GuardedTree:
    """The guarded entries of one project area, kept current between searches. With inotify (Linux), a watch on
    each folder says which folders changed, and only those are read again: a search where nothing changed costs
    one read of an empty queue. Without it (or past its watch limit), every folder is stat-ed and only those whose
    time stamps changed are read again. Thread-safe: searches run in worker threads."""

    area: Path
    levels: int = SEARCH_DEPTH
    complete: bool = True
    _folders: dict[str, _Folder] = field(default_factory=lambda: dict[str, _Folder]())
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _watch: FolderWatch | None = None
    _watch_failed: bool = False

    def snapshot(self) -> frozenset[Path]:
        """Every guarded entry now: files and folders with a guarded name, git directories under other names, and the
        git directories `.git` files point to (when inside the area). Paths as found, not resolved."""
        with self._lock:
            self._refresh()
            return frozenset(self._entries())

    def close(self) -> None:
        with self._lock:
            if self._watch is not None:
                self._watch.close()
                self._watch = None

    def _refresh(self) -> None:
        if self._watch is not None:
            changed = self._watch.changed()
            if changed is not None:
                self._read_again(changed)
                return
            self._watch.close()  # events were lost: start over
            self._watch = None
        if not self._watch_failed:
            try:
                self._watch = FolderWatch()
            except WatchUnavailable:
                self._watch_failed = True
        self._stat_all()

    def _stat_all(self) -> None:
        """Search the whole tree: every folder stat-ed (and watched, when there is a watch, before it is read, so
        that no change after the read goes unseen), read again where its time stamp changed."""
        seen: dict[str, _Folder] = {}
        stack: list[tuple[str, int]] = [(str(self.area), self.levels)]
        complete = True
        while stack:
            path, levels = stack.pop()
            if len(seen) >= MAX_FOLDERS:
                complete = False
                break
            folder = self._current(path, levels, is_area=not seen)
            if folder is None:
                continue
            seen[path] = folder
            stack += [(child, levels - 1) for child in reversed(folder.children)]
        self._folders = seen
        self.complete = complete

    def _current(self, path: str, levels: int, *, is_area: bool, changed: bool = False) -> _Folder | None:
        """The folder as it is now: kept from the last search when its time stamp says it did not change (and the
        watch did not say it did), read again otherwise. None when it is gone or no longer a folder."""
        if self._watch is not None and not self._watch.watch(path):
            self._watch_failed = True  # the limit is reached, or the folder went away: stat from now on
            self._watch.close()
            self._watch = None
        try:
            info = os.lstat(path)
        except OSError:
            return None
        if not stat.S_ISDIR(info.st_mode):
            return None
        kept = None if changed else self._folders.get(path)
        if (
            kept is not None
            and kept.levels == levels
            and kept.mtime_ns == info.st_mtime_ns
            and kept.read_at - info.st_mtime_ns / 1e9 > RACY_SECONDS
        ):
            return kept
        return _read_folder(path, levels, info.st_mtime_ns, is_area=is_area)

    def _read_again(self, changed: set[str]) -> None:
        """Read again the folders the watch named, top first: what is gone leaves the tree with everything below it,
        what is new joins it with everything below it."""
        area = str(self.area)
        for path in sorted(changed, key=len):
            old = self._folders.get(path)
            if old is None:
                continue
            new = self._current(path, old.levels, is_area=path == area, changed=True)
            if self._watch is None:  # the watch gave up meanwhile: search the way without it
                self._stat_all()
                return
            if new is None:
                self._drop(path)
                continue
            self._folders[path] = new
            for child in set(old.children) - set(new.children):
                self._drop(child)
            for child in sorted(set(new.children) - set(old.children)):
                self._add(child, new.levels - 1)

    def _add(self, top: str, levels: int) -> None:
        stack = [(top, levels)]
        while stack:
            path, below = stack.pop()
            if len(self._folders) >= MAX_FOLDERS:
                self.complete = False
                return
            folder = self._current(path, below, is_area=False)
            if folder is None:
                continue
            self._folders[path] = folder
            stack += [(child, below - 1) for child in folder.children]

    def _drop(self, top: str) -> None:
        prefix = top + os.sep
        for path in [path for path in self._folders if path == top or path.startswith(prefix)]:
            del self._folders[path]
            if self._watch is not None:
                self._watch.forget(path)

    def _entries(self) -> list[Path]:
        found: list[Path] = []
        for path, folder in self._folders.items():
            if folder.git_directory:
                found.append(Path(path))
            for name in folder.guarded:
                entry = Path(path, name)
                found.append(entry)
                if name == ".git":
                    found += [target for target in git_pointer_targets(entry) if target.is_relative_to(self.area)]
        return found


def _read_folder(path: str, levels: int, mtime_ns: int, *, is_area: bool) -> _Folder | None:
    read_at = time.time()
    try:
        with os.scandir(path) as listing:
            items = list(listing)
    except OSError:
        return None
    names = {item.name for item in items}
    if not is_area and "HEAD" in names and ({"objects", "refs"} <= names or "commondir" in names):
        return _Folder(levels, mtime_ns, read_at, (), (), git_directory=True)
    guarded = tuple(sorted(name for name in names if name in GUARDED_NAMES))
    children: tuple[str, ...] = ()
    if levels > 0:
        children = tuple(
            sorted(
                item.path
                for item in items
                if item.name not in GUARDED_NAMES and item.name not in PRUNED and _is_folder(item)
            )
        )
    return _Folder(levels, mtime_ns, read_at, guarded, children, git_directory=False)


def _is_folder(item: os.DirEntry[str]) -> bool:
    try:
        return item.is_dir(follow_symlinks=False)
    except OSError:
        return False


def git_pointer_targets(entry: Path) -> list[Path]:
    """For a `.git` file (`gitdir: PATH`, as in worktrees and submodules): the git directory it names and that
    directory's `commondir`, both of which git obeys when run in the folder. Empty for anything else."""
    target = _pointer(entry, "gitdir:")
    if target is None:
        return []
    common = _pointer(target / "commondir", "")
    return [target] if common is None else [target, common]


def _pointer(file: Path, prefix: str) -> Path | None:
    try:
        if not stat.S_ISREG(os.lstat(file).st_mode):
            return None
        with open(file, "rb") as handle:
            text = handle.read(MAX_POINTER_BYTES).decode("utf-8", errors="replace").strip()
    except OSError:
        return None
    if not text.startswith(prefix):
        return None
    named = text[len(prefix) :].strip()
    if not named:
        return None
    return Path(os.path.normpath(os.path.join(file.parent, named)))


def moved_aside(created: Iterable[Path], *, area: Path, quarantine: Path) -> list[tuple[Path, Path]]:
    """Move entries a sandboxed command created below `area` into `quarantine` (under the server's state
    directory, which no command sees), keeping their paths below the area. Returns (where, where to) of each one
    moved; one that cannot be moved is left, and not returned."""
    moved: list[tuple[Path, Path]] = []
    batch = quarantine / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.urandom(3).hex()}"
    for entry in created:
        if not entry.is_relative_to(area):
            continue
        target = batch / entry.relative_to(area)
        try:
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            shutil.move(entry, target)
        except OSError:
            continue
        moved.append((entry, target))
    return moved


def named_by_git(entries: Iterable[Path], areas: Iterable[Path], home: Path) -> set[Path]:
    """What the configuration of the repositories among `entries` (and of the repository around each area) makes git
    run or read from their working trees: hooks folders, included files, programs (`git_config`)."""
    found: set[Path] = set()
    repositories = [_repository(entry) for entry in entries]
    repositories += [enclosing_repository(area) for area in areas]
    for repository in repositories:
        if repository is not None:
            found.update(git_run_paths(*repository, home))
    return found


def _repository(entry: Path) -> tuple[Path, Path | None] | None:
    """(git directory, working tree or None) when `entry` is one: a `.git` folder or file, or a bare repository."""
    if entry.name != ".git":
        return (entry, None) if os.path.isdir(entry) else None
    if os.path.isdir(entry):
        return entry, entry.parent
    targets = git_pointer_targets(entry)
    return (targets[0], entry.parent) if targets else None


def enclosing_repository(folder: Path) -> tuple[Path, Path | None] | None:
    """The repository git finds from `folder` by walking up (its `.git` and working tree), if any."""
    for candidate in (folder, *folder.parents):
        entry = candidate / ".git"
        if os.path.lexists(entry):
            return _repository(entry)
    return None
