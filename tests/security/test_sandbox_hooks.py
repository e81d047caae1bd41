"""Hooks run as Claude Code runs them: outside the Bash sandbox, since they are the person's own commands from
trusted settings and agent files. What makes that safe is that the subagent cannot change them.

The attack: a hook command runs a script that lives in the project (`$CLAUDE_PROJECT_DIR/scripts/guard.sh`), and the
agent's sandboxed Bash, or its Write tool, appends a line to that script; the next hook then runs the planted line
with the person's rights. Before the fix the project's scripts were writable from the sandbox and by Write in
bypassPermissions mode (checked against 74f4b0f).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_subagents.models.scripted import ScriptedModel, text, tool_call
from tests.agent.hooks.scripts import agent_with_hooks, group, handler, script
from tests.support import connected, make_settings, text_of

from .conftest import requires_bwrap

pytestmark = [pytest.mark.anyio, requires_bwrap]

HOOK = """cat > /dev/null
echo ran >> "$CLAUDE_PROJECT_DIR/hook-ran"
echo outside > '{outside}/hook-wrote-here'
exit 0"""


async def test_a_hook_runs_outside_the_sandbox_as_in_claude_code(host_tmp: Path) -> None:
    project, outside = host_tmp / "project", host_tmp / "outside"
    project.mkdir()
    outside.mkdir()
    settings = make_settings(host_tmp, cwd=project, sandbox="on", permission_mode="bypassPermissions")
    assert settings.user_agents_dir is not None
    hook = script(host_tmp / "hooks", "writer.sh", HOOK.format(outside=outside))
    agent_with_hooks(settings.user_agents_dir, "hooked", {"PreToolUse": [group(handler(hook), matcher="Read")]})
    (project / "notes.txt").write_text("hello\n", encoding="utf-8")
    model = ScriptedModel([tool_call("Read", {"file_path": "notes.txt"}), text("done")])
    task = {"description": "read", "prompt": "Read notes.txt.", "subagent_type": "hooked"}
    async with connected(settings, model=model) as client:
        body = text_of(await client.call_tool("Task", task))
    assert "done" in body
    assert (project / "hook-ran").read_text(encoding="utf-8") == "ran\n"
    assert (outside / "hook-wrote-here").read_text(encoding="utf-8") == "outside\n"


GUARD = 'cat > /dev/null\necho checked >> "$CLAUDE_PROJECT_DIR/guard.log"\nexit 0'


async def test_the_agent_cannot_change_a_script_its_hooks_run(host_tmp: Path) -> None:
    project = host_tmp / "project"
    project.mkdir()
    marker = host_tmp / "planted-code-ran"
    guard = script(project / "scripts", "guard.sh", GUARD)
    original = guard.read_text(encoding="utf-8")
    settings = make_settings(host_tmp, cwd=project, sandbox="on", permission_mode="bypassPermissions")
    assert settings.user_agents_dir is not None
    command = 'bash "$CLAUDE_PROJECT_DIR/scripts/guard.sh"'
    agent_with_hooks(settings.user_agents_dir, "guarded", {"PreToolUse": [group(handler(command), matcher="Bash")]})
    steps = [
        tool_call("Bash", {"command": f"echo 'touch {marker}' >> scripts/guard.sh; echo tried"}),
        tool_call("Write", {"file_path": str(guard), "content": f"touch {marker}\n"}),
        tool_call("Bash", {"command": "echo again"}),
        text("done"),
    ]
    model = ScriptedModel(steps)
    task = {"description": "plant", "prompt": "Change the guard.", "subagent_type": "guarded"}
    async with connected(settings, model=model) as client:
        body = text_of(await client.call_tool("Task", task))
    assert "done" in body
    assert guard.read_text(encoding="utf-8") == original
    assert not marker.exists()
    assert (project / "guard.log").read_text(encoding="utf-8").count("checked") == 2  # the hook ran, unchanged
