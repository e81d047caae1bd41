"""An agent's MCP servers for the length of its run: started together when it starts, their tools offered as
`mcp__<server>__<tool>`, and stopped when it ends, is stopped, or the server shuts down.

Each server is held open by a task of its own (an MCP client must be closed by the task that opened it); a stdio
server runs in its own process group, which ends whole when the connection closes (`stdio`). A server that
fails to start, or dies while the agent runs, costs the agent that server's tools, never the run.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, cast

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from pydantic import ConfigDict

from ...config.settings import AGENT_SERVER_MARKER
from ...core.errors import ToolError
from ...tools.base import Tool, ToolAnswer, ToolContext, ToolInput
from .config import HttpServer, ServerConfig, StdioServer, tool_name
from .problem import ServerProblem
from .stdio import stdio_transport

logger = logging.getLogger(__name__)

STDERR_TAIL_LINES = 5


class McpArguments(ToolInput):
    """Whatever the model passes: the MCP server checks its own tools' arguments."""

    model_config = ConfigDict(extra="allow")


@dataclass(slots=True)
class Toolbox:
    tools: dict[str, Tool] = field(default_factory=lambda: {})
    problems: list[ServerProblem] = field(default_factory=lambda: [])
    """Servers that did not start, and why."""


@dataclass(eq=False, slots=True)
class _Connection:
    config: ServerConfig
    client: Client | None = None
    ready: anyio.Event = field(default_factory=anyio.Event)
    close: anyio.Event = field(default_factory=anyio.Event)
    tools: list[types.Tool] = field(default_factory=lambda: [])
    failure: str | None = None
    stderr_path: Path | None = None


@asynccontextmanager
async def open_toolbox(
    servers: Sequence[ServerConfig],
    *,
    cwd: Path,
    env: Mapping[str, str],
    start_timeout: float,
    log_dir: Path,
    log_prefix: str,
) -> AsyncGenerator[Toolbox]:
    """Start every server at once and wait until each has listed its tools (or failed, or run out of time)."""
    toolbox = Toolbox()
    if not servers:
        yield toolbox
        return
    connections = [_Connection(config) for config in servers]
    async with anyio.create_task_group() as group:
        for connection in connections:
            connection.stderr_path = log_dir / f"{log_prefix}.mcp-{_file_safe(connection.config.name)}.log"
            group.start_soon(_hold, connection, cwd, env, start_timeout)
        for connection in connections:
            await connection.ready.wait()
        for connection in connections:
            if connection.failure is not None or connection.client is None:
                toolbox.problems.append(ServerProblem(connection.config.name, connection.failure or "did not start"))
                continue
            for tool in connection.tools:
                made = _tool(connection, tool)
                toolbox.tools.setdefault(made.name, made)
        try:
            yield toolbox
        finally:
            for connection in connections:
                connection.close.set()


async def _hold(connection: _Connection, cwd: Path, env: Mapping[str, str], start_timeout: float) -> None:
    """Open the connection, list its tools, keep it open until the run ends; never raises (but for cancellation)."""
    name = connection.config.name
    try:
        # A deadline around the whole connection, lifted once it is up: an MCP client opens task groups of its
        # own, so no narrower scope may be left while they are open.
        with anyio.CancelScope(deadline=anyio.current_time() + start_timeout) as starting:
            async with AsyncExitStack() as stack:
                transport = await _transport(stack, connection, cwd, env)
                client = await stack.enter_async_context(Client(transport, mode="auto"))
                connection.tools = await _list_tools(client)
                starting.deadline = math.inf
                connection.client = client
                logger.info("MCP server %s started with %d tool(s)", name, len(connection.tools))
                connection.ready.set()
                await connection.close.wait()
                connection.client = None
        if starting.cancelled_caught and not connection.ready.is_set():
            connection.failure = f"did not start within {start_timeout:g} s{_stderr_tail(connection)}"
    except Exception as exc:
        reason = _describe(exc)
        if connection.ready.is_set():
            logger.warning("MCP server %s stopped while its agent ran: %s", name, reason)
            connection.failure = f"stopped while the agent ran: {reason}"
        else:
            connection.failure = f"failed to start: {reason}{_stderr_tail(connection)}"
    finally:
        connection.client = None
        connection.ready.set()
    if connection.failure is not None:
        logger.warning("MCP server %s %s", name, connection.failure)


async def _transport(
    stack: AsyncExitStack, connection: _Connection, cwd: Path, env: Mapping[str, str]
) -> AbstractAsyncContextManager[Any]:
    config = connection.config
    if isinstance(config, StdioServer):
        assert connection.stderr_path is not None
        errlog: TextIO = stack.enter_context(connection.stderr_path.open("a", encoding="utf-8"))
        return stdio_transport(
            config.command,
            config.args,
            env={**env, **config.env, AGENT_SERVER_MARKER: "1"},
            cwd=config.cwd or cwd,
            errlog=errlog,
        )
    assert isinstance(config, HttpServer)
    if config.transport == "sse":
        return sse_client(config.url, headers=dict(config.headers))
    http_client = await stack.enter_async_context(create_mcp_http_client(headers=dict(config.headers)))
    return streamable_http_client(config.url, http_client=http_client)


async def _list_tools(client: Client) -> list[types.Tool]:
    found: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(100):  # a server whose pages never end cannot hold up the run
        page = await client.list_tools(cursor=cursor)
        found += page.tools
        cursor = page.next_cursor
        if not cursor:
            break
    return found


def _tool(connection: _Connection, tool: types.Tool) -> Tool:
    server = connection.config.name
    remote = tool.name

    async def run(_ctx: ToolContext, arguments: ToolInput) -> str:
        client = connection.client
        if client is None:
            raise ToolError(f"MCP server '{server}' is not running ({connection.failure or 'it stopped'})")
        try:
            result = await client.call_tool(remote, arguments.model_dump())
        except Exception as exc:
            raise ToolError(f"MCP server '{server}' failed to run {remote}: {_describe(exc)}") from None
        text = _result_text(result)
        if result.is_error:
            raise ToolError(text or f"{remote} failed without a message")
        return ToolAnswer(text or "(no output)", lambda: _hook_response(result))

    annotations = tool.annotations
    return Tool(
        name=tool_name(server, remote),
        description=tool.description or f"{remote} from the MCP server {server}",
        input_model=McpArguments,
        run=run,
        read_only=annotations is not None and annotations.read_only_hint is True,
        schema=dict(tool.input_schema) if tool.input_schema else {"type": "object", "properties": {}},
    )


def _hook_response(result: types.CallToolResult) -> object:
    """What Claude Code 2.1.328 gives a PostToolUse hook for an MCP tool (captured): the structured content as
    compact JSON text when the server sent one, else the content blocks as the server sent them."""
    if result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
    return [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]


def _result_text(result: types.CallToolResult) -> str:
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent | types.AudioContent):
            parts.append(f"[{block.type} content ({block.mime_type}) not shown]")
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource: {block.uri}]")
        else:
            resource = block.resource
            parts.append(resource.text if isinstance(resource, types.TextResourceContents) else f"[{resource.uri}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def _describe(error: BaseException) -> str:
    leaf = _single_cause(error)
    message = str(leaf).strip()
    return f"{type(leaf).__name__}: {message}" if message else type(leaf).__name__


def _single_cause(error: BaseException) -> BaseException:
    """The one exception inside nested groups of one (task groups wrap what failed in them)."""
    if not isinstance(error, BaseExceptionGroup):
        return error
    inner: Sequence[BaseException] = cast("BaseExceptionGroup[BaseException]", error).exceptions
    return _single_cause(inner[0]) if len(inner) == 1 else cast("BaseException", error)


def _stderr_tail(connection: _Connection) -> str:
    path = connection.stderr_path
    if path is None:
        return ""
    try:
        lines = [line for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    if not lines:
        return ""
    return "; its stderr ended with: " + " | ".join(lines[-STDERR_TAIL_LINES:])


def _file_safe(name: str) -> str:
    return "".join(char if char.isalnum() or char in "-_" else "_" for char in name)[:64]
