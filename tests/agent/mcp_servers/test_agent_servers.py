"""An agent's own MCP servers through the real server: a real stdio server written with the SDK and a real npm one,
started with the agent, offered as mcp__<server>__<tool>, checked by the rules, and gone after the task, after
TaskStop and after the server stops."""

from __future__ import annotations

import json
import os
import re
import socket
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_subagents.config.settings import Settings
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import ScriptedModel, text, tool_call
from tests.agent.hooks.scripts import agent_with_hooks, events, group, handler, recorder
from tests.processes import is_running, wait_until_gone
from tests.support import (
    CHECKOUT,
    MODES,
    TESTS,
    connected,
    last_results,
    make_settings,
    matched,
    text_of,
    user_message,
    write_agent,
)

pytestmark = pytest.mark.anyio

ECHO_SERVER = TESTS / "fakes" / "mcp_echo_server.py"
FILESYSTEM_SERVER = CHECKOUT / ".ci-node" / "node_modules" / ".bin" / "mcp-server-filesystem"
ALLOW_MCP = {"permissions": {"allow": ["mcp__echosrv", "mcp__files__read_text_file"]}}


def task(agent: str, **more: Any) -> dict[str, Any]:
    return {"description": "use a server", "prompt": "Go.", "subagent_type": agent, **more}


def quote_results(request: ModelRequest) -> ModelResponse:
    results = last_results(request)
    return text(" || ".join(f"{'ERR' if r.is_error else 'OK'}: {r.content}" for r in results))


def echo_server(log: Path, **more: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(ECHO_SERVER)], "env": {"ECHO_LOG": str(log)}, **more}


def server_agent(folder: Path, name: str, servers: list[Any], *, tools: str | None = None) -> Path:
    extra = f"mcpServers: {json.dumps(servers)}\n" + (f"tools: {tools}\n" if tools else "")
    return write_agent(folder, name, extra=extra)


def allow_mcp_tools(settings: Any) -> None:
    path: Path = settings.user_settings_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(ALLOW_MCP), encoding="utf-8")


def server_pid(log: Path) -> int:
    match = re.search(r"started pid=(\d+)", log.read_text(encoding="utf-8"))
    assert match, log.read_text(encoding="utf-8")
    return int(match.group(1))


@pytest.mark.parametrize("mode", MODES)
async def test_an_inline_stdio_server_runs_for_the_agents_lifetime(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "echo.log"
    settings = make_settings(tmp_path)
    assert settings.user_agents_dir is not None
    allow_mcp_tools(settings)
    server_agent(settings.user_agents_dir, "shouter", [{"echosrv": echo_server(log)}])
    model = ScriptedModel([tool_call("mcp__echosrv__shout", {"text": "hello"}), quote_results])
    async with connected(settings, mode=mode, model=model) as client:
        body = text_of(await client.call_tool("Task", task("shouter")))
        assert "OK: SHOUTED:HELLO" in body
        await wait_until_gone(server_pid(log))  # stopped when the agent ended, while the server goes on
    names = [tool.name for tool in model.requests[0].tools]
    assert {"mcp__echosrv__shout", "mcp__echosrv__spawn", "Read", "Bash"} <= set(names)
    assert "called shout(hello)" in log.read_text(encoding="utf-8")


async def test_a_post_tool_use_hook_gets_an_mcp_tools_result_as_claude_code_passes_it(tmp_path: Path) -> None:
    """Claude Code 2.1.328 (captured): a tool with structured content gives its hook that content as compact JSON
    text; `shout` returns a string, which the SDK's server also sends as `{"result": ...}`."""
    log, hook_log = tmp_path / "echo.log", tmp_path / "hooks.log"
    settings = make_settings(tmp_path)
    assert settings.user_agents_dir is not None
    allow_mcp_tools(settings)
    hook = group(handler(recorder(tmp_path / "hooks", "post.sh", hook_log)))
    extra = f"mcpServers: {json.dumps([{'echosrv': echo_server(log)}])}\n"
    agent_with_hooks(settings.user_agents_dir, "hooked", {"PostToolUse": [hook]}, extra=extra)
    model = ScriptedModel([tool_call("mcp__echosrv__shout", {"text": "hi"}), text("done")])
    async with connected(settings, model=model) as client:
        await client.call_tool("Task", task("hooked"))
    [event] = events(hook_log)
    assert event["tool_name"] == "mcp__echosrv__shout"
    assert event["tool_response"] == '{"result":"SHOUTED:HI"}'


async def test_tools_selects_a_servers_tools_by_name_or_wildcard_and_rules_check_them(tmp_path: Path) -> None:
    log = tmp_path / "echo.log"
    settings = make_settings(tmp_path)  # no allow rule: an MCP tool asks, and this host cannot be asked
    assert settings.user_agents_dir is not None
    server_agent(settings.user_agents_dir, "narrow", [{"echosrv": echo_server(log)}], tools="Read, mcp__echosrv__shout")
    server_agent(settings.user_agents_dir, "wide", [{"echosrv": echo_server(log)}], tools="mcp__echosrv__*")
    narrow = ScriptedModel([tool_call("mcp__echosrv__shout", {"text": "hi"}), quote_results])
    wide = ScriptedModel([text("looked")])
    async with connected(settings, model=narrow) as client:
        denied = text_of(await client.call_tool("Task", task("narrow")))
    async with connected(settings, model=wide) as client:
        await client.call_tool("Task", task("wide"))
    assert [tool.name for tool in narrow.requests[0].tools] == ["Read", "mcp__echosrv__shout"]
    assert sorted(tool.name for tool in wide.requests[0].tools) == [
        "mcp__echosrv__broken",
        "mcp__echosrv__environment",
        "mcp__echosrv__shout",
        "mcp__echosrv__spawn",
    ]
    assert "Permission denied" in denied and 'add "mcp__echosrv__shout" to permissions.allow' in denied
    assert "called shout" not in log.read_text(encoding="utf-8")


def _spawner(tmp_path: Path) -> tuple[Settings, ScriptedModel, Path]:
    """An agent whose MCP server starts a sleeper and writes both pids to the returned fifo, then a model that waits
    forever: the run stays busy until it is stopped."""
    log, fifo = tmp_path / "echo.log", tmp_path / "pids"
    os.mkfifo(fifo)
    never = anyio.Event()

    async def hang(_request: ModelRequest) -> ModelResponse:
        await never.wait()
        raise AssertionError("unreachable")

    settings = make_settings(tmp_path)
    assert settings.user_agents_dir is not None
    allow_mcp_tools(settings)
    server_agent(settings.user_agents_dir, "spawner", [{"echosrv": echo_server(log)}])
    return settings, ScriptedModel([tool_call("mcp__echosrv__spawn", {"fifo": str(fifo)}), hang]), fifo


async def test_task_stop_leaves_no_server_process_behind(tmp_path: Path) -> None:
    settings, model, fifo = _spawner(tmp_path)
    async with connected(settings, model=model) as client:
        launched = text_of(await client.call_tool("Task", task("spawner", run_in_background=True)))
        task_id = matched(r"task_id: (\w+)", launched)
        with anyio.fail_after(30):
            server, sleeper = map(int, (await anyio.to_thread.run_sync(fifo.read_text)).split())
        assert is_running(server) and is_running(sleeper)
        await client.call_tool("TaskStop", {"task_id": task_id})
        await wait_until_gone(server)
        await wait_until_gone(sleeper)


async def test_stopping_the_server_stops_the_agents_servers(tmp_path: Path) -> None:
    settings, model, fifo = _spawner(tmp_path)
    async with connected(settings, model=model) as client:
        await client.call_tool("Task", task("spawner", run_in_background=True))
        with anyio.fail_after(30):
            server, sleeper = map(int, (await anyio.to_thread.run_sync(fifo.read_text)).split())
    await wait_until_gone(server)
    await wait_until_gone(sleeper)


async def test_a_server_that_fails_to_start_is_named_and_the_task_runs_on(tmp_path: Path) -> None:
    log = tmp_path / "echo.log"
    settings = make_settings(tmp_path)
    assert settings.user_agents_dir is not None
    allow_mcp_tools(settings)
    broken = {"command": sys.executable, "args": ["-c", "import sys; print('no such database', file=sys.stderr)"]}
    server_agent(settings.user_agents_dir, "mixed", [{"echosrv": echo_server(log)}, {"db": broken}])
    model = ScriptedModel(
        [
            tool_call("mcp__db__query", {"sql": "select 1"}),
            tool_call("mcp__echosrv__shout", {"text": "ok"}),
            quote_results,
        ]
    )
    async with connected(settings, model=model) as client:
        body = text_of(await client.call_tool("Task", task("mixed")))
    assert not body.startswith("<task_error")
    assert "OK: SHOUTED:OK" in body
    assert '[MCP server "db" was not available to the agent: failed to start' in body
    assert "its stderr ended with: no such database" in body
    first_result = last_results(model.requests[1])[0]
    assert (
        "'mcp__db__query' is not available: the MCP server 'db' that provides it is not running" in first_result.content
    )
    opening = "\n".join(user_message(model.requests[0]).context)
    assert "- db: failed to start" in opening


async def test_servers_named_in_mcp_json_start_in_a_trusted_project_only(tmp_path: Path) -> None:
    log = tmp_path / "echo.log"
    settings = make_settings(tmp_path)
    assert settings.cwd is not None and settings.user_agents_dir is not None
    allow_mcp_tools(settings)
    (settings.cwd / ".mcp.json").write_text(json.dumps({"mcpServers": {"echosrv": echo_server(log)}}), "utf-8")
    server_agent(settings.user_agents_dir, "named", ["echosrv"])
    model = ScriptedModel([tool_call("mcp__echosrv__shout", {"text": "x"}), quote_results])
    async with connected(settings, model=model) as client:
        untrusted = text_of(await client.call_tool("Task", task("named")))
    assert "not started: the project" in untrusted and "is not trusted" in untrusted and not log.exists()
    assert settings.claude_config_file is not None
    settings.claude_config_file.write_text(
        json.dumps({"projects": {str(settings.cwd): {"hasTrustDialogAccepted": True}}}), encoding="utf-8"
    )
    model = ScriptedModel([tool_call("mcp__echosrv__shout", {"text": "x"}), quote_results])
    async with connected(settings, model=model) as client:
        trusted = text_of(await client.call_tool("Task", task("named")))
    assert "OK: SHOUTED:X" in trusted


async def test_user_scope_servers_in_claude_json_need_no_trust_and_variables_expand(tmp_path: Path) -> None:
    log = tmp_path / "echo.log"
    settings = make_settings(tmp_path)
    assert settings.user_agents_dir is not None and settings.claude_config_file is not None
    allow_mcp_tools(settings)
    settings.claude_config_file.parent.mkdir(parents=True, exist_ok=True)
    server = echo_server(
        log, env={"ECHO_LOG": str(log), "GREETING": "${GREETING_SOURCE}", "FALLBACK": "${NOPE:-plan b}"}
    )
    settings.claude_config_file.write_text(json.dumps({"mcpServers": {"echosrv": server}}), encoding="utf-8")
    server_agent(settings.user_agents_dir, "named", ["echosrv", "missing"])
    model = ScriptedModel(
        [
            tool_call("mcp__echosrv__environment", {"name": "GREETING"}),
            tool_call("mcp__echosrv__environment", {"name": "FALLBACK"}),
            tool_call("mcp__echosrv__environment", {"name": "OPENAI_API_KEY"}),
            quote_results,
        ]
    )
    environ = {"GREETING_SOURCE": "hello from the server's environment", "OPENAI_API_KEY": "sk-should-not-leak"}
    async with connected(settings, model=model, environ={**environ, "PATH": os.environ["PATH"]}) as client:
        body = text_of(await client.call_tool("Task", task("named")))
    results = [r.content for r in last_results(model.requests[1])]
    assert results[0] == "hello from the server's environment"
    results = [r.content for r in last_results(model.requests[2])]
    assert results[0] == "plan b"
    assert "OK: <unset>" in body  # the provider key is not passed on to the agent's servers
    assert '[MCP server "missing" was not available to the agent: no server of that name' in body


@pytest.mark.skipif(
    not FILESYSTEM_SERVER.exists(), reason="npm server-filesystem is not installed in .ci-node/ (.ci/run installs it)"
)
async def test_a_real_npm_server_as_an_agents_server(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    assert settings.cwd is not None and settings.user_agents_dir is not None
    allow_mcp_tools(settings)
    (settings.cwd / "notes.txt").write_text("remember the milk\n", encoding="utf-8")
    files = {"command": str(FILESYSTEM_SERVER), "args": [str(settings.cwd)]}
    server_agent(settings.user_agents_dir, "librarian", [{"files": files}])
    model = ScriptedModel(
        [tool_call("mcp__files__read_text_file", {"path": str(settings.cwd / "notes.txt")}), quote_results]
    )
    async with connected(settings, model=model, environ={"PATH": os.environ["PATH"]}) as client:
        with anyio.fail_after(60):
            body = text_of(await client.call_tool("Task", task("librarian")))
    assert "OK: remember the milk" in body
    assert "mcp__files__write_file" in [tool.name for tool in model.requests[0].tools]


@asynccontextmanager
async def http_echo_server(token: str) -> AsyncGenerator[str]:
    """The echo server over Streamable HTTP on a free port, refusing requests without the bearer token."""
    import uvicorn

    from tests.fakes.mcp_echo_server import server

    inner = server.streamable_http_app()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != f"Bearer {token}".encode():
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"no"})
            return
        await inner(scope, receive, send)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    web = uvicorn.Server(uvicorn.Config(guarded, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as group:
        group.start_soon(web.serve, [sock])
        while not web.started:
            await anyio.lowlevel.checkpoint()
        yield f"http://127.0.0.1:{port}/mcp"
        web.should_exit = True


async def test_an_http_server_gets_its_headers_with_variables_expanded(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    assert settings.user_agents_dir is not None
    allow_mcp_tools(settings)
    model = ScriptedModel([tool_call("mcp__echosrv__shout", {"text": "over http"}), quote_results])
    async with http_echo_server("s3cret-token-value") as url:
        remote = {"type": "http", "url": url, "headers": {"Authorization": "Bearer ${ECHO_TOKEN}"}}
        server_agent(settings.user_agents_dir, "remote", [{"echosrv": remote}])
        async with connected(settings, model=model, environ={"ECHO_TOKEN": "s3cret-token-value"}) as client:
            with anyio.fail_after(30):
                body = text_of(await client.call_tool("Task", task("remote")))
    assert "OK: SHOUTED:OVER HTTP" in body
