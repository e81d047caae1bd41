"""Attack: `.git/config` is writable by anything in the checkout (an agent's Bash included). `git status` runs
`core.fsmonitor` and filter drivers' `clean` commands, so reading the status for a subagent's context would run
code outside any sandbox. The status must be read with those neutralised."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from mcp_subagents.agent.project_context import git_status

pytestmark = pytest.mark.anyio


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True)


def booby_trapped_repo(tmp_path: Path) -> tuple[Path, Path, Path]:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "a@b.c")
    git(repo, "config", "user.name", "A")
    (repo / "notes.txt").write_text("same size\n", encoding="utf-8")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "init")
    fsmonitor_ran, filter_ran = tmp_path / "FSMONITOR_RAN", tmp_path / "FILTER_RAN"
    (repo / ".gitattributes").write_text("* filter=evil\n", encoding="utf-8")
    git(repo, "config", "core.fsmonitor", f"touch {fsmonitor_ran}; false")
    git(repo, "config", "filter.evil.clean", f"touch {filter_ran}; cat")
    return repo, fsmonitor_ran, filter_ran


def touch_later(path: Path, seconds: float) -> None:
    """Same content and size, newer mtime: git must re-read the file, through its clean filter."""
    later = time.time() + seconds
    os.utime(path, (later, later))


def test_plain_git_status_runs_the_planted_commands(tmp_path: Path) -> None:
    """The attack works against a plain `git status` (so the next test proves something)."""
    repo, fsmonitor_ran, filter_ran = booby_trapped_repo(tmp_path)
    touch_later(repo / "notes.txt", 100)
    subprocess.run(["git", "status", "--short"], cwd=repo, capture_output=True, check=False)
    assert fsmonitor_ran.exists() and filter_ran.exists()


async def test_the_subagent_context_reads_the_status_without_running_them(tmp_path: Path) -> None:
    repo, fsmonitor_ran, filter_ran = booby_trapped_repo(tmp_path)
    touch_later(repo / "notes.txt", 200)

    status = await git_status(repo, {"PATH": os.environ["PATH"], "HOME": str(tmp_path)})

    assert status is not None and status.branch == "main"
    assert "?? .gitattributes" in status.status
    assert not fsmonitor_ran.exists()
    assert not filter_ran.exists()
