"""Attack: leave the sandbox with a command the read-only classifier waves through, and nobody is asked.

Before the fix, with the sandbox on in default mode, a Bash call with `dangerouslyDisableSandbox: true` (or one in
`sandbox.excludedCommands`) got the ordinary check, where "it only reads" allowed it: `git grep -O'cmd' x` ran `cmd`
unsandboxed, `git -C vendor.git status` ran a bare repository's `core.fsmonitor`, and after a sandboxed
`ln -s ~/.ssh docs`, `grep -R` and `find -L` printed the SSH key and its name. Now a command that leaves the sandbox
runs only by an allow rule that names it (or in bypassPermissions mode), and the question says so.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.fakes.fake_llm import FakeLLM, Turn

from .conftest import requires_bwrap
from .server import Scene, bash, make_scene, run_task, tool_results

pytestmark = [pytest.mark.anyio, requires_bwrap]

LEAVE = {"dangerouslyDisableSandbox": True}


def git(folder: Path, *arguments: str) -> None:
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"]
    subprocess.run(["git", *identity, *arguments], cwd=folder, check=True, capture_output=True)


def project_repository(scene: Scene) -> None:
    """The project is a git repository with one committed file."""
    (scene.work / "notes.txt").write_text("x marks the spot\n", encoding="utf-8")
    git(scene.work, "init", "-q")
    git(scene.work, "add", "notes.txt")
    git(scene.work, "commit", "-q", "-m", "notes")


def bare_repository_with_fsmonitor(scene: Scene, marker: Path) -> None:
    """`vendor.git/`: a bare repository carried as plain files, whose config runs a command on `git status`."""
    vendor = scene.work / "vendor.git"
    git(scene.work, "init", "-q", "--bare", "vendor.git")
    git(vendor, "config", "core.bare", "false")
    git(vendor, "config", "core.worktree", "..")
    git(vendor, "config", "core.fsmonitor", f"touch {marker}; false")


async def run_in_background(scene: Scene, fake: FakeLLM, *steps: Turn) -> list[str]:
    """Run one background Task (nobody can be asked there) and return what each step's tool call answered."""
    result, server = await run_task(scene, fake, *steps, background=True)
    task_id = result.split("task_id: ")[1].split()[0]
    with anyio.fail_after(60):
        await server.call_tool("TaskOutput", {"task_id": task_id})
    await server.close()
    return [tool_results(fake, request)[0] for request in range(1, len(steps) + 1)]


def assert_asked_to_leave(seen: str) -> None:
    assert seen.startswith("Error: Permission denied"), seen
    assert "outside the sandbox" in seen and "permissions.allow" in seen, seen


async def test_git_grep_cannot_open_its_matches_in_a_pager_outside_the_sandbox(host_tmp: Path, fake: FakeLLM) -> None:
    scene = make_scene(host_tmp, fake)
    project_repository(scene)
    marker = scene.home / "pager-ran"
    attacks = [f"git grep -O'touch {marker}' spot", f"git grep --open-files-in-pager='touch {marker}' spot"]
    results = await run_in_background(scene, fake, *(bash(attack, **LEAVE) for attack in attacks))
    for seen in results:
        assert_asked_to_leave(seen)
    assert not marker.exists()


async def test_a_bare_repository_in_the_project_cannot_run_its_fsmonitor_outside_the_sandbox(
    host_tmp: Path, fake: FakeLLM
) -> None:
    scene = make_scene(host_tmp, fake)
    scene.settings({"sandbox": {"excludedCommands": ["git"]}})
    project_repository(scene)
    marker = scene.home / "fsmonitor-ran"
    bare_repository_with_fsmonitor(scene, marker)
    steps = [bash("git -C vendor.git status", **LEAVE), bash("git -C vendor.git status")]
    [left, excluded] = await run_in_background(scene, fake, *steps)
    assert_asked_to_leave(left)
    assert_asked_to_leave(excluded)
    assert "dangerouslyDisableSandbox" in left and "sandbox.excludedCommands" in excluded
    assert not marker.exists()


async def test_a_link_to_the_ssh_folder_is_not_followed_outside_the_sandbox(host_tmp: Path, fake: FakeLLM) -> None:
    scene = make_scene(host_tmp, fake)
    (scene.home / ".ssh").mkdir()
    (scene.home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY----- KEYMATERIAL\n")
    (scene.work / "docs").symlink_to(scene.home / ".ssh")  # what a sandboxed `ln -s ~/.ssh docs` leaves behind
    attacks = ["grep -R OPENSSH .", "grep --dereference-recursive OPENSSH", "find -L . -name 'id_*'"]
    results = await run_in_background(scene, fake, *(bash(attack, **LEAVE) for attack in attacks))
    for seen in results:
        assert_asked_to_leave(seen)
        assert "KEYMATERIAL" not in seen and "id_ed25519" not in seen


async def test_an_allow_rule_that_names_the_command_lets_it_leave(host_tmp: Path, fake: FakeLLM) -> None:
    scene = make_scene(host_tmp, fake)
    scene.settings({"permissions": {"allow": ["Bash(cat ../outside.txt)"]}})
    (scene.home / "outside.txt").write_text("read outside the sandbox\n", encoding="utf-8")
    extra: dict[str, Any] = LEAVE
    [seen] = await run_in_background(scene, fake, bash("cat ../outside.txt", **extra))
    assert seen == "read outside the sandbox"


@pytest.mark.parametrize(
    "leave",
    [{"dangerouslyDisableSandbox": "true"}, {"dangerouslyDisableSandbox": 1}, {"dangerously_disable_sandbox": True}],
)
async def test_every_spelling_the_bash_tool_accepts_for_leaving_is_checked_as_leaving(
    host_tmp: Path, fake: FakeLLM, leave: dict[str, Any]
) -> None:
    """The gate read only `dangerouslyDisableSandbox: true`; the tool also takes "true", 1 and the snake_case name,
    so the call was checked as sandboxed (and auto-allowed) and then ran outside the sandbox."""
    scene = make_scene(host_tmp, fake)
    scene.settings({"sandbox": {"autoAllowBashIfSandboxed": True}})
    [seen] = await run_in_background(scene, fake, bash("touch ../escaped.txt", **leave))
    assert_asked_to_leave(seen)
    assert not (scene.home / "escaped.txt").exists()
