"""Attack on the rename of the nested launching tool (`Task` -> `Agent`, as in Claude Code 2.1.328): a guard that
names the old `Task` in a hook matcher, or in `disallowedTools`, must keep stopping nested launches. Otherwise the
rename would silently switch off a person's guard, and an agent could hand its work to another one unchecked."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel, text, tool_call
from tests.agent.hooks.scripts import group, handler, script, settings_with_hooks
from tests.support import connected, last_results, make_settings, text_of, write_agent

pytestmark = pytest.mark.anyio

LAUNCH = {"description": "pass it on", "prompt": "CHILD: do the work.", "subagent_type": "general-purpose"}


def lead_then_report(request: ModelRequest) -> ModelResponse:
    if "CHILD" in str(request.messages[0]):
        return text("CHILD RAN")
    if len(request.messages) == 1:
        return tool_call("Agent", LAUNCH)
    return text(" || ".join(result.content for result in last_results(request)))


@pytest.mark.parametrize("matcher", ["Task", "Agent", "Task|Agent"])
async def test_a_pretooluse_guard_on_either_name_blocks_the_nested_agent_tool(tmp_path: Path, matcher: str) -> None:
    settings = make_settings(tmp_path)
    assert settings.user_settings_file is not None
    guard = script(tmp_path / "hooks", "guard.sh", "cat > /dev/null; echo 'no delegating here' >&2; exit 2")
    settings_with_hooks(settings.user_settings_file, {"PreToolUse": [group(handler(guard), matcher=matcher)]})
    async with connected(settings, model=FunctionModel(lead_then_report)) as client:
        body = text_of(await client.call_tool("Task", {**LAUNCH, "prompt": "Lead."}))
    assert "no delegating here" in body and "CHILD RAN" not in body


async def test_disallowed_tools_task_still_withholds_the_agent_tool(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    assert settings.user_agents_dir is not None
    write_agent(settings.user_agents_dir, "solo", extra="disallowedTools: Task\n")
    seen: list[list[str]] = []

    def respond(request: ModelRequest) -> ModelResponse:
        seen.append([tool.name for tool in request.tools])
        return lead_then_report(request)

    async with connected(settings, model=FunctionModel(respond)) as client:
        body = text_of(await client.call_tool("Task", {**LAUNCH, "prompt": "Lead.", "subagent_type": "solo"}))
    assert "Agent" not in seen[0] and "Task" not in seen[0]
    assert "CHILD RAN" not in body and "no tool named 'Agent'" in body
