"""The state directory: private to its owner (0700, files 0600), and old task files removed at start."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
import time
from collections.abc import Callable, Mapping
from pathlib import Path

logger = logging.getLogger(__name__)

DIRECTORY_MODE = 0o700
FILE_MODE = 0o600
TASK_FILE_SUFFIXES = (".jsonl", ".output")
TASK_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
EARLY_ANSWERS_FILE = "early-answers.json"


def default_state_dir(environ: Mapping[str, str]) -> Path:
    """Where tasks and caches live when nothing names a folder: `$XDG_STATE_HOME/mcp-subagents`."""
    base = environ.get("XDG_STATE_HOME") or str(Path(environ.get("HOME", "~")).expanduser() / ".local" / "state")
    return Path(base) / "mcp-subagents"


"""The answers a stdio server gives before it has loaded (`serve.early_answers`), in the state directory."""
"""What a task id looks like: it names the task's files here, so nothing else is taken for one."""


def prepare_state_dir(state_dir: Path, *, keep_days: int) -> None:
    """Create `state_dir/tasks` private, tighten what an earlier version left readable, and remove task files not
    touched for `keep_days` days (0 keeps them all)."""
    tasks = state_dir / "tasks"
    for directory in (state_dir, tasks):
        directory.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
        _tighten(directory, DIRECTORY_MODE)
    cutoff = time.time() - keep_days * 86400
    removed = 0
    with os.scandir(tasks) as entries:
        for entry in entries:
            if not entry.name.endswith(TASK_FILE_SUFFIXES) or not entry.is_file(follow_symlinks=False):
                continue
            if keep_days and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                    removed += 1
            else:
                _tighten(Path(entry.path), FILE_MODE)
    if removed:
        logger.info("removed %d task file(s) older than %d days from %s", removed, keep_days, tasks)


class AppendFile:
    """A task file that text is appended to: created with mode 0600 if missing, never opened through a symlink,
    one write per call (so a crash loses at most the text being written, and readers see whole lines).

    Opened at the first append and kept open until `close`: on a busy server, opening the file for every line cost
    more than writing it. The descriptor is not inherited by child processes."""

    def __init__(self, path: Path, *, errors: str = "strict", copy: Callable[[str], None] | None = None) -> None:
        """`copy` gets every piece of text appended, once it is written (a team's replica mirrors the file)."""
        self.path = path
        self._errors = errors
        self._copy = copy
        self._fd: int | None = None

    def open(self) -> None:
        """Open (and create) the file now rather than at the first append: creating a file can take a millisecond
        or more (a slow or network disk), which a worker thread can wait out instead of the event loop.

        Raises:
            OSError: the file could not be opened."""
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)

    def append(self, text: str) -> None:
        """Raises:
        OSError: the file could not be opened or written."""
        if self._fd is None:
            self.open()
        assert self._fd is not None
        data = memoryview(text.encode("utf-8", self._errors))
        while data:
            data = data[os.write(self._fd, data) :]
        if self._copy is not None:
            self._copy(text)

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                os.close(fd)

    def __del__(self) -> None:
        self.close()


def _tighten(path: Path, mode: int) -> None:
    try:
        current = stat.S_IMODE(path.lstat().st_mode)
        if current & ~mode:
            path.chmod(current & mode)
    except OSError as exc:
        logger.warning("could not make %s private: %s", path, exc)
