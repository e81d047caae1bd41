"""The state directory: private to its owner (0700, files 0600), and old task files removed at start."""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import time
from pathlib import Path

logger = logging.getLogger(__name__)

DIRECTORY_MODE = 0o700
FILE_MODE = 0o600
TASK_FILE_SUFFIXES = (".jsonl", ".output")


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


def private_file(path: Path) -> None:
    """Create `path` empty with mode 0600 if it does not exist, so what is then appended to it stays private."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE))


def _tighten(path: Path, mode: int) -> None:
    try:
        current = stat.S_IMODE(path.lstat().st_mode)
        if current & ~mode:
            path.chmod(current & mode)
    except OSError as exc:
        logger.warning("could not make %s private: %s", path, exc)
