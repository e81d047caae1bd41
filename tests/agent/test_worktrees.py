"""`isolation: worktree` in a real git repository: the agent works in its own worktree and branch, locked while it
runs, kept and named when it changed something, removed with its branch when it did not."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_subagents.config.settings import Settings
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import ScriptedModel, text, tool_call
from tests.support import MODES, connected, make_settings, matched, text_of, write_agent

pytestmark = pytest.mark.anyio


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def repository(tmp_path: Path, **overrides: Any) -> Settings:
    settings = make_settings(tmp_path, **overrides)
    assert settings.cwd is not None
    git(settings.cwd, "init", "-q", "-b", "main")
    git(settings.cwd, "config", "user.email", "dev@example.com")
    git(settings.cwd, "config", "user.name", "Dev Person")
    (settings.cwd / "notes.txt").write_text("one\n", encoding="utf-8")
    git(settings.cwd, "add", ".")
    git(settings.cwd, "commit", "-q", "-m", "init")
    return settings


def isolated_agent(settings: Settings, name: str = "isolated") -> None:
    assert settings.user_agents_dir is not None
    write_agent(settings.user_agents_dir, name, extra="isolation: worktree\npermissionMode: acceptEdits\n")


def task(agent: str, **more: Any) -> dict[str, Any]:
    return {"description": "isolated work", "prompt": "Write wt.txt", "subagent_type": agent, **more}


def worktrees(cwd: Path) -> list[str]:
    return [
        line.split()[1]
        for line in git(cwd, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_an_agent_that_changes_something_leaves_its_worktree_and_branch_named_in_the_result(
    tmp_path: Path, mode: str
) -> None:
    settings = repository(tmp_path)
    assert settings.cwd is not None
    isolated_agent(settings)
    model = ScriptedModel(
        [
            tool_call("Write", {"file_path": "wt.txt", "content": "made in the worktree\n"}),
            tool_call("Edit", {"file_path": "notes.txt", "old_string": "one", "new_string": "uno"}),
            text("wrote wt"),
        ]
    )
    async with connected(settings, mode=mode, model=model) as client:
        body = text_of(await client.call_tool("Task", task("isolated")))
    path = Path(matched(r"worktreePath: (\S+)", body))
    branch = matched(r"worktreeBranch: (\S+)", body)
    assert path.parent == settings.cwd / ".claude" / "worktrees" and path.name.startswith("agent-")
    assert branch == f"worktree-{path.name}"
    assert "changed files: notes.txt, wt.txt" in body
    assert (path / "wt.txt").read_text(encoding="utf-8") == "made in the worktree\n"
    assert not (settings.cwd / "wt.txt").exists()  # the person's checkout is untouched
    assert (settings.cwd / "notes.txt").read_text(encoding="utf-8") == "one\n"
    assert str(path) in worktrees(settings.cwd) and branch in git(settings.cwd, "branch", "--list", branch)
    assert "locked" not in git(settings.cwd, "worktree", "list", "--porcelain")
    system = model.requests[0].system
    assert f"Working directory: {path}" in system and "git worktree made for you alone" in system


async def test_an_agent_that_changes_nothing_leaves_no_worktree_or_branch(tmp_path: Path) -> None:
    settings = repository(tmp_path)
    assert settings.cwd is not None
    isolated_agent(settings)
    model = ScriptedModel([tool_call("Read", {"file_path": "notes.txt"}), text("looked, changed nothing")])
    async with connected(settings, model=model) as client:
        body = text_of(await client.call_tool("Task", task("isolated")))
    assert "looked, changed nothing" in body
    assert "git worktree was removed with its branch worktree-agent-" in body
    assert worktrees(settings.cwd) == [str(settings.cwd)]
    assert git(settings.cwd, "branch", "--list", "worktree-*") == ""


async def test_tasks_isolation_parameter_isolates_any_agent_and_the_worktree_is_locked_while_it_runs(
    tmp_path: Path,
) -> None:
    settings = repository(tmp_path)
    checkout = settings.cwd
    assert checkout is not None
    seen: list[str] = []

    def look(_request: ModelRequest) -> ModelResponse:
        seen.append(git(checkout, "worktree", "list", "--porcelain"))
        return text("done")

    async with connected(settings, model=ScriptedModel([look])) as client:
        body = text_of(await client.call_tool("Task", task("general-purpose", isolation="worktree")))
    assert "done" in body and "locked mcp-subagents: agent" in seen[0]
    assert worktrees(checkout) == [str(checkout)]


async def test_outside_a_git_repository_isolation_is_a_clear_error(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    isolated_agent(settings)
    async with connected(settings, model=ScriptedModel([text("never")])) as client:
        result = await client.call_tool("Task", task("isolated"))
    assert result.is_error
    assert "isolation: worktree needs a git repository, and" in text_of(result) and "is not inside one" in text_of(
        result
    )


async def test_a_stopped_isolated_task_still_cleans_up_its_worktree(tmp_path: Path) -> None:
    settings = repository(tmp_path)
    assert settings.cwd is not None
    isolated_agent(settings)
    arrived, never = anyio.Event(), anyio.Event()

    async def hang(_request: ModelRequest) -> ModelResponse:
        arrived.set()
        await never.wait()
        raise AssertionError("unreachable")

    async with connected(settings, model=ScriptedModel([hang])) as client:
        launched = text_of(await client.call_tool("Task", task("isolated", run_in_background=True)))
        task_id = matched(r"task_id: (\w+)", launched)
        with anyio.fail_after(10):
            await arrived.wait()
        assert len(worktrees(settings.cwd)) == 2
        await client.call_tool("TaskStop", {"task_id": task_id})
        status = text_of(await client.call_tool("TaskOutput", {"task_id": task_id}))
    assert "<status>stopped</status>" in status and "git worktree was removed" in status
    assert worktrees(settings.cwd) == [str(settings.cwd)]
