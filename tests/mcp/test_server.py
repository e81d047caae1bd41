from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import ScriptedModel, text, tool_call
from tests.support import MODES, connected, last_results, make_settings, running_app, text_of, user_message, write_agent

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("mode", MODES)]

TASK = {"description": "find things", "prompt": "Find the thing.", "subagent_type": "general-purpose"}


async def test_lists_exactly_the_three_tools_with_the_contract_schemas(tmp_path: Path, mode: str) -> None:
    async with connected(make_settings(tmp_path), mode=mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert list(tools) == ["Task", "TaskOutput", "TaskStop"]
    task = tools["Task"].input_schema
    assert task["required"] == ["description", "prompt"]  # no subagent_type: general-purpose, as in Claude Code
    assert set(task["properties"]) == {
        "description",
        "prompt",
        "subagent_type",
        "model",
        "resume",
        "run_in_background",
        "max_turns",
        "effort",
        "isolation",
    }
    assert task["properties"]["isolation"]["enum"] == ["worktree"]
    assert set(task["properties"]["subagent_type"]["enum"]) >= {"general-purpose", "Explore", "Plan", "Bash"}
    assert task["properties"]["model"]["enum"] == ["sonnet", "opus", "haiku", "fable"]
    assert task["additionalProperties"] is False
    output = tools["TaskOutput"].input_schema["properties"]
    assert output["block"]["default"] is True
    assert (output["timeout"]["default"], output["timeout"]["maximum"]) == (30000, 600000)
    assert tools["TaskOutput"].annotations is not None and tools["TaskOutput"].annotations.read_only_hint is True
    assert set(tools["TaskStop"].input_schema["properties"]) == {"task_id", "shell_id"}
    description = tools["Task"].description or ""
    assert "- Explore: " in description and "(Tools: All tools except Agent, Write, Edit" in description
    assert "- Bash: " in description and "(Tools: Bash)" in description


async def test_the_agent_enum_follows_the_catalog_rescans(tmp_path: Path, mode: str) -> None:
    """tools/list reads no file: the watcher's rescan (here called directly) is what brings a new agent in."""
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    async with running_app(settings) as app, Client(build_server(app), mode=mode) as client:
        before = (await client.list_tools()).tools[0].input_schema["properties"]["subagent_type"]["enum"]
        write_agent(settings.cwd / ".claude" / "agents", "reviewer", description="Reviews code")
        unscanned = (await client.list_tools()).tools[0].input_schema["properties"]["subagent_type"]["enum"]
        await app.refresh_catalog()
        after = (await client.list_tools()).tools[0]
    assert "reviewer" not in before and unscanned == before
    assert "reviewer" in after.input_schema["properties"]["subagent_type"]["enum"]
    assert "- reviewer: Reviews code (Tools: All tools)" in (after.description or "")


async def test_denied_agents_leave_the_enum(tmp_path: Path, mode: str) -> None:
    settings_file = tmp_path / "settings.json"
    settings_file.write_text('{"permissions": {"deny": ["Task(Explore)", "Agent(Plan)"]}}', encoding="utf-8")
    async with connected(make_settings(tmp_path, settings_file=settings_file), mode=mode) as client:
        enum = (await client.list_tools()).tools[0].input_schema["properties"]["subagent_type"]["enum"]
    assert "Explore" not in enum and "Plan" not in enum and "general-purpose" in enum


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"description": "d", "subagent_type": "Explore"}, "missing required parameter 'prompt'"),
        ({**TASK, "subagent_type": "nope"}, "Agent type 'nope' not found. Available agents: "),
        ({**TASK, "model": "gpt-9"}, "'model' must be one of: sonnet, opus, haiku, fable"),
        ({**TASK, "colour": "red"}, "unknown parameter(s) 'colour'"),
        ({**TASK, "max_turns": 0}, "'max_turns'"),
        ({**TASK, "run_in_background": "yes"}, "'run_in_background' must be of type boolean"),
    ],
)
async def test_bad_task_arguments_say_what_is_wrong(
    tmp_path: Path, mode: str, arguments: dict[str, object], expected: str
) -> None:
    async with connected(make_settings(tmp_path), mode=mode, model=ScriptedModel()) as client:
        result = await client.call_tool("Task", arguments)
        again = await client.list_tools()  # the server keeps serving
    assert result.is_error
    assert expected in text_of(result)
    assert len(again.tools) == 3


async def test_unknown_agent_lists_the_available_ones(tmp_path: Path, mode: str) -> None:
    async with connected(make_settings(tmp_path), mode=mode, model=ScriptedModel()) as client:
        result = await client.call_tool("Task", {**TASK, "subagent_type": "nope"})
    assert "Explore" in text_of(result) and "general-purpose" in text_of(result)


async def test_without_a_provider_task_says_which_variable_to_set(tmp_path: Path, mode: str) -> None:
    async with connected(make_settings(tmp_path), mode=mode, environ={}) as client:
        result = await client.call_tool("Task", {**TASK, "subagent_type": "Explore"})
    assert result.is_error
    body = text_of(result)
    assert body.startswith('<task_error agent="Explore">') and body.endswith("</task_error>")
    assert "ANTHROPIC_API_KEY" in body and "OPENAI_BASE_URL" in body


async def test_task_runs_a_subagent_and_returns_its_result(tmp_path: Path, mode: str) -> None:
    model = ScriptedModel([text("the thing is in a.py")])
    async with connected(make_settings(tmp_path), mode=mode, model=model) as client:
        result = await client.call_tool("Task", TASK)
    assert not result.is_error
    body = text_of(result)
    assert body.startswith('<task_result agent="general-purpose">the thing is in a.py</task_result>')
    assert "turns: 1" in body and "tool_uses: 0" in body
    assert user_message(model.requests[0]).content == "Find the thing."


async def test_task_reads_a_real_file_through_the_read_tool(tmp_path: Path, mode: str) -> None:
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    target = settings.cwd / "notes.txt"
    target.write_text("the answer is 42\n", encoding="utf-8")

    def answer(request: ModelRequest) -> ModelResponse:
        result = last_results(request)[0]
        assert not result.is_error, result.content
        return text(f"file says: {result.content.strip()}")

    model = ScriptedModel([tool_call("Read", {"file_path": str(target)}), answer])
    async with connected(settings, mode=mode, model=model) as client:
        result = await client.call_tool("Task", TASK)
    body = text_of(result)
    assert not result.is_error, body
    assert "file says:" in body and "the answer is 42" in body
    assert "tool_uses: 1" in body and "turns: 2" in body


async def test_task_model_errors_become_task_errors(tmp_path: Path, mode: str) -> None:
    from mcp_subagents.core.errors import ModelAPIError

    model = ScriptedModel([ModelAPIError("Anthropic API error 529 overloaded_error: Overloaded")])
    async with connected(make_settings(tmp_path), mode=mode, model=model) as client:
        result = await client.call_tool("Task", TASK)
        still = await client.list_tools()
    assert result.is_error
    assert text_of(result).startswith('<task_error agent="general-purpose">Anthropic API error 529')
    assert len(still.tools) == 3


async def test_task_output_and_stop_with_unknown_ids(tmp_path: Path, mode: str) -> None:
    async with connected(make_settings(tmp_path), mode=mode) as client:
        output = await client.call_tool("TaskOutput", {"task_id": "zzz"})
        stop = await client.call_tool("TaskStop", {"task_id": "zzz"})
        missing = await client.call_tool("TaskStop", {})
        alias = await client.call_tool("TaskStop", {"shell_id": "yyy"})
        bad_timeout = await client.call_tool("TaskOutput", {"task_id": "x", "timeout": 700000})
    assert output.is_error and text_of(output) == "No task found with ID: zzz"
    assert stop.is_error and text_of(stop) == "No task found with ID: zzz"
    assert missing.is_error and text_of(missing) == "Missing required parameter: task_id"
    assert alias.is_error and text_of(alias) == "No task found with ID: yyy"
    assert bad_timeout.is_error and "'timeout'" in text_of(bad_timeout)


async def test_max_turns_is_the_smallest_of_task_definition_and_server(tmp_path: Path, mode: str) -> None:
    settings = make_settings(tmp_path, max_turns=5)
    assert settings.cwd is not None
    write_agent(settings.cwd / ".claude" / "agents", "looper", extra="maxTurns: 3\n")
    steps = [tool_call("Glob", {"pattern": "*"}, say=f"step {i}") for i in range(5)]
    model = ScriptedModel(steps)
    async with connected(settings, mode=mode, model=model) as client:
        capped_by_definition = await client.call_tool("Task", {**TASK, "subagent_type": "looper"})
        capped_by_task = await client.call_tool("Task", {**TASK, "subagent_type": "looper", "max_turns": 1})
    assert "turns: 3" in text_of(capped_by_definition)
    assert "Stopped at the turn limit (3 turns)" in text_of(capped_by_definition)
    assert "turns: 1" in text_of(capped_by_task)
    assert not capped_by_definition.is_error


async def test_a_task_without_subagent_type_runs_general_purpose(tmp_path: Path, mode: str) -> None:
    async with connected(make_settings(tmp_path), mode=mode, model=ScriptedModel([text("done")])) as client:
        result = await client.call_tool("Task", {"description": "d", "prompt": "p"})
    assert not result.is_error
    assert 'agent="general-purpose"' in text_of(result)


async def test_an_agent_file_that_failed_to_load_is_named_in_not_found(tmp_path: Path, mode: str) -> None:
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    broken = settings.cwd / ".claude" / "agents" / "nodesc.md"
    broken.parent.mkdir(parents=True)
    broken.write_text("---\nname: nodesc\n---\nNo description.\n", encoding="utf-8")
    async with connected(settings, mode=mode) as client:
        result = await client.call_tool("Task", {**TASK, "subagent_type": "nodesc"})
    text = text_of(result)
    assert result.is_error and "Agent type 'nodesc' not found" in text
    assert str(broken) in text and "missing required field 'description'" in text
