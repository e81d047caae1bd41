"""Attack: write and delete through sandboxed Bash where Claude Code asks, or where the sandbox is the whole home.

Before the fix, `autoAllowBashIfSandboxed` defaulted to true: with `sandbox.enabled: true` alone a default-mode
subagent ran `echo hi > made.txt`, `touch made2.txt` and `rm -f notes.txt` unasked (deleting a tracked file), also
an agent whose file says `permissionMode: bypassPermissions` under a default server, while `Write` to the same
project asked. Measured in Claude Code 2.1.328, all three ask unless the settings say `autoAllowBashIfSandboxed:
true`. And a server started in the home directory (hosts do that) auto-allowed sandboxed Bash whose writable area
was the whole home.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.fakes.fake_llm import FakeLLM, Turn, text, turn
from tests.stdio_raw import RawStdioServer
from tests.support import write_agent

from .conftest import requires_bwrap
from .server import TASK, Scene, bash, make_scene, tool_results
from .test_sandbox_leaving_asks import project_repository

pytestmark = [pytest.mark.anyio, requires_bwrap]

WRITES = [bash("echo hi > made.txt"), bash("touch made2.txt"), bash("rm -f notes.txt")]


async def run_in_background(scene: Scene, fake: FakeLLM, *steps: Turn, agent: str = "general-purpose") -> list[str]:
    """One background Task (nobody can be asked there); what each step's tool call answered. The server's stderr
    goes to `scene.state / "server.log"`."""
    fake.push(*steps, turn(text("done")))
    scene.state.mkdir(parents=True, exist_ok=True)
    with (scene.state / "server.log").open("wb") as log:
        server = await RawStdioServer.start(scene.environ, stderr=log.fileno())
        with anyio.fail_after(60):
            result = await server.call_tool("Task", {**TASK, "subagent_type": agent, "run_in_background": True})
            task_id = result.split("task_id: ")[1].split()[0]
            await server.call_tool("TaskOutput", {"task_id": task_id})
        await server.close()
    return [tool_results(fake, request)[0] for request in range(1, len(steps) + 1)]


def assert_nothing_written(scene: Scene, results: list[str]) -> None:
    for seen in results:
        assert seen.startswith("Error: Permission denied"), seen
    assert not (scene.work / "made.txt").exists() and not (scene.work / "made2.txt").exists()
    assert (scene.work / "notes.txt").exists()


async def test_with_the_sandbox_on_writes_ask_as_in_claude_code(host_tmp: Path, fake: FakeLLM) -> None:
    scene = make_scene(host_tmp, fake)
    scene.settings({"sandbox": {"enabled": True}})
    project_repository(scene)
    results = await run_in_background(scene, fake, *WRITES, bash("cat notes.txt"))
    assert_nothing_written(scene, results[:3])
    assert "autoAllowBashIfSandboxed" in results[0] and "--sandbox auto-allow" in results[0]
    assert results[3] == "x marks the spot"  # reading still runs unasked


async def test_an_agent_file_asking_for_bypass_under_a_default_server_still_asks(host_tmp: Path, fake: FakeLLM) -> None:
    scene = make_scene(host_tmp, fake)
    project_repository(scene)
    write_agent(scene.home / ".claude" / "agents", "yolo", extra="permissionMode: bypassPermissions\n")
    results = await run_in_background(scene, fake, *WRITES, agent="yolo")
    assert_nothing_written(scene, results)


async def test_an_untrusted_project_cannot_turn_auto_allow_on(host_tmp: Path, fake: FakeLLM) -> None:
    scene = make_scene(host_tmp, fake)
    project_repository(scene)
    (scene.work / ".claude").mkdir()
    (scene.work / ".claude" / "settings.json").write_text(json.dumps({"sandbox": {"autoAllowBashIfSandboxed": True}}))
    results = await run_in_background(scene, fake, *WRITES)
    assert_nothing_written(scene, results)


@pytest.mark.parametrize("how", ["settings", "flag"])
async def test_auto_allow_from_the_settings_or_the_command_line_runs_them(
    host_tmp: Path, fake: FakeLLM, how: str
) -> None:
    scene = make_scene(host_tmp, fake, sandbox="auto-allow" if how == "flag" else "auto")
    if how == "settings":
        scene.settings({"sandbox": {"autoAllowBashIfSandboxed": True}})
    project_repository(scene)
    results = await run_in_background(scene, fake, *WRITES)
    assert not any(seen.startswith("Error") for seen in results), results
    assert (scene.work / "made.txt").exists() and not (scene.work / "notes.txt").exists()


async def test_a_server_started_in_the_home_directory_never_auto_allows(host_tmp: Path, fake: FakeLLM) -> None:
    scene = make_scene(host_tmp, fake)
    scene.settings({"sandbox": {"autoAllowBashIfSandboxed": True}})
    scene.environ["MCP_SUBAGENTS_CWD"] = str(scene.home)
    [seen] = await run_in_background(scene, fake, bash("touch made-in-home.txt"))
    assert seen.startswith("Error: Permission denied"), seen
    assert "is your home directory, so the sandbox cannot confine writes to a project" in seen
    assert "--cwd" in seen
    assert not (scene.home / "made-in-home.txt").exists()
    log = (scene.state / "server.log").read_text(encoding="utf-8")
    assert log.count("is your home directory, so the sandbox cannot confine writes to a project") == 1
