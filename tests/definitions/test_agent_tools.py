"""Tool names in an agent's `tools` line, as Claude Code 2.1.328 reads them: exact case, commas or spaces between
names, and an agent whose list resolves to no tool at all refused with every entry named (as Claude Code refuses
it). Through the host's `Task` call, `agents list` and `agents validate`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_subagents.cli import main
from mcp_subagents.models.scripted import ScriptedModel, text
from tests.support import MODES, connected, make_settings, text_of, write_agent

pytestmark = pytest.mark.anyio

TASK = {"description": "look", "prompt": "Look around."}


def agents_dir(tmp_path: Path) -> Path:
    return tmp_path / "work" / ".claude" / "agents"


@pytest.mark.parametrize("mode", MODES)
async def test_a_task_for_an_agent_whose_tools_are_all_misspelt_is_refused_naming_them(
    tmp_path: Path, mode: str
) -> None:
    path = write_agent(agents_dir(tmp_path), "lower", extra="tools: read, grep, bash\n")
    model = ScriptedModel([text("never")])
    async with connected(make_settings(tmp_path), mode=mode, model=model) as client:
        result = await client.call_tool("Task", {**TASK, "subagent_type": "lower"})
    assert result.is_error
    assert text_of(result) == (
        "<task_error agent=\"lower\">Agent 'lower' was not started: none of the tools its `tools` line lists exists "
        "here, so it would run with no tools at all ('read': tool names are case-sensitive: did you mean 'Read'?; "
        "'grep': tool names are case-sensitive: did you mean 'Grep'?; 'bash': tool names are case-sensitive: did you "
        f"mean 'Bash'?). Fix the `tools` line in {path}, or choose another subagent_type.</task_error>"
    )
    assert model.requests == []  # refused before any task started
    assert not (tmp_path / "state" / "tasks").exists() or not any((tmp_path / "state" / "tasks").iterdir())


async def test_an_agent_with_only_an_mcp_tool_is_refused_naming_the_server(tmp_path: Path) -> None:
    write_agent(agents_dir(tmp_path), "imager", extra="tools: mcp__meigen__generate_image\n")
    async with connected(make_settings(tmp_path), model=ScriptedModel([text("never")])) as client:
        result = await client.call_tool("Task", {**TASK, "subagent_type": "imager"})
    assert result.is_error
    assert "'mcp__meigen__generate_image': it needs an MCP server named 'meigen'" in text_of(result)


async def test_misspelt_entries_are_left_out_while_others_give_tools(tmp_path: Path) -> None:
    write_agent(agents_dir(tmp_path), "mixed", extra="tools: Read, grep\n")
    model = ScriptedModel([text("done")])
    async with connected(make_settings(tmp_path), model=model) as client:
        result = await client.call_tool("Task", {**TASK, "subagent_type": "mixed"})
    assert not result.is_error, text_of(result)
    assert [tool.name for tool in model.requests[0].tools] == ["Read"]  # as Claude Code runs it: Read only


async def test_names_separated_by_spaces_are_split_as_claude_code_splits_them(tmp_path: Path) -> None:
    write_agent(agents_dir(tmp_path), "spaced", extra="tools: Read Grep Bash(git log --oneline)\n")
    model = ScriptedModel([text("done")])
    async with connected(make_settings(tmp_path), model=model) as client:
        result = await client.call_tool("Task", {**TASK, "subagent_type": "spaced"})
    assert not result.is_error, text_of(result)
    assert [tool.name for tool in model.requests[0].tools] == ["Read", "Grep", "Bash"]


@pytest.mark.parametrize("fields", ["tools: []\n", "tools: Read\ndisallowedTools: Read\n"])
async def test_an_agent_without_tools_on_purpose_still_runs(tmp_path: Path, fields: str) -> None:
    write_agent(agents_dir(tmp_path), "bare", extra=fields)
    model = ScriptedModel([text("thought about it")])
    async with connected(make_settings(tmp_path), model=model) as client:
        result = await client.call_tool("Task", {**TASK, "subagent_type": "bare"})
    assert not result.is_error and "thought about it" in text_of(result)
    assert model.requests[0].tools == ()


async def test_a_skill_only_agent_without_skills_fails_naming_the_reason(tmp_path: Path) -> None:
    write_agent(agents_dir(tmp_path), "skilled", extra="tools: Skill\n")
    async with connected(make_settings(tmp_path), model=ScriptedModel([text("never")])) as client:
        result = await client.call_tool("Task", {**TASK, "subagent_type": "skilled"})
    assert result.is_error
    assert "'Skill': no skills are installed for it to load" in text_of(result)


def test_agents_list_marks_an_agent_left_without_tools(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "agents"
    write_agent(folder, "lower", extra="tools: read, grep, bash\n")
    write_agent(folder, "fine", extra="tools: Read, grep\n")
    source = ["--agents-dir", str(folder), "--cwd", str(tmp_path)]
    main(["agents", "list", *source])
    listing = capsys.readouterr().out
    assert "lower  [flag]  model: inherit  tools: read, grep, bash  [NO USABLE TOOLS: Task refuses it]" in listing
    assert (
        "    problem: none of the tools its `tools` line lists exists here, so it would run with no tools at all "
        "('read': tool names are case-sensitive: did you mean 'Read'?;" in listing
    )
    assert "fine  [flag]  model: inherit  tools: Read, grep\n" in listing
    main(["agents", "list", "--json", *source])
    by_name = {agent["name"]: agent for agent in json.loads(capsys.readouterr().out)["agents"]}
    assert by_name["lower"]["problem"].startswith("none of the tools its `tools` line lists exists here")
    assert by_name["fine"]["problem"] is None


def test_agents_validate_fails_for_an_agent_left_without_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_agent(tmp_path / "agents", "lower", extra="tools: read, grep, bash\n")
    with pytest.raises(SystemExit) as exited:
        main(["agents", "validate", str(path)])
    assert exited.value.code == 1
    out, err = capsys.readouterr()
    assert f"{path}: warning: unknown tool 'read' (tool names are case-sensitive: did you mean 'Read'?)" in out
    assert f"{path}: none of the tools its `tools` line lists exists here" in out
    assert "Task refuses to start this agent" in out
    assert "1 file(s) failed" in err


def test_agents_validate_names_the_server_an_mcp_tool_needs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_agent(
        tmp_path / "agents", "gh", extra="tools: Read, mcp__github__create_issue\nmcpServers: [github]\n"
    )
    with pytest.raises(SystemExit) as exited:
        main(["agents", "validate", str(path)])
    assert exited.value.code == 0  # a warning: Read is left
    out = capsys.readouterr().out
    assert (
        f"{path}: warning: tool 'mcp__github__create_issue' must be offered by the agent's MCP server 'github' when "
        "it starts"
    ) in out
