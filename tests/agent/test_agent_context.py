"""The bounded pieces of an agent's context: git status size, MEMORY.md's first 200 lines / 25 KB, big CLAUDE.md."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from mcp_subagents.agent.memory import MAX_INDEX_BYTES, prepare_memory
from mcp_subagents.agent.project_context import (
    MAX_FILE_CHARS,
    MAX_STATUS_CHARS,
    GitStatus,
    git_status,
    git_status_block,
    instruction_files,
)
from mcp_subagents.definitions import AgentDefinition

pytestmark = pytest.mark.anyio


def test_a_long_status_is_cut_with_a_pointer_to_git_status() -> None:
    status = GitStatus(
        branch="b", main_branch="main", status="\n".join(f"?? file{n}.txt" for n in range(500)), recent_commits=""
    )
    block = git_status_block(status)
    listed = block.split("Status:\n", 1)[1].split("\n... (cut", 1)[0]
    assert len(listed) == MAX_STATUS_CHARS
    assert 'run "git status" with Bash' in block
    assert "Recent commits:\n(none)" in block


def test_a_clean_tree_says_so() -> None:
    block = git_status_block(GitStatus(branch="dev", main_branch="main", status="", recent_commits="abc init"))
    assert "Status:\n(clean)" in block and "Current branch: dev" in block and "Git user" not in block


async def test_no_status_outside_a_repository(tmp_path: Path) -> None:
    assert await git_status(tmp_path, {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}) is None


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


async def test_no_status_without_git(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    assert await git_status(tmp_path, {"PATH": str(tmp_path / "no-bin"), "HOME": str(tmp_path)}) is None


async def test_recent_commits_are_the_last_five(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "trunk")
    git(tmp_path, "config", "user.email", "a@b.c")
    git(tmp_path, "config", "user.name", "A")
    for n in range(7):
        git(tmp_path, "commit", "-q", "--allow-empty", "-m", f"commit {n}")

    status = await git_status(tmp_path, {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})

    assert status is not None
    assert [line.split(" ", 1)[1] for line in status.recent_commits.splitlines()] == [
        f"commit {n}" for n in (6, 5, 4, 3, 2)
    ]
    assert status.branch == "trunk" and status.main_branch == "trunk"


def test_a_huge_claude_md_is_cut(tmp_path: Path) -> None:
    (tmp_path / "CLAUDE.md").write_text("x" * (MAX_FILE_CHARS + 10), encoding="utf-8")
    [file] = instruction_files(tmp_path)
    assert file.content.startswith("x" * MAX_FILE_CHARS) and "the file has 40010 characters" in file.content


def test_memory_index_is_cut_at_25_kb(tmp_path: Path) -> None:
    definition = AgentDefinition(name="a", description="d", prompt="p", memory="project", source="project")
    folder = tmp_path / ".claude" / "agent-memory" / "a"
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("\n".join("y" * 1000 for _ in range(100)), encoding="utf-8")

    memory = prepare_memory(definition, cwd=tmp_path, claude_dir=None)

    assert memory is not None
    shown = memory.prompt.split("## MEMORY.md\n\n", 1)[1]
    assert shown.count("y") == MAX_INDEX_BYTES - MAX_INDEX_BYTES // 1001
    assert "was cut here" in shown


def logging_git(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose `git` writes its arguments to the returned log, then runs the real git."""
    bin_dir, log = tmp_path / "bin", tmp_path / "git.log"
    bin_dir.mkdir()
    real_git = shutil.which("git")
    wrapper = bin_dir / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real_git}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}, log


async def test_outside_a_repository_no_git_process_is_started(tmp_path: Path) -> None:
    folder = tmp_path / "plain" / "folder"
    folder.mkdir(parents=True)
    env, log = logging_git(tmp_path)

    assert await git_status(folder, env) is None
    assert not log.exists()


async def test_a_repository_named_by_git_dir_is_found_without_a_dot_git_above(tmp_path: Path) -> None:
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir()
    elsewhere.mkdir()
    git(repo, "init", "-q", "-b", "side")
    git(repo, "-c", "user.name=A", "-c", "user.email=a@b.c", "commit", "-q", "--allow-empty", "-m", "first")
    env, log = logging_git(tmp_path)

    status = await git_status(elsewhere, {**env, "GIT_DIR": str(repo / ".git")})

    assert status is not None and status.branch == "side"
    assert log.exists()


async def test_tasks_launched_together_share_one_git_status_and_later_ones_ask_again(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    env, log = logging_git(tmp_path)

    def status_runs() -> int:
        return sum("--is-inside-work-tree" in line for line in log.read_text(encoding="utf-8").splitlines())

    answers: list[object] = []

    async def one() -> None:
        answers.append(await git_status(repo, env))

    async with anyio.create_task_group() as group:
        for _ in range(5):
            group.start_soon(one)
    assert status_runs() == 1
    assert len(answers) == 5 and all(answer is answers[0] and answer is not None for answer in answers)

    (repo / "new.txt").write_text("x", encoding="utf-8")
    later = await git_status(repo, env)
    assert status_runs() == 2  # nothing is cached once answered: a later task sees the tree as it is then
    assert later is not None and "new.txt" in later.status
