"""The server as hosts run it: a stdio subprocess, and the SSE and Streamable HTTP transports on a free port."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client

from tests.support import MODES, http_server, server_environment, text_of

pytestmark = pytest.mark.anyio

TASK = {"description": "look around", "prompt": "What is here?", "subagent_type": "Explore"}


@pytest.mark.parametrize("mode", MODES)
async def test_stdio_subprocess_serves_the_three_tools(tmp_path: Path, mode: str) -> None:
    environ = server_environment(tmp_path, work=tmp_path / "work")
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_subagents", "serve"], env=environ)
    with anyio.fail_after(30):
        async with Client(params, mode=mode) as client:
            tools = (await client.list_tools()).tools
            result = await client.call_tool("Task", TASK)
    assert [tool.name for tool in tools] == ["Task", "TaskOutput", "TaskStop"]
    assert result.is_error
    assert text_of(result).startswith('<task_error agent="Explore">No model provider is configured')


@pytest.mark.parametrize("mode", MODES)
async def test_sse_round_trip(tmp_path: Path, mode: str) -> None:
    async with http_server(tmp_path, "sse") as url:
        assert url.endswith("/sse")
        with anyio.fail_after(30):
            async with Client(sse_client(url), mode=mode) as client:
                tools = (await client.list_tools()).tools
                result = await client.call_tool("TaskOutput", {"task_id": "nope"})
    assert [tool.name for tool in tools] == ["Task", "TaskOutput", "TaskStop"]
    assert text_of(result) == "No task found with ID: nope"


@pytest.mark.parametrize("mode", MODES)
async def test_streamable_http_round_trip(tmp_path: Path, mode: str) -> None:
    async with http_server(tmp_path, "streamable-http") as url:
        assert url.endswith("/mcp")
        with anyio.fail_after(30):
            async with Client(url, mode=mode) as client:
                tools = (await client.list_tools()).tools
                result = await client.call_tool("Task", TASK)
    assert [tool.name for tool in tools] == ["Task", "TaskOutput", "TaskStop"]
    assert "ANTHROPIC_API_KEY" in text_of(result)


async def test_transport_http_is_streamable_http_as_claude_code_names_it(tmp_path: Path) -> None:
    """`claude mcp add --transport http` and the Inspector's `http`: the same word starts the same server."""
    async with http_server(tmp_path, "http") as url:
        assert url.endswith("/mcp")
        with anyio.fail_after(30):
            async with Client(url, mode=MODES[0]) as client:
                tools = (await client.list_tools()).tools
    assert [tool.name for tool in tools] == ["Task", "TaskOutput", "TaskStop"]
