"""Hooks and an agent's MCP server under a real `mcp-subagents serve` over stdio: whatever they print stays off the
protocol stream, in both protocol eras."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.fakes.fake_llm import FakeLLM, text, tool_use, turn
from tests.processes import wait_until_gone
from tests.support import MODES, TESTS, matched, server_environment, text_of, write_agent

from .scripts import group, handler, script

pytestmark = pytest.mark.anyio

ECHO_SERVER = TESTS / "fakes" / "mcp_echo_server.py"


@pytest.mark.parametrize("mode", MODES)
async def test_noisy_hooks_and_an_agent_server_leave_the_stdio_protocol_intact(
    tmp_path: Path, fake: FakeLLM, mode: str
) -> None:
    log = tmp_path / "echo.log"
    noisy = script(tmp_path / "hooks", "noisy.sh", "cat > /dev/null; echo 'NOT JSON-RPC'; echo 'to stderr' >&2")
    claude = tmp_path / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text(json.dumps({"permissions": {"allow": ["mcp__echosrv"]}}), "utf-8")
    server = {"command": sys.executable, "args": [str(ECHO_SERVER)], "env": {"ECHO_LOG": str(log)}}
    hooks = {"PreToolUse": [group(handler(noisy))], "PostToolUse": [group(handler(noisy))]}
    write_agent(
        claude / "agents",
        "shouter",
        extra=f"hooks: {json.dumps(hooks)}\nmcpServers: {json.dumps([{'echosrv': server}])}\n",
    )
    fake.push(turn(tool_use("mcp__echosrv__shout", {"text": "over stdio"})), turn(text("shouted")))
    environ = server_environment(tmp_path, fake=fake, work=tmp_path, path=os.environ["PATH"])
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_subagents", "serve"], env=environ)
    task = {"description": "shout", "prompt": "Shout.", "subagent_type": "shouter"}
    with anyio.fail_after(60):
        async with Client(params, mode=mode) as client:
            body = text_of(await client.call_tool("Task", task))
            tools = await client.list_tools()
    # The echo server writes its log in the project: the one change listed (the state directory's files are not).
    assert '<task_result agent="shouter">shouted\n[Files the task changed (1) under ' in body
    assert body.split("</task_result>")[0].endswith("\nmodified echo.log]")
    assert [tool.name for tool in tools.tools] == ["Task", "TaskOutput", "TaskStop"]
    tool_result = fake.requests[1]["body"]["messages"][-1]["content"][0]
    assert "SHOUTED:OVER STDIO" in json.dumps(tool_result)
    await wait_until_gone(int(matched(r"started pid=(\d+)", log.read_text(encoding="utf-8"))))
