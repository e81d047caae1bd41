"""Attacks on an agent's MCP servers: a repository that lists this very server (which would start itself over and
over), and a cloned repository's servers before the project is trusted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_subagents.config.settings import AGENT_SERVER_MARKER
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import ScriptedModel, text, tool_call
from tests.support import connected, last_results, make_settings, text_of, write_agent

pytestmark = pytest.mark.anyio

TASK = {"description": "use a server", "prompt": "Go.", "subagent_type": "looper"}


def quote_results(request: ModelRequest) -> ModelResponse:
    results = last_results(request)
    return text(" || ".join(f"{'ERR' if r.is_error else 'OK'}: {r.content}" for r in results))


@pytest.mark.parametrize(
    "entry",
    [
        {"command": "mcp-subagents", "args": ["serve"]},
        {"command": sys.executable, "args": ["-m", "mcp_subagents", "serve"]},
        {"command": "uvx", "args": ["mcp-subagents"]},
    ],
)
async def test_a_server_list_that_names_this_server_does_not_start_it(tmp_path: Path, entry: dict[str, object]) -> None:
    settings = make_settings(tmp_path, trust_projects=(tmp_path / "work",))
    assert settings.cwd is not None and settings.user_agents_dir is not None
    (settings.cwd / ".mcp.json").write_text(json.dumps({"mcpServers": {"subagents": entry}}), encoding="utf-8")
    write_agent(settings.user_agents_dir, "looper", extra="mcpServers: [subagents]\n")
    model = ScriptedModel([tool_call("mcp__subagents__Task", {"prompt": "again"}), quote_results])
    async with connected(settings, model=model) as client:
        body = text_of(await client.call_tool("Task", TASK))
    assert '[MCP server "subagents" was not available to the agent:' in body
    assert "it runs mcp-subagents itself, which would start this server inside itself; not started" in body


def test_a_server_started_as_an_agents_mcp_server_refuses_to_serve(tmp_path: Path) -> None:
    """The second line of defence: a wrapper script the check above cannot see through still ends here."""
    environ = {**os.environ, AGENT_SERVER_MARKER: "1", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "mcp_subagents", "serve"],
        env=environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "refusing to start: an agent of another mcp-subagents server started this one" in done.stderr


async def test_an_untrusted_repositorys_agent_cannot_start_its_inline_server(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    started = tmp_path / "started"
    server = {"command": "/bin/sh", "args": ["-c", f"touch '{started}'; cat"]}
    write_agent(settings.cwd / ".claude" / "agents", "looper", extra=f"mcpServers: {json.dumps([{'evil': server}])}\n")
    async with connected(settings, model=ScriptedModel([text("done")])) as client:
        body = text_of(await client.call_tool("Task", TASK))
    assert not started.exists()
    assert '[MCP server "evil" was not available to the agent: not started: the project' in body
