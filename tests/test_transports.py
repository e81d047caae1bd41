"""The server as hosts run it: a stdio subprocess, and the SSE and Streamable HTTP transports on a free port."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client

from .support import MODES, text_of

pytestmark = pytest.mark.anyio

TASK = {"description": "look around", "prompt": "What is here?", "subagent_type": "Explore"}


def server_environment(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "work").mkdir(exist_ok=True)
    return {
        "HOME": str(tmp_path),
        "PATH": "/usr/bin:/bin",
        "MCP_SUBAGENTS_CWD": str(tmp_path / "work"),
        "MCP_SUBAGENTS_STATE_DIR": str(tmp_path / "state"),
    }


@pytest.mark.parametrize("mode", MODES)
async def test_stdio_subprocess_serves_the_three_tools(tmp_path: Path, mode: str) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_subagents", "serve"], env=server_environment(tmp_path)
    )
    with anyio.fail_after(30):
        async with Client(params, mode=mode) as client:  # pyright: ignore[reportArgumentType]
            tools = (await client.list_tools()).tools
            result = await client.call_tool("Task", TASK)
    assert [tool.name for tool in tools] == ["Task", "TaskOutput", "TaskStop"]
    assert result.is_error
    assert text_of(result).startswith('<task_error agent="Explore">No model provider is configured')


@asynccontextmanager
async def http_server(tmp_path: Path, transport: str, *, environ: dict[str, str] | None = None) -> AsyncGenerator[str]:
    """Start the server on a free port; yield its URL once it listens."""
    command = [sys.executable, "-m", "mcp_subagents", "serve", "--transport", transport, "--port", "0"]
    process: Process = await anyio.open_process(
        command,
        env=environ or server_environment(tmp_path),
        cwd=tmp_path,  # without --cwd the process's folder is the project: never the checkout
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    assert process.stderr is not None
    stderr = TextReceiveStream(process.stderr)
    seen = ""
    try:
        with anyio.fail_after(30):
            async for chunk in stderr:
                seen += chunk
                if match := re.search(r"listening \([\w-]+\) on (http://\S+)", seen):
                    break
            else:
                raise AssertionError(f"server exited before listening:\n{seen}")
        async with anyio.create_task_group() as group:
            group.start_soon(_drain, stderr)
            yield match.group(1)
            group.cancel_scope.cancel()
    finally:
        process.terminate()
        with anyio.fail_after(10):
            await process.wait()


async def _drain(stream: TextReceiveStream) -> None:
    async for _ in stream:
        pass


@pytest.mark.parametrize("mode", MODES)
async def test_sse_round_trip(tmp_path: Path, mode: str) -> None:
    async with http_server(tmp_path, "sse") as url:
        assert url.endswith("/sse")
        with anyio.fail_after(30):
            async with Client(sse_client(url), mode=mode) as client:  # pyright: ignore[reportArgumentType]
                tools = (await client.list_tools()).tools
                result = await client.call_tool("TaskOutput", {"task_id": "nope"})
    assert [tool.name for tool in tools] == ["Task", "TaskOutput", "TaskStop"]
    assert text_of(result) == "No task found with ID: nope"


@pytest.mark.parametrize("mode", MODES)
async def test_streamable_http_round_trip(tmp_path: Path, mode: str) -> None:
    async with http_server(tmp_path, "streamable-http") as url:
        assert url.endswith("/mcp")
        with anyio.fail_after(30):
            async with Client(url, mode=mode) as client:  # pyright: ignore[reportArgumentType]
                tools = (await client.list_tools()).tools
                result = await client.call_tool("Task", TASK)
    assert [tool.name for tool in tools] == ["Task", "TaskOutput", "TaskStop"]
    assert "ANTHROPIC_API_KEY" in text_of(result)
