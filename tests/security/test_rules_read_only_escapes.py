"""Attack: with no sandbox (`--sandbox off`, no bubblewrap, macOS), make a command that "only reads" run code or read
through a link, in default and in plan mode, where read-only commands run without asking.

Before the fix each of these ran unasked through the real server: `git -C vendor.git status` on a bare repository
the project carries as plain files ran its `core.fsmonitor`; `cd sub && git status` did the same with a nested
repository; `git grep -O'cmd'` ran `cmd` as its pager (in plan mode too); `grep -R` followed a planted link to
`~/.ssh` and printed the key.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.fakes.fake_llm import FakeLLM, Turn

from .server import Scene, bash, make_scene, run_task, tool_results
from .test_sandbox_leaving_asks import bare_repository_with_fsmonitor, git, project_repository

pytestmark = pytest.mark.anyio


async def run_in_background(scene: Scene, fake: FakeLLM, *steps: Turn) -> list[str]:
    result, server = await run_task(scene, fake, *steps, background=True)
    task_id = result.split("task_id: ")[1].split()[0]
    with anyio.fail_after(60):
        await server.call_tool("TaskOutput", {"task_id": task_id})
    await server.close()
    return [tool_results(fake, request)[0] for request in range(1, len(steps) + 1)]


def nested_repository_with_fsmonitor(scene: Scene, marker: Path) -> None:
    sub = scene.work / "sub"
    sub.mkdir()
    git(sub, "init", "-q")
    git(sub, "config", "core.fsmonitor", f"touch {marker}; false")


@pytest.mark.parametrize("mode", ["default", "plan"])
async def test_another_repository_in_the_project_cannot_run_its_configuration(
    host_tmp: Path, fake: FakeLLM, mode: str
) -> None:
    scene = make_scene(host_tmp, fake, sandbox="off", MCP_SUBAGENTS_PERMISSION_MODE=mode)
    project_repository(scene)
    marker = scene.home / "fsmonitor-ran"
    bare_repository_with_fsmonitor(scene, marker)
    nested_repository_with_fsmonitor(scene, marker)
    attacks = [
        "git -C vendor.git status",
        "cd vendor.git && git status --short",
        "cd sub && git status",
        "git -C sub diff",
    ]
    results = await run_in_background(scene, fake, *(bash(attack) for attack in attacks))
    for seen in results:
        assert seen.startswith("Error: Permission denied"), seen
    assert not marker.exists()


@pytest.mark.parametrize("mode", ["default", "plan"])
async def test_git_options_that_run_a_program_do_not_run_unasked(host_tmp: Path, fake: FakeLLM, mode: str) -> None:
    scene = make_scene(host_tmp, fake, sandbox="off", MCP_SUBAGENTS_PERMISSION_MODE=mode)
    project_repository(scene)
    marker = scene.home / "program-ran"
    attacks = [
        f"git grep -O'touch {marker}' spot",
        f"git grep -nO'touch {marker}' spot",
        f"git grep --open='touch {marker}' spot",
        f"git -c core.pager='touch {marker}' -p log",
        f"GIT_PAGER='touch {marker}' git -p log",
    ]
    results = await run_in_background(scene, fake, *(bash(attack) for attack in attacks))
    for seen in results:
        assert seen.startswith("Error: Permission denied"), seen
    assert not marker.exists()


async def test_a_planted_link_to_the_ssh_folder_is_not_followed_unasked(host_tmp: Path, fake: FakeLLM) -> None:
    scene = make_scene(host_tmp, fake, sandbox="off")
    (scene.home / ".ssh").mkdir()
    (scene.home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY----- KEYMATERIAL\n")
    (scene.work / "docs").symlink_to(scene.home / ".ssh")
    attacks = ["grep -R OPENSSH .", "grep -rR OPENSSH", "find -L . -name 'id_*'", "find . -follow -name 'id_*'",
               "ls -RL", "du -L -a .", "diff -r docs /dev/null", "diff docs ."]  # fmt: skip
    results = await run_in_background(scene, fake, *(bash(attack) for attack in attacks))
    for seen in results:
        assert seen.startswith("Error: Permission denied"), seen
        assert "KEYMATERIAL" not in seen and "id_ed25519" not in seen


async def test_ordinary_reads_still_run_unasked(host_tmp: Path, fake: FakeLLM) -> None:
    scene = make_scene(host_tmp, fake, sandbox="off")
    project_repository(scene)
    commands = ["ls", "git status --short", "cat notes.txt", "grep -n spot notes.txt", "git log -5 --oneline",
                "grep -rn spot .", "find . -name '*.txt'"]  # fmt: skip
    results = await run_in_background(scene, fake, *(bash(command) for command in commands))
    for command, seen in zip(commands, results, strict=True):
        assert not seen.startswith("Error"), (command, seen)
    assert "notes.txt" in results[0] and "x marks the spot" in results[2]
