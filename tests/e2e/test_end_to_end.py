"""Task through MCP with the real provider SDKs talking HTTP to the fake LLM server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.fakes.fake_llm import FakeLLM, text, tool_use, turn
from tests.support import MODES, connected, make_settings, provider_environment, server_environment, text_of

pytestmark = pytest.mark.anyio

SECRET = "sk-test-secret-0123456789"
TASK = {"description": "read notes", "prompt": "What do the notes say?", "subagent_type": "general-purpose"}


@pytest.mark.parametrize("mode", MODES)
async def test_task_reads_a_file_via_the_anthropic_api(tmp_path: Path, fake: FakeLLM, mode: str) -> None:
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    notes = settings.cwd / "notes.txt"
    notes.write_text("remember the milk\n", encoding="utf-8")
    fake.push(
        turn(
            text("Reading."),
            tool_use("Read", {"file_path": str(notes)}),
            input_tokens=50,
            output_tokens=10,
            cache_write=1000,
        ),
        turn(text("The notes say: remember the milk."), input_tokens=20, output_tokens=12, cache_read=1000),
    )
    environ = provider_environment(fake, SECRET)
    async with connected(settings, mode=mode, environ=environ) as client:
        result = await client.call_tool("Task", TASK)
    body = text_of(result)
    assert not result.is_error, body
    assert body.startswith('<task_result agent="general-purpose">The notes say: remember the milk.</task_result>')
    for figure in (
        "turns: 2",
        "tool_uses: 1",
        "input_tokens: 70",
        "output_tokens: 22",
        "cache_creation_tokens: 1000",
        "cache_read_tokens: 1000",
    ):
        assert figure in body

    first, second = (request["body"] for request in fake.requests)
    assert first["model"] == "claude-sonnet-5-5"
    assert first["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "general-purpose subagent" in first["system"][0]["text"]
    assert f"Working directory: {settings.cwd}" in first["system"][0]["text"]
    assert first["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert {tool["name"] for tool in first["tools"]} == {
        "Read",
        "Write",
        "Edit",
        "Glob",
        "Grep",
        "Bash",
        "WebFetch",
        "WebSearch",
        "TodoWrite",
        "Agent",  # no `tools` field: all tools, the nested Agent tool included, as in Claude Code
    }
    tool_result = second["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result" and "remember the milk" in json.dumps(tool_result["content"])
    assert second["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert fake.requests[0]["headers"]["x-api-key"] == SECRET
    assert "authorization" not in fake.requests[0]["headers"]


async def test_definition_model_and_task_model_pick_the_model_id(tmp_path: Path, fake: FakeLLM) -> None:
    fake.push(turn(text("a")), turn(text("b")))
    environ = provider_environment(fake, SECRET)
    async with connected(make_settings(tmp_path), environ=environ) as client:
        await client.call_tool("Task", {**TASK, "subagent_type": "Explore"})
        await client.call_tool("Task", {**TASK, "subagent_type": "Explore", "model": "opus"})
    assert [r["body"]["model"] for r in fake.requests] == ["claude-haiku-5-5", "claude-opus-5-5"]


async def test_task_runs_on_an_openai_compatible_endpoint(tmp_path: Path, fake: FakeLLM) -> None:
    settings = make_settings(tmp_path, model="qwen3:8b")
    assert settings.cwd is not None
    (settings.cwd / "a.py").write_text("print('hi')\n", encoding="utf-8")
    fake.push(turn(tool_use("Glob", {"pattern": "*.py"})), turn(text("There is a.py.")))
    async with connected(settings, environ={"OPENAI_BASE_URL": f"{fake.url}/v1"}) as client:
        result = await client.call_tool("Task", {**TASK, "subagent_type": "Explore"})
    assert not result.is_error, text_of(result)
    assert "There is a.py." in text_of(result)
    assert fake.requests[0]["path"] == "/v1/chat/completions"
    assert fake.requests[0]["body"]["model"] == "qwen3:8b"  # Explore's "haiku" alias means nothing to this endpoint
    tool_message = fake.requests[1]["body"]["messages"][-1]
    assert tool_message["role"] == "tool" and "a.py" in tool_message["content"]


async def test_provider_failure_is_a_task_error_and_the_server_keeps_serving(tmp_path: Path, fake: FakeLLM) -> None:
    from tests.fakes.fake_llm import error

    fake.push(*[error(529, message="Overloaded", headers={"retry-after-ms": "1"})] * 3, turn(text("fine now")))
    environ = provider_environment(fake, SECRET)
    async with connected(make_settings(tmp_path, max_retries=2), environ=environ) as client:
        failed = await client.call_tool("Task", TASK)
        recovered = await client.call_tool("Task", TASK)
    assert failed.is_error
    assert text_of(failed).startswith('<task_error agent="general-purpose">')
    assert "529" in text_of(failed) and "Overloaded" in text_of(failed) and SECRET not in text_of(failed)
    assert "fine now" in text_of(recovered)


async def test_long_results_are_cut_and_point_at_the_output_file(tmp_path: Path, fake: FakeLLM) -> None:
    fake.push(turn(text("x" * 500)))
    environ = provider_environment(fake, SECRET)
    async with connected(make_settings(tmp_path, max_result_chars=100), environ=environ) as client:
        result = await client.call_tool("Task", TASK)
    body = text_of(result)
    assert "x" * 100 + "\n" in body and "x" * 101 not in body
    assert "showing 100 of 500 characters" in body and ".output" in body


@pytest.mark.parametrize("mode", MODES)
async def test_stdio_server_runs_bash_without_leaking_the_api_key(tmp_path: Path, fake: FakeLLM, mode: str) -> None:
    settings_file = tmp_path / "settings.json"
    settings_file.write_text('{"permissions": {"allow": ["Bash"]}}', encoding="utf-8")
    # The output differs from the command text, so only a command that really ran can produce it.
    command = "printf 'out-%s\\n' stdout; printf 'err-%s\\n' stderr >&2; printf '%s\\n' \"$(env)\""
    fake.push(turn(tool_use("Bash", {"command": command})), turn(text("ran it")))
    environ = server_environment(
        tmp_path, fake=fake, key=SECRET, work=tmp_path / "work", MCP_SUBAGENTS_SETTINGS=str(settings_file)
    )
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_subagents", "serve"], env=environ)
    with anyio.fail_after(60):
        async with Client(params, mode=mode) as client:
            result = await client.call_tool("Task", {**TASK, "subagent_type": "Bash"})
    assert not result.is_error, text_of(result)
    assert "ran it" in text_of(result)
    tool_result = fake.requests[1]["body"]["messages"][-1]["content"][0]
    assert tool_result.get("is_error") is not True, tool_result
    bash_output = json.dumps(tool_result)
    assert "out-stdout" in bash_output and "err-stderr" in bash_output
    assert f"HOME={tmp_path}" in bash_output  # the environment really was printed
    assert SECRET not in bash_output and "ANTHROPIC_API_KEY" not in bash_output
    for written in (tmp_path / "state").rglob("*"):
        if written.is_file():
            assert SECRET not in written.read_text(encoding="utf-8", errors="replace")
