"""The state directory: private, and cleaned of old task files at start."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from mcp_subagents.core.state import AppendFile, prepare_state_dir


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_state_directory_is_private(tmp_path: Path) -> None:
    prepare_state_dir(tmp_path / "state", keep_days=30)
    assert mode(tmp_path / "state") == 0o700 and mode(tmp_path / "state" / "tasks") == 0o700


def test_old_task_files_go_and_everything_else_stays_but_tighter(tmp_path: Path) -> None:
    tasks = tmp_path / "state" / "tasks"
    tasks.mkdir(parents=True)
    old, fresh, other = tasks / "a.jsonl", tasks / "b.output", tasks / "notes.txt"
    for path in (old, fresh, other):
        path.write_text("x")
        path.chmod(0o644)
    long_ago = time.time() - 31 * 86400
    for path in (old, other):
        os.utime(path, (long_ago, long_ago))
    prepare_state_dir(tmp_path / "state", keep_days=30)
    assert not old.exists() and fresh.exists() and other.exists()
    assert mode(fresh) == 0o600 and mode(other) == 0o644  # only task files are the state directory's own


def test_keep_days_zero_keeps_everything(tmp_path: Path) -> None:
    tasks = tmp_path / "state" / "tasks"
    tasks.mkdir(parents=True)
    old = tasks / "a.jsonl"
    old.write_text("x")
    os.utime(old, (0, 0))
    prepare_state_dir(tmp_path / "state", keep_days=0)
    assert old.exists()


def test_an_append_file_is_created_0600_appends_and_never_follows_a_symlink(tmp_path: Path) -> None:
    path = tmp_path / "task.output"
    path.write_text("kept\n")
    path.chmod(0o600)
    appended = AppendFile(path)
    appended.append("one\n")
    appended.append("two\n")
    assert path.read_text() == "kept\none\ntwo\n"  # readers see every line at once, before any close
    appended.close()
    fresh = AppendFile(tmp_path / "new.output")
    fresh.append("x")
    fresh.close()
    assert mode(tmp_path / "new.output") == 0o600
    target = tmp_path / "elsewhere"
    (tmp_path / "link.output").symlink_to(target)
    with pytest.raises(OSError):
        AppendFile(tmp_path / "link.output").append("leak")
    assert not target.exists()


def test_an_append_file_is_not_inherited_by_child_processes(tmp_path: Path) -> None:
    appended = AppendFile(tmp_path / "task.output")
    appended.append("x")
    fd = appended._fd  # pyright: ignore[reportPrivateUsage]
    assert fd is not None and not os.get_inheritable(fd)
    appended.close()
